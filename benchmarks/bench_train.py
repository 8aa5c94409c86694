"""Training loop speed: datacurate's training step side by side with a plain nanoGPT-shaped
step, and what RHO-1, DoReMi and the grow_p2 length curriculum cost or save per step.

Five races, each run in one process with its arms interleaved step by step (A, B, A, B ...)
after warm-up steps, so background load and clock changes hit every arm alike; medians of
per-step (or per-pass) tokens/s and their ratios are reported.

1. **step throughput** at fixed sequence lengths. *baseline*: written here, shaped like
   nanoGPT's ``train.py``: ``logits = model(x)`` then ``F.cross_entropy(logits.float()
   .view(-1, V), y.view(-1))`` outside the model, fixed-shape random batches already on the
   device (no data loader), AdamW with decay on matrices (fused on GPU), grad clip 1.0;
   ``torch.compile`` and bf16 autocast on GPU. *ours*: exactly the calls
   :func:`datacurate.train.loop.train` makes per step: ``StepSampler.batch`` ->
   ``ShardDataset.gather`` (memory-mapped shards) -> ``model(x, y)`` (per-token fp32
   cross-entropy inside the compiled forward) -> ``PlainObjective`` mean -> backward ->
   clip -> AdamW (``make_optimizer``). Both arms use datacurate's ``GPT`` class, same
   shape, same vocabulary, same initialisation: the race compares the loops, not two
   model implementations. Throughput counts *predicted* tokens: ``B x T`` for the
   baseline, ``B x (L - 1)`` for ours (a shard sequence of ``L`` tokens gives ``L - 1``
   targets; the loop's own ``tokens_per_s`` counts ``B x L``).
2. **RHO-1 step cost** (``Rho1Objective``, ratio 0.6): plain vs reference losses from a
   frozen forward pass every step vs from the ``score_tokens`` sidecar; same model.
3. **DoReMi proxy step cost** (``GroupDRO``): reference on the fly vs sidecar, vs plain.
4. **grow_p2 vs packing**: a run whose step ``s`` takes the bucket the grow_p2 curriculum
   gives it (all buckets, ``--grow-steps`` steps in ``--grow-cycles`` cycles, the whole
   schedule per pass) vs every step at the longest bucket; tokens/s over a pass.

5. **the loss head** (``--races fused``, :class:`FusedRace`): ``train.loss`` plain vs fused
   (chunked torch, or Liger Kernel's on CUDA) at ``--fused-presets`` (124M and 350M on GPU)
   and ``--fused-lengths``, over a ``--micro-batch`` sweep (what the freed memory buys), with
   peak memory per step and a same-seed loss-curve check. ``--races`` picks races.

MFU (GPU) = (6N + 12 * n_layer * d * T) flops per token (:meth:`GPT.flops_per_token`, N
without the position table) x tokens/s / 989.4 TFLOP/s (H100/H200 dense bf16).

Data: ``--shards DIR`` (default ``out/sample/shards`` on CPU: the sample corpus, 8k BPE,
buckets 64..2048), copied to a temporary folder because the sidecar is written next to
the shards; or ``--synthetic`` (the default on GPU, where a 4096 bucket is needed):
random tokens of ``--vocab`` ids written in datacurate's shard format, buckets
``--buckets``, each bucket's share of tokens as in the sample corpus. The reference is a
freshly initialised GPT of the same shape (a reference's weights do not change its cost).

Run on CPU (about 8 minutes, one thread, on a shared 2-core machine)::

    .venv/bin/python benchmarks/bench_train.py --device cpu

and on one H100/H200 (writes ``results/train_cuda.json``)::

    python benchmarks/bench_train.py --device cuda
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from datacurate.formats import shards  # noqa: E402
from datacurate.train import checkpoint  # noqa: E402
from datacurate.train.data import ShardDataset, StepSampler  # noqa: E402
from datacurate.train.doremi import GroupDRO  # noqa: E402
from datacurate.train.fused_loss import liger_available  # noqa: E402
from datacurate.train.fused_loss import resolve as resolve_loss  # noqa: E402
from datacurate.train.loop import lr_at, make_optimizer  # noqa: E402
from datacurate.train.model import GPT, compile_model  # noqa: E402
from datacurate.train.objective import Part, PlainObjective  # noqa: E402
from datacurate.train.rho1 import Reference, Rho1Objective, score_tokens  # noqa: E402
from datacurate.configs.train import DataConfig, ModelConfig, TrainConfig  # noqa: E402

PEAK_BF16 = 989.4e12  # H100 / H200 SXM dense bf16
RACES = ("throughput", "objectives", "grow_p2", "fused")
# token share of each bucket in the sample corpus (64 .. 2048); synthetic shards take the last n
SAMPLE_SHARES = [0.036, 0.081, 0.143, 0.247, 0.284, 0.208]
DEFAULTS = {  # per device: preset, tokens per step, race-1 lengths, synthetic buckets and vocab, race-2/3 length
    "cpu": dict(preset="tiny", tokens=8192, lengths=[64, 256, 1024, 2048], buckets=[64, 128, 256, 512, 1024, 2048],
                vocab=8192, objective_len=256, repeats=8, warmup=2, grow_steps=16, grow_cycles=2, passes=3, threads=1,
                fused_presets=["tiny"], fused_lengths=[256, 1024], micro_batch=[2, 8, 32], curve_steps=4),
    "cuda": dict(preset="124m", tokens=65536, lengths=[256, 1024, 4096], buckets=[256, 512, 1024, 2048, 4096],
                 vocab=50304, objective_len=1024, repeats=20, warmup=3, grow_steps=40, grow_cycles=2, passes=3, threads=None,
                 fused_presets=["124m", "350m"], fused_lengths=[1024, 4096], micro_batch=[4, 8, 16, 32, 64], curve_steps=8),
}


def synthetic_shards(root: str, buckets: list[int], vocab: int, tokens_per_step: int, seed: int = 0) -> None:
    """Random tokens in datacurate's shard format: 4 domains, about 32 steps' worth of tokens,
    each bucket's token share as in the sample corpus, at least two batches per bucket."""
    rng = np.random.default_rng(seed)
    share = np.array(SAMPLE_SHARES[-len(buckets):])
    share /= share.sum()
    domains = ["a", "b", "c", "d"]
    pieces = []
    for L, s in zip(buckets, share):
        n = max(2 * (tokens_per_step // L), round(s * 32 * tokens_per_step / L))
        tokens = rng.integers(0, vocab, size=(n, L), dtype=np.int64)
        piece = shards.write_piece(root, "bench", tokens, np.arange(n) % len(domains), np.dtype("<u4"))
        pieces.append({**piece, "seq_len": L})
    tok = {"vocab_size": vocab, "sha256": f"synthetic-{vocab}", "eos_id": 0}
    shards.write_manifest(root, shards.build_manifest(pieces, dtype="<u4", tokenizer=tok, domains=domains))


class Bench:
    def __init__(self, args, ds: ShardDataset, ref_path: str):
        self.args, self.ds, self.device = args, ds, args.device
        cuda = self.device == "cuda"
        self.autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else contextlib.nullcontext
        self.vocab = int(ds.tokenizer["vocab_size"])
        self.shape = ModelConfig(preset=args.preset).resolve(self.vocab, max(ds.seq_lens))
        self.cfg = TrainConfig(shards=ds.path, output="unused", steps=10**6)
        self.cfg.model.preset = args.preset
        self.cfg.data = DataConfig(tokens_per_step=args.tokens_per_step)
        # ours: the loop's model, optimiser and compiled forward, shared by every objective
        torch.manual_seed(0)
        self.model = GPT(self.shape).to(self.device)
        self.opt = make_optimizer(self.model, self.cfg, self.device)
        self.fwd = torch.compile(self.model, dynamic=False) if cuda else self.model  # as the loop
        # baseline: same class, shape and init; nanoGPT's optimiser set-up
        torch.manual_seed(0)
        self.base = GPT(self.shape).to(self.device)
        decay = [p for p in self.base.parameters() if p.dim() >= 2]
        other = [p for p in self.base.parameters() if p.dim() < 2]
        self.base_opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                                          lr=self.cfg.lr, betas=(0.9, 0.95), fused=cuda)
        self.base_fwd = torch.compile(self.base) if cuda else self.base
        self.base_batches: dict[int, list] = {}
        # fixed-length steps: the steps of a long run whose grow_p2 bucket is L
        self.sampler = StepSampler(ds, self.cfg.data, 20000, seed=0)
        self.steps_at = {L: iter(np.flatnonzero(self.sampler.buckets == i).tolist()) for i, L in enumerate(ds.seq_lens)}
        self.objectives = {
            "plain": PlainObjective(),
            "rho1_on_the_fly": Rho1Objective(Reference(ref_path, ds, self.device, "off", self.autocast, cuda), 0.6),
            "rho1_sidecar": Rho1Objective(Reference(ref_path, ds, self.device, "require", self.autocast, cuda), 0.6),
            "doremi_on_the_fly": GroupDRO(ds, self.device, self.autocast, ref_path, 1.0, 1e-3, "off", None, cuda),
            "doremi_sidecar": GroupDRO(ds, self.device, self.autocast, ref_path, 1.0, 1e-3, "require", None, cuda),
        }
        assert not self.objectives["rho1_on_the_fly"].sides and self.objectives["rho1_sidecar"].sides
        assert not self.objectives["doremi_on_the_fly"].sides and self.objectives["doremi_sidecar"].sides
        self.n = 0  # steps taken by ours (drives the learning-rate schedule, as in the loop)
        # the loss heads of race 1's ``ours`` arms (plain first), and race 4's head
        self.heads = list(dict.fromkeys(["plain"] + [resolve_loss(h, self.device) if h == "fused" else h
                                                     for h in args.ours_heads]))
        if "liger" in self.heads and not liger_available():
            sys.exit("bench_train: --ours-heads liger, but liger-kernel is not installed (the [gpu] extra)")
        self.grow_head = "plain"

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def baseline_step(self, T: int) -> int:
        """nanoGPT's inner loop at block size T on pre-made random batches; predicted tokens."""
        if T not in self.base_batches:
            B = self.args.tokens_per_step // T
            g = torch.Generator(device="cpu").manual_seed(T)
            self.base_batches[T] = [torch.randint(0, self.vocab, (B, T + 1), generator=g).to(self.device)
                                    for _ in range(4)]
        xy = self.base_batches[T][self.n % 4]
        x, y = xy[:, :-1], xy[:, 1:]  # (B, T) each
        for g in self.base_opt.param_groups:
            g["lr"] = lr_at(self.n, self.cfg)
        with self.autocast():
            logits = self.base_fwd(x)  # (B, T, V)
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.base.parameters(), 1.0)
        self.base_opt.step()
        self.base_opt.zero_grad(set_to_none=True)
        loss.item()
        return x.numel()

    def ours_step(self, objective: str, step: int, head: str = "plain") -> int:
        """The body of train()'s loop for ``step`` (grad_accum 1, one worker) with the loss head
        ``head`` (``fused_loss.resolve``'s names); predicted tokens."""
        obj, ds = self.objectives[objective], self.ds
        self.model.loss = head
        for g in self.opt.param_groups:
            g["lr"] = lr_at(self.n, self.cfg)
        batch = self.sampler_for_step.batch(step)
        arrays = ds.gather(batch.seq_len, batch.index, ["tokens", *obj.sides])
        tokens = torch.from_numpy(arrays.pop("tokens").astype(np.int64)).to(self.device)  # (B, L)
        part = Part(tokens, {k: v.astype(np.float32) for k, v in arrays.items()}, batch.domains, 1.0)
        obj.begin_step([part], self.fwd)
        with self.autocast():
            losses = self.fwd(tokens[:, :-1], tokens[:, 1:])  # (B, L-1)
        obj.loss(losses, part).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        obj.end_step(self.n + 1)
        losses.detach().mean().item()
        self.n += 1
        return losses.numel()

    def ours_at(self, objective: str, L: int, head: str = "plain") -> int:
        self.sampler_for_step = self.sampler
        return self.ours_step(objective, next(self.steps_at[L]), head)

    def timed(self, fn) -> tuple[float, int]:
        self.sync()
        t0 = time.perf_counter()
        n = fn()
        self.sync()
        return time.perf_counter() - t0, n

    def race(self, arms: dict, warmup: int, repeats: int) -> dict:
        """Interleave the arms' steps; median tokens/s and step time of each arm."""
        for _ in range(warmup):
            for fn in arms.values():
                fn()
        rows = {name: [] for name in arms}
        peak = {name: 0 for name in arms}  # bytes of GPU memory at the step's high point (CUDA)
        names = list(arms)
        for r in range(repeats):  # A B C, B C A, C A B ...: every arm takes every place in turn
            for name in names[r % len(names):] + names[:r % len(names)]:
                if self.device == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                rows[name].append(self.timed(arms[name]))
                if self.device == "cuda":
                    peak[name] = max(peak[name], torch.cuda.max_memory_allocated())
        return {name: {"median_tokens_per_s": statistics.median(n / dt for dt, n in r),
                       "median_step_s": statistics.median(dt for dt, _ in r), "steps": len(r),
                       "tokens_per_step": r[0][1], "step_s": [round(dt, 4) for dt, _ in r],
                       "peak_memory_gib": round(peak[name] / 2**30, 2) if self.device == "cuda" else None}
                for name, r in rows.items()}

    def mfu(self, tokens_per_s: float, T: int) -> float | None:
        return self.model.flops_per_token(T) * tokens_per_s / PEAK_BF16 if self.device == "cuda" else None

    # ---- the four races
    def throughput(self, L: int) -> dict:
        """Baseline vs ours with the plain head (``ours``) and with each other head of
        ``--ours-heads`` (``ours_<head>``), all interleaved in one race."""
        arms = {"baseline": lambda: self.baseline_step(L)}
        for h in self.heads:
            arms[self.arm(h)] = (lambda h=h: self.ours_at("plain", L, h))
        arms = self.race(arms, self.args.warmup, self.args.repeats)
        for a in arms.values():
            a["mfu"] = self.mfu(a["median_tokens_per_s"], L)
        base = arms["baseline"]["median_tokens_per_s"]
        return {"seq_len": L, "arms": arms, "heads": {self.arm(h): h for h in self.heads},
                "ratio_ours_over_baseline": arms["ours"]["median_tokens_per_s"] / base,
                "ratio_over_baseline": {k: v["median_tokens_per_s"] / base for k, v in arms.items() if k != "baseline"}}

    @staticmethod
    def arm(head: str) -> str:
        return "ours" if head == "plain" else f"ours_{head}"

    def objective_cost(self, L: int) -> dict:
        arms = self.race({name: (lambda n=name: self.ours_at(n, L)) for name in self.objectives},
                         self.args.warmup, self.args.repeats)
        plain = arms["plain"]["median_step_s"]
        return {"seq_len": L, "arms": arms,
                "step_time_over_plain": {k: v["median_step_s"] / plain for k, v in arms.items() if k != "plain"}}

    def grow_vs_packed(self) -> dict:
        a = self.args
        grow = StepSampler(self.ds, DataConfig(tokens_per_step=a.tokens_per_step, curriculum="grow_p2",
                                               cycles=a.grow_cycles), a.grow_steps, seed=0)
        longest = max(self.ds.seq_lens)
        head = self.grow_head
        for L in self.ds.seq_lens:  # warm-up (and, on GPU, compile) every bucket length
            for _ in range(a.warmup):
                self.ours_at("plain", L, head)

        def grow_step(s: int) -> int:
            self.sampler_for_step = grow
            return self.ours_step("plain", s, head)

        passes = {"grow_p2": [], "packed_longest": []}
        for p in range(a.passes):
            acc = {k: [0.0, 0] for k in passes}
            for s in range(a.grow_steps):
                pair = [("grow_p2", lambda: grow_step(s)), ("packed_longest", lambda: self.ours_at("plain", longest, head))]
                for name, fn in (pair if (s + p) % 2 == 0 else pair[::-1]):
                    dt, n = self.timed(fn)
                    acc[name][0] += dt
                    acc[name][1] += n
            for k, (dt, n) in acc.items():
                passes[k].append(n / dt)
        lens = [self.ds.seq_lens[int(b)] for b in grow.buckets]
        arms = {k: {"median_tokens_per_s": statistics.median(v), "passes": len(v), "steps_per_pass": a.grow_steps,
                    "pass_tokens_per_s": [round(x, 1) for x in v]}
                for k, v in passes.items()}
        return {"buckets": self.ds.seq_lens, "cycles": a.grow_cycles, "loss_head": head, "grow_schedule": lens,
                "steps_per_bucket": {L: lens.count(L) for L in self.ds.seq_lens}, "arms": arms,
                "ratio_grow_over_packed": arms["grow_p2"]["median_tokens_per_s"] / arms["packed_longest"]["median_tokens_per_s"]}


class PeakMemory:
    """Time and peak memory of a call. Peak = bytes held at the call's high point above what
    was held before it. CUDA: the caching allocator's ``max_memory_allocated``. CPU: the
    process's resident high-water mark (VmHWM, reset through ``/proc/self/clear_refs``) while
    glibc gives every block of 128 KiB or more back at free (``mallopt(M_MMAP_THRESHOLD)``,
    so resident memory follows the live tensors); that costs page faults, so on CPU the
    memory step is a step of its own, and timed steps run with the threshold at glibc's
    ceiling (32 MiB)."""

    MMAP_THRESHOLD = -3  # mallopt's M_MMAP_THRESHOLD

    def __init__(self, device: str):
        self.device = device
        if device == "cpu":
            import ctypes

            self.libc = ctypes.CDLL("libc.so.6")
            self.libc.mallopt(self.MMAP_THRESHOLD, 32 << 20)

    @staticmethod
    def _status(key: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith(key))

    def time(self, fn) -> tuple[float, float]:
        """``(seconds, CPU seconds of this process)`` of ``fn()``."""
        if self.device == "cuda":
            torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        if self.device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0, time.process_time() - c0

    def peak(self, fn) -> int:
        """Peak bytes of ``fn()`` above what was held before it."""
        import gc

        gc.collect()
        if self.device == "cuda":
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            fn()
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated() - base
        self.libc.mallopt(self.MMAP_THRESHOLD, 128 << 10)
        self.libc.malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS
        base = self._status("VmRSS")
        fn()
        peak = self._status("VmHWM") - base
        self.libc.mallopt(self.MMAP_THRESHOLD, 32 << 20)
        return peak


class FusedRace:
    """Race 5: the loss head (``train.loss``) on the loop's step, one model and optimiser per
    (preset, length), random tokens; ``--fused-heads``: ``plain`` (full fp32 logits), ``chunked``
    (our fused torch head), ``liger`` (Liger Kernel's) or ``fused`` (what ``train.loss: fused``
    picks on the device: liger on CUDA when installed, else chunked); default plain and chunked
    on CPU, plain and fused on CUDA (each head compiles a graph per micro-batch size). Every micro-batch size of the sweep
    (sequences per forward; the step's tokens stay ``--tokens-per-step``, split as the loop's
    ``grad_accum`` splits them) with the heads interleaved step by step; a head that runs out
    of memory at a size is not tried at larger ones. Best = the micro-batch of the highest
    tokens/s (on CPU: tokens per CPU-second, one torch thread). Plus the correctness check: the same seed trained ``--curve-steps`` steps with
    each head from one initialisation gives the same loss curve (bf16 autocast on CUDA:
    within 3e-2 relative, as the gpu tests' CPU-vs-CUDA check; fp32: 1e-4)."""

    def __init__(self, args):
        self.args, self.device = args, args.device
        cuda = self.device == "cuda"
        self.autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else contextlib.nullcontext
        want = args.fused_heads or (["plain", "fused"] if cuda else ["plain", "chunked"])
        if "liger" in want and not liger_available():
            sys.exit("bench_train: --fused-heads liger, but liger-kernel is not installed (the [gpu] extra)")
        self.heads = list(dict.fromkeys(resolve_loss("fused", self.device) if h == "fused" else h for h in want))
        if self.heads[0] != "plain":
            sys.exit("bench_train: --fused-heads starts with plain (the heads are compared with it)")
        self.meter = PeakMemory(self.device)
        # on a shared CPU wall time swings with the load, CPU seconds do not (one torch thread)
        self.rank_by = "tokens_per_s" if cuda else "tokens_per_cpu_s"

    def build(self, preset: str, L: int, seed: int = 0):
        shape = ModelConfig(preset=preset).resolve(self.args.vocab, max(self.args.fused_lengths))
        cfg = TrainConfig(shards="unused", output="unused", steps=10**6)
        cfg.model.preset = preset
        torch.manual_seed(seed)
        model = GPT(shape).to(self.device)
        fwd = compile_model(model) if self.device == "cuda" else model  # one graph per (head, shape), as the loop
        return model, fwd, make_optimizer(model, cfg, self.device), cfg

    def batch(self, B: int, L: int, i: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(1000 * L + i)
        return torch.randint(0, self.args.vocab, (B, L + 1), generator=g).to(self.device)  # (B, L+1)

    def step(self, model, fwd, opt, cfg, tokens: torch.Tensor, mb: int, head: str, n: int) -> float:
        """The loop's step body with ceil(B / mb) micro-batches; returns the step's mean loss."""
        model.loss = head
        for g in opt.param_groups:
            g["lr"] = lr_at(n, cfg)
        obj, total = PlainObjective(), torch.zeros((), device=tokens.device)
        for r in np.array_split(np.arange(len(tokens)), math.ceil(len(tokens) / mb)):
            part = Part(tokens[r], {}, np.zeros(len(r), np.int64), len(r) / len(tokens))
            with self.autocast():
                losses = fwd(part.tokens[:, :-1], part.tokens[:, 1:])  # (b, L)
            obj.loss(losses, part).backward()
            total += losses.detach().mean() * part.share
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total.item()

    def sweep(self, preset: str, L: int) -> dict:
        a = self.args
        model, fwd, opt, cfg = self.build(preset, L)
        B = max(1, a.tokens_per_step // L)
        sizes = sorted({min(m, B) for m in a.micro_batch})
        rows, n, fits = [], 0, {h: True for h in self.heads}
        for mb in sizes:
            arms = {h: {"step_s": [], "cpu_s": [], "peak": 0} for h in self.heads if fits[h]}
            for r in range(a.warmup + a.repeats + 1):  # warm-up, timed, then one step for the peak memory
                order = list(arms)[r % len(arms):] + list(arms)[:r % len(arms)] if arms else []
                for h in order:
                    if not fits[h]:
                        continue
                    tokens = self.batch(B, L, n % 4)
                    fn = (lambda: self.step(model, fwd, opt, cfg, tokens, mb, h, n))
                    try:
                        if r == a.warmup + a.repeats:
                            arms[h]["peak"] = self.meter.peak(fn)
                        elif r >= a.warmup:
                            dt, cpu = self.meter.time(fn)
                            arms[h]["step_s"].append(dt)
                            arms[h]["cpu_s"].append(cpu)
                        else:
                            fn()
                    except torch.OutOfMemoryError:
                        fits[h] = False
                        opt.zero_grad(set_to_none=True)
                        torch.cuda.empty_cache()
                        arms[h]["oom"] = True
                        continue
                    n += 1
            for h, v in arms.items():
                row = {"head": h, "micro_batch": mb, "grad_accum": math.ceil(B / mb), "oom": v.get("oom", False)}
                if v["step_s"] and not row["oom"]:
                    s = statistics.median(v["step_s"])
                    tps = B * L / s
                    row.update(median_step_s=round(s, 4), tokens_per_s=round(tps, 1),
                               median_step_cpu_s=round(statistics.median(v["cpu_s"]), 4),
                               tokens_per_cpu_s=round(B * L / statistics.median(v["cpu_s"]), 1),
                               peak_memory_gib=round(v["peak"] / 2**30, 3),
                               mfu=model.flops_per_token(L) * tps / PEAK_BF16 if self.device == "cuda" else None)
                rows.append(row)
        best = {}
        for h in self.heads:
            ok = [r for r in rows if r["head"] == h and "tokens_per_s" in r]
            best[h] = max(ok, key=lambda r: r[self.rank_by]) if ok else None
        fitted = {h: max([r["micro_batch"] for r in rows if r["head"] == h and "tokens_per_s" in r], default=0)
                  for h in self.heads}
        out = {"preset": preset, "seq_len": L, "sequences_per_step": B, "params": model.num_params(), "sweep": rows,
               "best": best, "largest_micro_batch_that_fits": fitted}
        if best.get("plain"):
            out["best_over_plain"] = {h: b[self.rank_by] / best["plain"][self.rank_by]
                                      for h, b in best.items() if b and h != "plain"}
        return out

    def curves(self, preset: str, L: int) -> dict:
        """The same seed, initialisation and batches through each head: per-step losses."""
        a = self.args
        B = max(1, a.tokens_per_step // L)
        mb = min(B, min(a.micro_batch))
        out = {}
        for h in self.heads:
            model, fwd, opt, cfg = self.build(preset, L, seed=a.curve_seed)
            out[h] = [self.step(model, fwd, opt, cfg, self.batch(B, L, i), mb, h, i) for i in range(a.curve_steps)]
            del model, fwd, opt
        tol = 3e-2 if self.device == "cuda" else 1e-4
        diff = {h: max(abs(x - y) / abs(y) for x, y in zip(out[h], out["plain"])) for h in self.heads if h != "plain"}
        return {"preset": preset, "seq_len": L, "micro_batch": mb, "steps": a.curve_steps, "losses": out,
                "max_rel_diff_vs_plain": diff, "tolerance": tol, "ok": all(d <= tol for d in diff.values())}

    def run(self) -> dict:
        a = self.args
        res = {"heads": self.heads, "micro_batch_sweep": a.micro_batch, "vocab": a.vocab, "ranked_by": self.rank_by,
               "tokens_per_step": a.tokens_per_step, "compile": self.device == "cuda",
               "memory": "max_memory_allocated above the step's start" if self.device == "cuda" else
               "resident high-water mark above the step's start (VmHWM; glibc unmaps blocks >= 128 KiB at free), "
               "in a step of its own after the timed ones",
               "runs": []}
        if a.curve_steps:
            res["curves"] = self.curves(a.fused_presets[0], min(a.fused_lengths))
            print(f"[fused] curves {a.curve_steps} steps: max rel diff vs plain {res['curves']['max_rel_diff_vs_plain']} "
                  f"(tol {res['curves']['tolerance']})", file=sys.stderr)
        for preset in a.fused_presets:
            for L in a.fused_lengths:
                r = self.sweep(preset, L)
                if self.device == "cuda":
                    torch.cuda.empty_cache()  # the sweep's model and optimiser are gone
                res["runs"].append(r)
                print(f"[fused] {preset} L={L}: " + "; ".join(
                    f"{h} best mb {b['micro_batch']} {b['tokens_per_s']:,.0f} tok/s peak {b['peak_memory_gib']} GiB"
                    if b else f"{h} fits no micro-batch" for h, b in r["best"].items()), file=sys.stderr)
        return res


def loop_races(args) -> tuple[dict, dict]:
    """Races 1-4 on a shard set (synthetic or given): (results, set-up)."""
    synthetic = args.synthetic or (args.device == "cuda" and not args.shards)
    with tempfile.TemporaryDirectory(prefix="bench_train_") as tmp:
        shard_dir = os.path.join(tmp, "shards")
        if synthetic:
            synthetic_shards(shard_dir, args.buckets, args.vocab, args.tokens_per_step)
            source = f"synthetic: random tokens, vocab {args.vocab}, buckets {args.buckets}"
        else:
            src = args.shards or str(ROOT / "out" / "sample" / "shards")
            shutil.copytree(src, shard_dir, ignore=shutil.ignore_patterns("*.refloss.bin"))
            m = shards.read_manifest(shard_dir)
            m.pop("rho1_reference", None)
            shards.write_manifest(shard_dir, m)
            source = src
        ds = ShardDataset(shard_dir)
        missing = [L for L in args.lengths + [args.objective_len] if L not in ds.seq_lens]
        if missing:
            sys.exit(f"bench_train: lengths {missing} are not buckets of the shards ({ds.seq_lens})")
        shape = ModelConfig(preset=args.preset).resolve(int(ds.tokenizer["vocab_size"]), max(ds.seq_lens))
        torch.manual_seed(1)
        ref_dir = os.path.join(tmp, "reference")
        checkpoint.save(ref_dir, 0, GPT(shape), None, {"shape": asdict(shape), "tokenizer_sha256": ds.tokenizer["sha256"]})
        t0 = time.perf_counter()
        score_tokens(ref_dir, shard_dir, args.device, log=lambda m: print(m, file=sys.stderr))
        score_s = time.perf_counter() - t0
        ds = ShardDataset(shard_dir)  # re-read: the manifest now lists the sidecar
        bench = Bench(args, ds, ref_dir)
        print(f"[bench_train] {args.device}, {args.preset} ({bench.model.num_params():,} params), vocab {bench.vocab}, "
              f"{args.tokens_per_step:,} tokens/step, buckets {ds.seq_lens}", file=sys.stderr)

        result = {"throughput": [], "objectives": None, "grow_p2": None}
        for L in args.lengths if "throughput" in args.races else []:
            r = bench.throughput(L)
            result["throughput"].append(r)
            print(f"[throughput] L={L}: baseline {r['arms']['baseline']['median_tokens_per_s']:,.0f} tok/s, " + ", ".join(
                f"{k} {r['arms'][k]['median_tokens_per_s']:,.0f} tok/s ({x:.3f}x)" for k, x in r["ratio_over_baseline"].items()),
                file=sys.stderr)
        if args.grow_head == "best" and result["throughput"]:  # the head fastest at the longest length raced
            last = max(result["throughput"], key=lambda r: r["seq_len"])
            fastest = max(last["heads"], key=lambda k: last["arms"][k]["median_tokens_per_s"])
            bench.grow_head = last["heads"][fastest]
        elif args.grow_head != "best":
            bench.grow_head = resolve_loss(args.grow_head, args.device) if args.grow_head == "fused" else args.grow_head
        if "objectives" in args.races:
            result["objectives"] = bench.objective_cost(args.objective_len)
            print("[objectives] step time / plain: " + "  ".join(
                f"{k} {v:.3f}" for k, v in result["objectives"]["step_time_over_plain"].items()), file=sys.stderr)
        if "grow_p2" in args.races:
            result["grow_p2"] = bench.grow_vs_packed()
            print(f"[grow_p2] grow {result['grow_p2']['arms']['grow_p2']['median_tokens_per_s']:,.0f} tok/s, packed "
                  f"{result['grow_p2']['arms']['packed_longest']['median_tokens_per_s']:,.0f} tok/s, ratio "
                  f"{result['grow_p2']['ratio_grow_over_packed']:.3f}", file=sys.stderr)

    setup = {"preset": args.preset, "params_non_embedding_pos": bench.model.num_params(), "vocab": bench.vocab,
             "vocab_note": "both arms use the same vocabulary (the shards')", "tokens_per_step": args.tokens_per_step,
             "shards": source, "buckets": ds.seq_lens, "compile": args.device == "cuda",
             "autocast": "bf16" if args.device == "cuda" else None, "warmup": args.warmup, "repeats": args.repeats,
             "rho1_ratio": 0.6, "sidecar_scoring_s": round(score_s, 2),
             "mfu_formula": "(6N + 12*n_layer*d*T) * tokens/s / 989.4e12" if args.device == "cuda" else None}
    return result, setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shards", help="token shard set (default on CPU: out/sample/shards)")
    ap.add_argument("--synthetic", action="store_true", help="random-token shards (the default on GPU)")
    ap.add_argument("--buckets", type=int, nargs="+", help="synthetic shards' bucket lengths")
    ap.add_argument("--vocab", type=int, help="synthetic shards' vocabulary size")
    ap.add_argument("--preset")
    ap.add_argument("--tokens-per-step", type=int)
    ap.add_argument("--lengths", type=int, nargs="+", help="race 1's sequence lengths (buckets of the shards)")
    ap.add_argument("--objective-len", type=int, help="sequence length of races 2 and 3")
    for k in ("repeats", "warmup", "grow-steps", "grow-cycles", "passes"):
        ap.add_argument(f"--{k}", type=int)
    ap.add_argument("--threads", type=int, help="torch CPU threads (default 1 on CPU: under a shared machine's load "
                    "one thread ran 1.8x faster than two here; torch's default on GPU)")
    ap.add_argument("--races", nargs="+", choices=RACES, default=list(RACES), help="which races to run (default all)")
    ap.add_argument("--fused-presets", nargs="+", help="race 5's model presets (default: cpu tiny; cuda 124m 350m)")
    ap.add_argument("--fused-lengths", type=int, nargs="+", help="race 5's sequence lengths")
    ap.add_argument("--micro-batch", type=int, nargs="+", help="race 5's sweep: sequences per forward pass (the "
                    "step's tokens are split into micro-batches of this many; sizes above a step's sequences are cut)")
    ap.add_argument("--fused-heads", nargs="+", choices=["plain", "chunked", "liger", "fused"],
                    help="race 5's loss heads, plain first (default: cpu plain chunked; cuda plain fused)")
    ap.add_argument("--ours-heads", nargs="+", choices=["plain", "chunked", "liger", "fused"], default=["plain"],
                    help="race 1: the loss heads of ours' arms (plain always; e.g. plain fused: ours and ours_liger)")
    ap.add_argument("--grow-head", choices=["plain", "chunked", "liger", "fused", "best"], default="plain",
                    help="race 4's loss head (best: the ours arm fastest at race 1's longest length)")
    ap.add_argument("--curve-steps", type=int, help="race 5's correctness check: steps of the same seed per head (0: off)")
    ap.add_argument("--curve-seed", type=int, default=0)
    ap.add_argument("--out", help="result JSON (default results/train_<device>.json)")
    args = ap.parse_args()
    for k, v in DEFAULTS[args.device].items():
        attr = {"tokens": "tokens_per_step", "preset": "preset"}.get(k, k)
        if getattr(args, attr, None) is None:
            setattr(args, attr, v)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        import torch._dynamo as dynamo
        for name in ("cache_size_limit", "recompile_limit"):  # several models x lengths share GPT.forward's code
            if hasattr(dynamo.config, name):
                setattr(dynamo.config, name, 64)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = os.getloadavg()
    t_start = time.time()
    result, setup = {}, None
    if set(args.races) & {"throughput", "objectives", "grow_p2"}:
        result, setup = loop_races(args)
    if "fused" in args.races:
        result["fused"] = FusedRace(args).run()

    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    out = {
        "command": " ".join([os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(str(ROOT)) else "python"]
                            + [os.path.relpath(__file__, ROOT)] + sys.argv[1:]),
        "machine": {"cpu_model": cpu, "nproc": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_start": [round(x, 2) for x in load_start],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version()},
        "device": args.device, "device_name": torch.cuda.get_device_name() if args.device == "cuda" else cpu,
        "torch": torch.__version__, "races": args.races, "setup": setup,
        **result,
        "wall_s": round(time.time() - t_start, 1),
    }
    path = Path(args.out or ROOT / "benchmarks" / "results" / f"train_{args.device}.json")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"[bench_train] wrote {path} ({out['wall_s']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
