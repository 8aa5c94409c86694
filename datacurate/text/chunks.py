"""The UTF-8 buffer of a batch of documents, its multi-byte characters decoded, and runs
of about a fixed number of bytes, so that the per-byte work arrays of the text kernels stay
bounded whatever the batch."""

import numpy as np
import pyarrow as pa

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


def utf8_buffer(t: pa.LargeStringArray) -> tuple[np.ndarray, np.ndarray]:
    """(the UTF-8 bytes of all texts, (N+1,) byte offsets from 0), without a copy."""
    off = np.frombuffer(t.buffers()[1], dtype=np.int64)[t.offset : t.offset + len(t) + 1]
    data = t.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[off[0] : off[-1]] if data is not None else np.zeros(0, np.uint8)
    return raw, off - off[0]


def code_points(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(position of the first byte, byte length, code point) of every multi-byte
    character of a UTF-8 buffer, decoded in NumPy."""
    n = len(raw)
    lead = np.flatnonzero(raw >= 0xC0)
    b0 = raw[lead].astype(np.int64)
    size = 2 + (b0 >= 0xE0) + (b0 >= 0xF0)
    c1, c2, c3 = (raw[np.minimum(lead + k, n - 1)].astype(np.int64) & 0x3F for k in (1, 2, 3))
    cp = np.where(size == 2, ((b0 & 0x1F) << 6) | c1,
                  np.where(size == 3, ((b0 & 0x0F) << 12) | (c1 << 6) | c2,
                           ((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3))
    return lead, size, cp
