"""Cutting a batch of documents into runs of about a fixed number of UTF-8 bytes, so
that the per-byte work arrays of the text kernels stay bounded whatever the batch."""

import numpy as np

CHUNK_BYTES = 1 << 21  # text per step: bounds the (bytes,) uint64 work arrays to ~16 MB each


def cut_runs(sizes: np.ndarray, limit: int) -> list[int]:
    """Document boundaries cutting ``sizes`` into runs of about ``limit`` (>= 1 doc each)."""
    cum = np.cumsum(sizes)
    cuts, lo = [0], 0
    while lo < len(sizes):
        base = cum[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(cum, base + limit, side="right")), lo + 1)
        cuts.append(min(hi, len(sizes)))
        lo = cuts[-1]
    return cuts
