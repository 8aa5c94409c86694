"""Rewriting every character of a class, in NumPy over a whole Arrow string array.

Two passes that were RE2 ``replace_substring_regex`` calls, whose cost is a search and a
copy per match, with a match every few characters of English text:

* :func:`double`: the toxicity word list matches whole words with RE2, which has no
  look-around, so every non-word character is doubled first (:mod:`toxicity`); that pass
  was ~12 % of the toxicity stage. The UTF-8 buffer is rewritten at once with
  ``np.repeat``, 2.4x faster on the sample pipeline's text.
* :func:`spaced`: the classifiers' punctuation split (:func:`datacurate.models.fasttext_model.normalize`),
  a space either side of every punctuation mark or symbol. It was 40 % of the quality
  stage on 5 KB documents; one prefix sum of per-byte output widths places every byte,
  ~3x faster than RE2 on English text (an earlier ``np.repeat`` version was not faster).

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

from datacurate.text.chunks import CHUNK_BYTES, code_points, cut_runs, utf8_buffer


class CharTable:
    """A property of code points (``_ask``, ``dtype``): tabled for the Basic Multilingual
    Plane on first use, asked for the few beyond it as they occur; ``by_byte`` gives it by
    byte value (ASCII; the bytes >= 128 start no character and hold ``fill``)."""

    dtype, fill = bool, False
    _bmp = _ascii = None

    def _ask(self, cps: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def of(self, cp: np.ndarray) -> np.ndarray:
        if self._bmp is None:  # once per process: the plane less the surrogates (no UTF-8 for them)
            valid = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x10000)])
            self._bmp = np.full(0x10000, self.fill, dtype=self.dtype)
            self._bmp[valid] = self._ask(valid)
        out = np.full(len(cp), self.fill, dtype=self.dtype)
        small = cp < 0x10000
        out[small] = self._bmp[cp[small]]
        if not small.all():
            uniq, inv = np.unique(cp[~small], return_inverse=True)
            out[~small] = self._ask(uniq)[inv]
        return out

    def by_byte(self) -> np.ndarray:
        if self._ascii is None:
            self._ascii = np.full(256, self.fill, dtype=self.dtype)
            self._ascii[:128] = self.of(np.arange(128))
        return self._ascii


class RegexClass(CharTable):
    """Membership of code points in a one-character RE2 pattern (e.g. ``[\\pP\\pS]``)."""

    def __init__(self, pattern: str):
        self.pattern = f"^(?:{pattern})$"

    def _ask(self, cps: np.ndarray) -> np.ndarray:
        chars = pa.array([chr(c) for c in cps.tolist()], pa.string())
        return np.asarray(pc.match_substring_regex(chars, self.pattern), dtype=bool)


def _members(raw: np.ndarray, cls: RegexClass) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mask of the bytes that start a ``cls`` character, and the first byte, byte length
    and membership of every multi-byte character)."""
    (member,), lead, size = _starts(raw, [cls])
    return member, lead, size, member[lead]


def _by_runs(t: pa.Array | pa.ChunkedArray, run: Callable) -> pa.LargeStringArray:
    """Apply ``run(raw, offsets) -> (new raw, new offsets)`` to ~2 MB runs of the texts."""
    if isinstance(t, pa.ChunkedArray):
        t = t.combine_chunks()
    t = pc.fill_null(t, "").cast(pa.large_string())
    cuts = cut_runs(np.asarray(pc.binary_length(t), dtype=np.int64), CHUNK_BYTES)
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        part = t.slice(lo, hi - lo)
        raw, off = utf8_buffer(part)
        new, new_off = run(raw, off)
        out.append(pa.LargeStringArray.from_buffers(len(part), pa.py_buffer(new_off.astype(np.int64)),
                                                    pa.py_buffer(np.ascontiguousarray(new, dtype=np.uint8))))
    return pa.concat_arrays(out) if len(out) > 1 else out[0] if out else pa.array([], pa.large_string())


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


def _starts(raw: np.ndarray, classes: list[RegexClass]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """For each class, the mask of the bytes that start one of its characters; and the
    first byte and byte length of every multi-byte character (decoded once for all)."""
    lead, size, cp = code_points(raw)
    masks = []
    for cls in classes:
        m = cls.by_byte()[raw]  # ASCII bytes by value, the others decoded
        if len(lead):
            m[lead] = cls.of(cp)
        masks.append(m)
    return masks, lead, size


def spaced(t: pa.Array | pa.ChunkedArray, marks: RegexClass, spaces: RegexClass) -> pa.LargeStringArray:
    """Every ``marks`` character with a space either side, every ``spaces`` character as two
    spaces: ``replace_substring_regex(t, "(marks)|spaces", " \\1 ")``, byte for byte.

    Each input byte gets a width: spaces written before it (1 before a mark, 2 for a
    space character's first byte), itself (dropped for the bytes of a space character)
    and one space after a mark's last byte. One prefix sum of the widths places every
    kept byte; the rest of the output is the space byte."""

    def run(raw, off):
        (mark, space), lead, size = _starts(raw, [marks, spaces])
        before = mark.astype(np.uint8) + 2 * space.astype(np.uint8)
        keep = ~space
        after = mark.copy()
        rest = []  # (byte, its character's first byte) for the later bytes of space characters
        if len(lead):
            long_mark, long_space = mark[lead], space[lead]
            after[lead[long_mark]] = False  # the space goes after the character's last byte
            after[lead[long_mark] + size[long_mark] - 1] = True
            for k in (1, 2, 3):  # the other bytes of a multi-byte space character: dropped
                first = lead[long_space & (k < size)]
                keep[first + k] = False
                rest.append((first + k, first))
        width = before + keep + after  # (L,) output bytes per input byte, 0..3
        pos = np.zeros(len(raw) + 1, dtype=np.int32 if 3 * len(raw) < 2**31 else np.int64)
        np.cumsum(width, out=pos[1:])
        out = np.full(int(pos[-1]), 32, dtype=np.uint8)
        # a kept byte goes after its spaces; a dropped one writes a space into its
        # character's first slot (the same value, so repeated indices are harmless)
        dest = pos[:-1] + before * keep
        for byte, first in rest:
            dest[byte] = pos[first]
        out[dest] = np.where(keep, raw, np.uint8(32))
        return out, pos[off]

    return _by_runs(t, run)


def removed(t: pa.Array | pa.ChunkedArray, cls: RegexClass) -> pa.LargeStringArray:
    """Every ``cls`` character deleted: ``replace_substring_regex(t, "cls", "")``, by one
    boolean mask over the UTF-8 buffer (a kept byte's new place is a prefix sum)."""

    def run(raw, off):
        drop, lead, size, multi = _members(raw, cls)
        for k in (1, 2, 3):  # the other bytes of a dropped multi-byte character
            drop[lead[multi & (k < size)] + k] = True
        pos = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum(~drop, out=pos[1:])
        return raw[~drop], pos[off]

    return _by_runs(t, run)
