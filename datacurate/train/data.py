"""Read token shards (format: :mod:`datacurate.formats.shards`) and decide what every step trains on.

Each bucket's part files are memory-mapped (nothing is read until a batch asks for
it). Batches follow dataset decomposition (Pouransari et al. 2024): a step's batch
holds ``tokens_per_step // L`` sequences of one length ``L``, so every optimiser step
sees the same number of tokens whatever the bucket.

:class:`StepSampler` makes which sequences form step ``s`` a pure function of
``(seed, s)``; a worker of a data-parallel run takes its rank's contiguous slice of
that global batch. A resumed run therefore needs nothing but ``s`` to see exactly the
batches an uninterrupted run would, whatever the worker count. It combines domain
weights, a length curriculum and a held-out eval split (the README's "Training" gives
each). With weights ``w_d``, each domain keeps its own length distribution ``share[d, i]``
(its tokens in bucket ``i`` over its tokens), bucket ``i`` is worth ``P(i) = sum_d w_d
share[d, i]`` of the steps, and within a step of bucket ``i`` the domain of each sequence
is drawn with odds ``w_d share[d, i]``: the expected token share of domain ``d`` is
exactly ``w_d``, with no sequence repeated or dropped on disk to bake the mixture in.
``grow_p2`` is the paper's "Grow-P2" curriculum (its Table 2: cyclic Grow-P2 gave the
best average accuracy at 8 cycles).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

from datacurate.formats import storage
from datacurate.formats.shards import DOMAIN_DTYPE, read_manifest
from datacurate.configs.train import DataConfig


class ShardError(ValueError):
    """A shard set that cannot be trained on (reported as one line)."""


class ShardDataset:
    def __init__(self, path: str):
        self.path = path
        self.manifest = read_manifest(path)
        self.dtype = np.dtype(self.manifest["dtype"]).newbyteorder("<")
        self.domains: list[str] = self.manifest["domains"]
        self.tokenizer = self.manifest["tokenizer"]
        self._files: dict[int, list[dict[str, np.memmap]]] = {}  # per bucket, per file: its arrays by name
        self._starts: dict[int, np.ndarray] = {}
        for key, b in self.manifest["buckets"].items():
            seq_len = int(b["seq_len"])
            maps = []
            for f in b["files"]:
                if f["n"]:
                    maps.append({"tokens": self._open(f["tokens"], self.dtype, (f["n"], seq_len)),
                                 "domains": self._open(f["domains"], DOMAIN_DTYPE, (f["n"],))})
            if maps:
                self._files[seq_len] = maps
                self._starts[seq_len] = np.cumsum([0] + [m["tokens"].shape[0] for m in maps])

    def _open(self, rel: str, dtype: np.dtype, shape: tuple) -> np.memmap:
        """Memory-map a listed file after checking it exists with exactly the listed size."""
        full = os.path.join(self.path, rel)
        want = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if not os.path.isfile(full):
            raise ShardError(f"{self.path}: shard file {rel} listed in the manifest is missing")
        size = os.path.getsize(full)
        if size != want:
            raise ShardError(f"{self.path}: shard file {rel} has {size:,} bytes, the manifest says "
                             f"{want:,} (truncated or overwritten)")
        return np.memmap(full, dtype=dtype, mode="r", shape=shape)

    @property
    def seq_lens(self) -> list[int]:
        return sorted(self._files)

    def __len__(self) -> int:
        return sum(int(s[-1]) for s in self._starts.values())

    def num_sequences(self, seq_len: int) -> int:
        return int(self._starts[seq_len][-1])

    def all_domains(self, seq_len: int) -> np.ndarray:
        """Domain id of every sequence of the bucket (n,)."""
        return np.concatenate([m["domains"] for m in self._files[seq_len]]).astype(np.int64)

    def sequences(self, seq_len: int, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(tokens (n, seq_len), domain ids (n,)) of the bucket's sequences ``index`` (all if None)."""
        return tuple(self.gather(seq_len, index, ["tokens", "domains"]).values())

    def gather(self, seq_len: int, index, names: list[str]) -> dict[str, np.ndarray]:
        """Rows ``index`` of the bucket's arrays ``names``: "tokens", "domains" and side files
        by the name :meth:`attach` gave them (the RHO-1 reference losses: "refloss")."""
        starts = self._starts[seq_len]
        index = np.arange(starts[-1]) if index is None else np.asarray(index, dtype=np.int64)
        files = self._files[seq_len]
        out = {w: np.empty((len(index),) + files[0][w].shape[1:], dtype=files[0][w].dtype) for w in names}
        f = np.searchsorted(starts, index, side="right") - 1  # which file each sequence is in
        for j in np.unique(f):
            rows = np.flatnonzero(f == j)
            local = index[rows] - starts[j]
            for w, o in out.items():
                o[rows] = files[j][w][local]
        return out

    def attach(self, name: str, rel_of: dict[str, str], dtype: np.dtype, width: int) -> None:
        """Memory-map one side file per token file (``rel_of[tokens file] = side file``), each
        ``(n, seq_len + width)``, as every bucket's array ``name`` (see :meth:`gather`)."""
        for key, b in self.manifest["buckets"].items():
            seq_len = int(b["seq_len"])
            listed = [f for f in b["files"] if f["n"]]
            for i, f in enumerate(listed):
                if f["tokens"] not in rel_of:
                    raise ShardError(f"{self.path}: no side file for {f['tokens']}")
                side = self._open(rel_of[f["tokens"]], dtype, (f["n"], seq_len + width))
                self._files[seq_len][i][name] = side

    def plan(self, tokens_per_batch: int, seed: int = 0, drop_last: bool = True) -> list[tuple[int, np.ndarray]]:
        """One epoch as [(seq_len, sequence indices)], batches of ``tokens_per_batch // seq_len``
        sequences of one bucket each, shuffled (seeded) within and across buckets."""
        rng = np.random.default_rng(seed)
        batches = []
        for seq_len in self.seq_lens:
            size = tokens_per_batch // seq_len
            if size < 1:
                raise ValueError(f"tokens_per_batch {tokens_per_batch} is smaller than sequence length {seq_len}")
            order = rng.permutation(self.num_sequences(seq_len))
            end = len(order) - len(order) % size if drop_last else len(order)
            batches += [(seq_len, order[i:i + size]) for i in range(0, end, size)]
        return [batches[i] for i in rng.permutation(len(batches))]

    def batches(self, tokens_per_batch: int, seed: int = 0, drop_last: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (tokens (B, L), domain ids (B,)) with B x L = tokens_per_batch (see :meth:`plan`)."""
        for seq_len, index in self.plan(tokens_per_batch, seed, drop_last):
            yield self.sequences(seq_len, np.sort(index))


def load_domain_weights(spec, domains: list[str]) -> Optional[np.ndarray]:
    """``spec`` (mapping, JSON file path or None) -> normalised weights over ``domains``."""
    if spec is None:
        return None
    source = "data.domain_weights"
    if isinstance(spec, str):
        source = spec
        if not storage.isfile(spec):
            raise ShardError(f"data.domain_weights: file not found: {spec}")
        try:
            spec = json.loads(storage.read_text(spec))
        except ValueError as e:
            raise ShardError(f"data.domain_weights: {source} is not JSON ({e})") from None
        if isinstance(spec, dict) and isinstance(spec.get("domain_weights"), dict):
            spec = spec["domain_weights"]
    if not isinstance(spec, dict) or not spec:
        raise ShardError(f"{source}: domain weights must be a non-empty mapping {{domain: weight}}")
    unknown = sorted(set(spec) - set(domains))
    if unknown:
        raise ShardError(f"{source}: unknown domain {unknown[0]!r} (the shards hold: {', '.join(domains)})")
    for d, w in spec.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ShardError(f"{source}: weight of {d!r} must be a non-negative number, got {w!r}")
    w = np.array([float(spec.get(d, 0.0)) for d in domains])
    if w.sum() <= 0:
        raise ShardError(f"{source}: all domain weights are zero")
    return w / w.sum()


@dataclass
class Batch:
    seq_len: int
    index: np.ndarray  # (B,) sequence indices within the bucket (this rank's share)
    domains: np.ndarray  # (B,) domain ids


class StepSampler:
    """Step -> this rank's sequences; see the module docstring."""

    def __init__(self, ds: ShardDataset, cfg: DataConfig, steps: int, seed: int, rank: int = 0, world: int = 1):
        self.ds, self.cfg, self.steps, self.seed, self.rank, self.world = ds, cfg, steps, seed, rank, world
        self.lens = ds.seq_lens
        if not self.lens:
            raise ShardError(f"{ds.path}: the shard set holds no sequences")
        nd = len(ds.domains)
        for L in self.lens:
            if cfg.tokens_per_step < L:
                raise ShardError(f"data.tokens_per_step {cfg.tokens_per_step} is smaller than the longest bucket "
                                 f"({self.lens[-1]} tokens)")
            if (cfg.tokens_per_step // L) % world:
                raise ShardError(f"data.tokens_per_step {cfg.tokens_per_step}: {cfg.tokens_per_step // L} sequences "
                                 f"of length {L} do not split over {world} workers")
        self.eval_index, self.pools = self._split(nd)
        tokens = np.array([[len(self.pools[L][d]) * L for d in range(nd)] for L in self.lens], dtype=np.float64)  # (n, D)
        have = tokens.sum(0)
        w = load_domain_weights(cfg.domain_weights, ds.domains)
        if w is None:
            w = have / have.sum()
        elif np.any((w > 0) & (have == 0)):
            d = ds.domains[int(np.flatnonzero((w > 0) & (have == 0))[0])]
            raise ShardError(f"data.domain_weights: domain {d!r} has a weight but no training sequences")
        self.weights = w
        share = np.divide(tokens, have, out=np.zeros_like(tokens), where=have > 0)  # (n, D) per domain, over buckets
        joint = share * w  # (n, D)
        self.p_bucket = joint.sum(1)  # (n,)
        self.p_domain = np.divide(joint, self.p_bucket[:, None], out=np.zeros_like(joint),
                                  where=self.p_bucket[:, None] > 0)  # (n, D)
        self._schedule: dict[int, np.ndarray] = {}
        self._perm: dict[tuple, np.ndarray] = {}
        self._counts = self._plan_counts()  # (steps, D) sequences per domain per step (global batch)

    def _split(self, nd: int):
        """Per domain, a seeded fraction of its sequences (over all buckets) is held out."""
        rng = np.random.default_rng([self.cfg.split_seed, 0xE7A1])
        dom = {L: self.ds.all_domains(L) for L in self.lens}
        eval_index = {L: [] for L in self.lens}
        pools = {L: [None] * nd for L in self.lens}
        for d in range(nd):
            members = [(L, np.flatnonzero(dom[L] == d)) for L in self.lens]
            n = sum(len(m) for _, m in members)
            k = min(self.cfg.max_eval_sequences, round(n * self.cfg.eval_fraction))
            if self.cfg.eval_fraction > 0 and n >= 2:
                k = max(k, 1)
            held = np.zeros(n, dtype=bool)
            held[rng.permutation(n)[:k]] = True
            at = 0
            for L, m in members:
                h = held[at:at + len(m)]
                at += len(m)
                eval_index[L].append(m[h])
                pools[L][d] = m[~h]
        return {L: np.sort(np.concatenate(v)) for L, v in eval_index.items()}, pools

    def bucket_of(self, step: int) -> int:
        """Index into ``self.lens`` of the bucket step ``step`` draws from."""
        if self.cfg.curriculum == "uniform":
            return int(np.random.default_rng([self.seed, 1, step]).choice(len(self.lens), p=self.p_bucket))
        edges = np.linspace(0, max(self.steps, 1), self.cfg.cycles + 1).round().astype(np.int64)
        c = min(int(np.searchsorted(edges, step, side="right") - 1), self.cfg.cycles - 1)
        if c not in self._schedule:
            self._schedule = {c: grow_p2_cycle(self.p_bucket, int(edges[c + 1] - edges[c]), self.seed, c)}
        sched = self._schedule[c]
        return int(sched[min(step - edges[c], len(sched) - 1)])

    def _plan_counts(self) -> np.ndarray:
        buckets = np.array([self.bucket_of(s) for s in range(self.steps)], dtype=np.int64)
        self.buckets = buckets
        size = np.array([self.cfg.tokens_per_step // L for L in self.lens])[buckets]
        rng = np.random.default_rng([self.seed, 2])
        counts = rng.multinomial(size, self.p_domain[buckets]) if self.steps else np.zeros((0, len(self.ds.domains)), int)
        self._before = np.zeros_like(counts)
        for b in range(len(self.lens)):
            rows = np.flatnonzero(buckets == b)
            self._before[rows] = np.cumsum(counts[rows], axis=0) - counts[rows]
        return counts

    def batch(self, step: int) -> Batch:
        """The global batch of ``step`` in domain order, then this rank's contiguous slice."""
        if not 0 <= step < self.steps:
            raise IndexError(f"step {step} outside 0..{self.steps - 1}")
        L = self.lens[int(self.buckets[step])]
        before = self._before[step]  # sequences already drawn per domain from this bucket
        index, doms = [], []
        for d, c in enumerate(self._counts[step]):
            if c:
                index.append(self._draw(L, d, int(before[d]), int(c)))
                doms.append(np.full(c, d))
        index, doms = np.concatenate(index), np.concatenate(doms)
        per = len(index) // self.world
        sl = slice(self.rank * per, (self.rank + 1) * per)
        return Batch(L, index[sl], doms[sl])

    def _draw(self, L: int, d: int, start: int, count: int) -> np.ndarray:
        pool = self.pools[L][d]
        pos = np.arange(start, start + count)
        out = np.empty(count, dtype=np.int64)
        for epoch in np.unique(pos // len(pool)):
            key = (L, d, int(epoch))
            if key not in self._perm:
                self._perm[key] = np.random.default_rng([self.seed, 3, L, d, int(epoch)]).permutation(pool)
            m = pos // len(pool) == epoch
            out[m] = self._perm[key][pos[m] % len(pool)]
        return out


def grow_p2_cycle(p_bucket: np.ndarray, n_steps: int, seed: int, cycle: int) -> np.ndarray:
    """One Grow-P2 cycle: bucket index per step. Quotas ``p_bucket * n_steps`` (largest
    remainder); the next bucket is drawn among those with quota left with odds
    ``remaining_i * 2^(n-1-i)``."""
    n = len(p_bucket)
    raw = p_bucket * n_steps
    quota = np.floor(raw).astype(np.int64)
    quota[np.argsort(-(raw - quota), kind="stable")[: n_steps - quota.sum()]] += 1
    bias = 2.0 ** (n - 1 - np.arange(n))
    rng = np.random.default_rng([seed, 4, cycle])
    out = np.empty(n_steps, dtype=np.int64)
    for s in range(n_steps):
        odds = quota * bias
        i = int(rng.choice(n, p=odds / odds.sum()))
        out[s] = i
        quota[i] -= 1
    return out


class DeviceBatches:
    """Step ``s``'s tokens and side arrays on the training device, made while step ``s - 1``
    runs (nanoGPT's overlap): :meth:`prefetch` gathers the memory-mapped rows, pins them
    (CUDA) and queues a ``non_blocking`` copy behind the kernels already launched, so the
    CPU's gather and the host-to-device copy hide under the GPU's work; :meth:`get` hands
    the prepared step over (or makes it now when it was not prefetched, e.g. after resume).
    What a step holds depends on ``step`` alone, so prefetching changes no result."""

    def __init__(self, ds: ShardDataset, sampler: StepSampler, sides: tuple[str, ...], device: str):
        import torch

        self.torch, self.ds, self.sampler, self.sides, self.device = torch, ds, sampler, sides, device
        self.pin = device == "cuda"
        self._next: Optional[tuple] = None

    def _load(self, step: int):
        torch = self.torch
        batch = self.sampler.batch(step)
        arrays = self.ds.gather(batch.seq_len, batch.index, ["tokens", *self.sides])
        host = {"tokens": torch.from_numpy(arrays.pop("tokens").astype(np.int64))}  # (B, L)
        host.update({k: torch.from_numpy(v.astype(np.float32)) for k, v in arrays.items()})  # (B, L-1) each
        if self.pin:
            host = {k: v.pin_memory() for k, v in host.items()}
        on = {k: v.to(self.device, non_blocking=self.pin) for k, v in host.items()}
        return step, batch, on.pop("tokens"), on

    def prefetch(self, step: int) -> None:
        """Prepare ``step`` (no-op past the last step)."""
        self._next = self._load(step) if step < self.sampler.steps else None

    def get(self, step: int) -> tuple[Batch, "torch.Tensor", dict]:  # noqa: F821
        """(batch, tokens (B, L) on the device, {side name: (B, L-1) float32 on the device})."""
        ready, self._next = self._next, None
        _, batch, tokens, side = ready if ready is not None and ready[0] == step else self._load(step)
        return batch, tokens, side
