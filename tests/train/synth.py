"""Synthetic token shard sets for training tests: small vocabularies so a tiny GPT trains
in seconds on 2 cores, with structure a model must learn (an order-1 Markov chain)."""

from __future__ import annotations

import numpy as np

from datacurate.formats import shards


def markov(n: int, L: int, vocab: int, rng: np.random.Generator, branch: int = 4, table_seed: int = 7) -> np.ndarray:
    """``n`` sequences of length ``L``: token t is one of ``branch`` successors of token t-1,
    fixed by ``table_seed``; conditional entropy ln(branch), unigram near ln(vocab)."""
    table = np.random.default_rng(table_seed).integers(0, vocab, size=(vocab, branch))
    out = np.empty((n, L), dtype=np.int64)
    out[:, 0] = rng.integers(0, vocab, size=n)
    pick = rng.integers(0, branch, size=(n, L))
    for t in range(1, L):
        out[:, t] = table[out[:, t - 1], pick[:, t]]
    return out


def write_set(root, buckets: dict[int, tuple[np.ndarray, np.ndarray]], domains: list[str], vocab: int,
              tokenizer_sha: str = "synthetic-tokenizer") -> str:
    """``buckets[L] = (tokens (n, L), domain ids (n,))`` -> a complete shard set at ``root``."""
    pieces = []
    for L, (tokens, doms) in sorted(buckets.items()):
        half = len(tokens) // 2  # two files per bucket, so readers cross file boundaries
        for part, rows in (("a", slice(0, half)), ("b", slice(half, None))):
            entry = shards.write_piece(str(root), part, tokens[rows], doms[rows], np.uint16)
            pieces.append({**entry, "seq_len": L})
    man = shards.build_manifest(pieces, mode="decompose", dtype="uint16", domains=domains,
                                tokenizer={"sha256": tokenizer_sha, "vocab_size": vocab, "eos_id": 0})
    shards.write_manifest(str(root), man)
    return str(root)


def markov_set(root, vocab: int = 96, per_bucket=((64, 192), (128, 96), (256, 48)), domains=("a", "b", "c"),
               seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    buckets = {}
    for L, n in per_bucket:
        buckets[L] = (markov(n, L, vocab, rng), rng.integers(0, len(domains), size=n))
    return write_set(root, buckets, list(domains), vocab)


def unigram_entropy(root: str) -> float:
    from datacurate.train.data import ShardDataset

    ds = ShardDataset(root)
    counts = np.zeros(int(ds.tokenizer["vocab_size"]))
    for L in ds.seq_lens:
        np.add.at(counts, ds.sequences(L)[0].ravel().astype(np.int64), 1)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())
