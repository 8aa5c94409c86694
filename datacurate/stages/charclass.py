"""Doubling every character of a class, in NumPy over a whole Arrow string array.

The toxicity word list matches whole words with RE2, which has no look-around, so every
non-word character of the text is doubled first (:mod:`toxicity`).
``replace_substring_regex(t, "(class)", "\\1\\1")`` costs RE2 a search and a copy per
match, and non-word characters (spaces, punctuation) come every few characters: on the
sample pipeline's English documents that one pass was ~12 % of the toxicity stage. Here
the UTF-8 buffer is rewritten at once with ``np.repeat``, 2.4x faster on that text.
(The same was tried for the classifiers' punctuation split, " \\1 " around every
mark: on English text RE2 was already as fast, so that pass stays a regex.)

The class table is RE2's own: the class's pattern is run once over every code point of
the Basic Multilingual Plane (characters beyond it are classified as they occur), so the
output is byte for byte what the regex gives, whatever Unicode version RE2 was built
with. Text is processed in runs of ~2 MB, which bounds the work arrays.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.stages.minhash import _CHUNK_BYTES, _chunks, code_points, utf8_buffer


class RegexClass:
    """Membership of code points in a one-character RE2 pattern (e.g. ``[\\pP\\pS]``)."""

    def __init__(self, pattern: str):
        self.pattern = f"^(?:{pattern})$"
        self._bmp: np.ndarray | None = None
        self._ascii: np.ndarray | None = None  # (256,) by byte value; bytes >= 128 are not characters

    def _ask(self, cps: np.ndarray) -> np.ndarray:
        chars = pa.array([chr(c) for c in cps.tolist()], pa.string())
        return np.asarray(pc.match_substring_regex(chars, self.pattern), dtype=bool)

    def of(self, cp: np.ndarray) -> np.ndarray:
        if self._bmp is None:  # once per process: the plane less the surrogates (no UTF-8 for them)
            valid = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x10000)])
            self._bmp = np.zeros(0x10000, dtype=bool)
            self._bmp[valid] = self._ask(valid)
        out = np.zeros(len(cp), dtype=bool)
        small = cp < 0x10000
        out[small] = self._bmp[cp[small]]
        if not small.all():
            uniq, inv = np.unique(cp[~small], return_inverse=True)
            out[~small] = self._ask(uniq)[inv]
        return out


def _members(raw: np.ndarray, cls: RegexClass) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mask of the bytes that start a ``cls`` character, and the first byte, byte length
    and membership of every multi-byte character): ASCII bytes by value, the others decoded."""
    if cls._ascii is None:
        cls._ascii = np.zeros(256, dtype=bool)
        cls._ascii[:128] = cls.of(np.arange(128))
    member = cls._ascii[raw]
    lead, size, cp = code_points(raw)
    multi = cls.of(cp) if len(lead) else np.zeros(0, dtype=bool)
    member[lead] = multi
    return member, lead, size, multi


def _by_runs(t: pa.Array | pa.ChunkedArray, run: Callable) -> pa.LargeStringArray:
    """Apply ``run(raw, offsets) -> (new raw, new offsets)`` to ~2 MB runs of the texts."""
    if isinstance(t, pa.ChunkedArray):
        t = t.combine_chunks()
    t = pc.fill_null(t, "").cast(pa.large_string())
    cuts = _chunks(np.asarray(pc.binary_length(t), dtype=np.int64), _CHUNK_BYTES)
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        part = t.slice(lo, hi - lo)
        raw, off = utf8_buffer(part)
        new, new_off = run(raw, off)
        out.append(pa.LargeStringArray.from_buffers(len(part), pa.py_buffer(new_off.astype(np.int64)),
                                                    pa.py_buffer(np.ascontiguousarray(new, dtype=np.uint8))))
    return out[0] if len(out) == 1 else pa.concat_arrays(out)


def double(t: pa.Array | pa.ChunkedArray, cls: RegexClass) -> pa.LargeStringArray:
    """Every character of ``cls`` written twice: ``replace_substring_regex(t, "(cls)", "\\1\\1")``."""

    def run(raw, off):
        twice, lead, size, multi = _members(raw, cls)
        for k in (1, 2, 3):  # the other bytes of doubled multi-byte characters
            sel = multi & (k < size)
            twice[lead[sel] + k] = True
        extra = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum(twice, out=extra[1:])
        out = np.repeat(raw, twice.astype(np.int64) + 1)  # right for one-byte characters: "a" -> "aa"
        first, n = lead[multi], size[multi]  # multi-byte ones came out "aabbcc": write "abcabc"
        at = first + extra[first]
        for k in range(8):
            sel = 2 * n > k
            out[at[sel] + k] = raw[first[sel] + k % n[sel]]
        return out, off + extra[off]

    return _by_runs(t, run)
