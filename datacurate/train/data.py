"""Read token shards (format: :mod:`datacurate.shards`) and batch them for training.

Each bucket's part files are memory-mapped (nothing is read until a batch asks for
it). Batches follow dataset decomposition (Pouransari et al. 2024): a batch holds
sequences of one length only, and ``batch size x sequence length`` is the same for
every bucket (``tokens_per_batch``), so each optimiser step sees the same number of
tokens whatever the length. Which bucket comes next is a seeded shuffle of all
batches, so buckets are visited in proportion to their batch counts (the paper's
uniform sampling over batches; a length curriculum can reorder :meth:`ShardDataset.plan`).
"""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from datacurate.shards import DOMAIN_DTYPE, read_manifest


class ShardDataset:
    def __init__(self, path: str):
        self.path = path
        self.manifest = read_manifest(path)
        self.dtype = np.dtype(self.manifest["dtype"]).newbyteorder("<")
        self.domains: list[str] = self.manifest["domains"]
        self.tokenizer = self.manifest["tokenizer"]
        self._files: dict[int, list[tuple[np.memmap, np.memmap]]] = {}
        self._starts: dict[int, np.ndarray] = {}
        for key, b in self.manifest["buckets"].items():
            seq_len = int(b["seq_len"])
            maps = [(np.memmap(os.path.join(path, f["tokens"]), dtype=self.dtype, mode="r", shape=(f["n"], seq_len)),
                     np.memmap(os.path.join(path, f["domains"]), dtype=DOMAIN_DTYPE, mode="r", shape=(f["n"],)))
                    for f in b["files"] if f["n"]]
            self._files[seq_len] = maps
            self._starts[seq_len] = np.cumsum([0] + [m[0].shape[0] for m in maps])

    @property
    def seq_lens(self) -> list[int]:
        return sorted(self._files)

    def __len__(self) -> int:
        return sum(int(s[-1]) for s in self._starts.values())

    def num_sequences(self, seq_len: int) -> int:
        return int(self._starts[seq_len][-1])

    def sequences(self, seq_len: int, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(tokens (n, seq_len), domain ids (n,)) of the bucket's sequences ``index`` (all if None)."""
        starts = self._starts[seq_len]
        index = np.arange(starts[-1]) if index is None else np.asarray(index, dtype=np.int64)
        tokens = np.empty((len(index), seq_len), dtype=self.dtype)
        domains = np.empty(len(index), dtype=DOMAIN_DTYPE)
        f = np.searchsorted(starts, index, side="right") - 1  # which file each sequence is in
        for j in np.unique(f):
            rows = np.flatnonzero(f == j)
            local = index[rows] - starts[j]
            tokens[rows] = self._files[seq_len][j][0][local]
            domains[rows] = self._files[seq_len][j][1][local]
        return tokens, domains

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
