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
