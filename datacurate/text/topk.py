"""Seeded, partitionable top-k: the selection core of importance resampling.

Gumbel top-k (Vieira 2014; Kool et al. 2019, "Stochastic Beams and Where to Find
Them"): the k largest ``log w + G`` with G ~ Gumbel(0, 1) are a sample of k items
without replacement with probabilities proportional to w. Here G comes from a hash of
(seed, salt, input position), not from a random stream, so a unit gets the same noise
whichever partition, batch or worker it lands in. Units are ordered by key, ties by
position, so "the first k" is one total order everywhere: any partitioning keeps its
own top-k, the global k-th unit is found among those, and every partition decides its
own units against that one threshold with :func:`selected`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from datacurate.text.textstats import mix


def uniform(seed: int, ords: np.ndarray, chunks: np.ndarray, salt: int = 0) -> np.ndarray:
    """(U,) uniforms in (0, 1) hashed from (seed, salt, position): independent of batching."""
    key = mix(mix(np.full(len(ords), seed & (2**64 - 1), np.uint64), np.full(len(ords), salt, np.uint64)),
              mix(ords.astype(np.uint64), chunks.astype(np.uint64)))
    return ((key >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def gumbel(seed: int, ords: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """(U,) standard Gumbel noise, hashed from (seed, position)."""
    return -np.log(-np.log(uniform(seed, ords, chunks)))


def order(keys: np.ndarray, ords: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """Indices by key descending, ties by input position: the one total order used everywhere."""
    return np.lexsort((chunks, ords, -keys))


def top_k(keys: np.ndarray, ords: np.ndarray, chunks: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k first units in :func:`order` among the eligible (finite-key) ones."""
    finite = np.flatnonzero(np.isfinite(keys))
    if k <= 0:
        return finite[:0]
    if len(finite) > k:  # a partial selection first: the sort then touches ~k rows
        part = np.argpartition(-keys[finite], k - 1)[:k]
        kth = keys[finite[part]].min()
        finite = finite[keys[finite] >= kth]
    return finite[order(keys[finite], ords[finite], chunks[finite])][:k]


def selected(keys: np.ndarray, ords: np.ndarray, chunks: np.ndarray, threshold: Optional[tuple]) -> np.ndarray:
    """Units at or before the k-th unit (key, ord, chunk) in :func:`order`; None: all eligible."""
    ok = np.isfinite(keys)
    if threshold is None:
        return ok
    k, o, c = threshold
    after = (keys > k) | ((keys == k) & ((ords < o) | ((ords == o) & (chunks <= c))))
    return ok & after


# ----------------------------------------------------------------------------- distributed k-th
# The k-th unit in :func:`order` without sorting the candidates in one place: a radix
# select over a 192-bit rank (the key mapped to an unsigned integer whose ascending order
# is the key's descending order, then the position, then the chunk), 16 bits a round.
# Each part counts its units under every value of the next digit among those that share
# the digits chosen so far (a 65,536-bin histogram); the sums pick the digit the k-th unit
# has; once that digit's bin holds at most ``limit`` units, the parts hand over just those
# and the k-th is found among them. Each round costs every part one pass over its keys and
# the coordinator O(65,536 + limit) memory, whatever the number of units: the radix
# select of GPU top-k kernels (PyTorch's CUDA ``topk``) spread over partitions instead of
# thread blocks, made exact: the order's ties are part of the rank, so the unit found is
# the one a full sort finds.

DIGIT_BITS = 16
BINS = 1 << DIGIT_BITS
LEVELS = 3 * 64 // DIGIT_BITS  # three 64-bit words
_PER_WORD = 64 // DIGIT_BITS
_SIGN = np.uint64(1 << 63)


def ascending_bits(keys: np.ndarray) -> np.ndarray:
    """(U,) uint64 whose order is the float keys' ascending order (negative floats: all bits
    flipped; others: the sign bit set); -0.0 counts as 0.0."""
    b = (np.ascontiguousarray(keys, dtype=np.float64) + 0.0).view(np.uint64)  # -0.0 + 0.0 == +0.0
    return np.where(b & _SIGN, ~b, b | _SIGN)


def rank_words(keys: np.ndarray, ords: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """(U, 3) uint64 rows whose ascending lexicographic order is :func:`order` (finite keys).

    The key's bits are mapped to an unsigned integer that grows with the key (negative
    floats: all bits flipped; others: the sign bit set) and then inverted, so a larger key
    ranks first; -0.0 counts as 0.0, as the comparisons of :func:`order` do."""
    up = ascending_bits(keys)
    out = np.empty((len(up), 3), np.uint64)
    out[:, 0] = ~up
    out[:, 1] = ords.astype(np.int64).astype(np.uint64)  # positions are >= 0
    out[:, 2] = chunks.astype(np.int64).astype(np.uint64)
    return out


def _digit(words: np.ndarray, level: int) -> np.ndarray:
    shift = np.uint64(64 - DIGIT_BITS * (level % _PER_WORD + 1))
    return ((words[:, level // _PER_WORD] >> shift) & np.uint64(BINS - 1)).astype(np.int64)


def matching(words: np.ndarray, prefix: list) -> np.ndarray:
    """(U,) bool: the rows whose first ``len(prefix)`` digits are ``prefix``."""
    ok = np.ones(len(words), bool)
    for level, d in enumerate(prefix):
        ok &= _digit(words, level) == d
    return ok


def histogram(words: np.ndarray, prefix: list) -> np.ndarray:
    """(BINS,) int64: how many rows under ``prefix`` have each value of the next digit."""
    w = words[matching(words, prefix)] if prefix else words
    return np.bincount(_digit(w, len(prefix)), minlength=BINS).astype(np.int64)


def kth_unit(k: int, counts: np.ndarray, next_counts, fetch, limit: int = 1 << 17) -> tuple:
    """(key, ord, chunk) of the k-th unit (1-based) in :func:`order` over all parts.

    ``counts``: the parts' summed :func:`histogram` at the empty prefix; ``next_counts(prefix)``
    the same sum at a longer prefix; ``fetch(prefix)`` every part's rows under ``prefix`` as
    (keys, ords, chunks) arrays, called once, when at most ``limit`` rows are under it."""
    if k <= 0:
        return (np.inf, 0, 0)  # no unit comes before it: none is selected
    total = int(counts.sum())
    if total < k:
        raise RuntimeError(f"dsir: {total} eligible units for k = {k}")
    prefix, rank = [], k
    while True:
        cum = np.cumsum(counts)
        d = int(np.searchsorted(cum, rank))  # first digit whose running count reaches rank
        rank -= int(cum[d - 1]) if d else 0
        prefix.append(d)
        if counts[d] <= limit or len(prefix) == LEVELS:
            keys, ords, chunks = fetch(list(prefix))
            if len(keys) != counts[d]:
                raise RuntimeError(f"dsir: {len(keys)} units under the cut-off's prefix, the counts said {counts[d]}")
            i = order(keys, ords, chunks)[rank - 1]
            return (float(keys[i]), int(ords[i]), int(chunks[i]))
        counts = next_counts(list(prefix))
