"""Planning a WARC / ARC file on the driver: what it is (WARC or ARC, by its first bytes, or by
the first record found past a damaged start) and, for a ``.gz`` larger than
``input.chunk_bytes``, its read tasks, cut at gzip members that start a record."""

from __future__ import annotations

import re
import zlib

from datacurate.configs.input import InputConfig
from datacurate.formats import storage
from datacurate.readers.base import FilePlan, InputError, ReadTask
from datacurate.readers.archive.record import ARC_START, GZIP_MAGIC, WARC_START


SCAN_BYTES = 1 << 20  # planning looks this far past a cut (or a quarter chunk) for the next record's gzip member


def _head(path: str, n: int = 4096) -> tuple[bytes, bool]:
    """The first ``n`` bytes of a file's content (decompressed), and whether it is gzip."""
    with storage.open_input(path) as f:
        raw = f.read(n * 4)
    if raw.startswith(GZIP_MAGIC) or (raw and GZIP_MAGIC.startswith(raw)):
        d, out = zlib.decompressobj(31), b""
        try:  # in small steps: what decompressed before a damage still names the format
            for i in range(0, len(raw), 64):
                out += d.decompress(raw[i:i + 64], n - len(out))
                if len(out) >= n or d.eof:
                    break
        except zlib.error:
            return out or b"\0", True
        return out, True
    return raw[:n], False


def _kind(head: bytes, gz: bool = False) -> str | None:
    head = head.lstrip()
    if head.startswith(b"WARC/") or (b"WARC/".startswith(head) and (head or gz)):  # cut in its first bytes too
        return "warc"
    if head.startswith(b"filedesc://") or (head and b"filedesc://".startswith(head)):
        return "arc"
    return None


def _damaged_start(path: str, size: int, most: int = 1 << 20) -> str | None:
    """"warc" ("arc") when a record starts within the first ``most`` bytes (a gzip member
    that decompresses to ``WARC/`` or an ARC header, or a ``WARC/1.x`` line): a file whose
    first record is damaged."""
    with storage.open_input(path) as f:
        limit = min(size, most)
        if min(next_member(f, 1, limit), next_header(f, 1, limit)) < limit:
            return "warc"
        return "arc" if next_member(f, 1, limit, ARC_START) < limit else None


def sample(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "warc"):
    return None  # no text field to look for: the columns are the record's


def plan(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "warc") -> FilePlan:
    if size == 0:
        return FilePlan([ReadTask(path, source, "warc", end=0)], 0)
    head, gz = _head(path)
    kind = _kind(head, gz) or _damaged_start(path, size)
    if kind is None:
        shown = head[:40].decode("utf-8", "replace").split("\n")[0]
        raise InputError(f"not a WARC or ARC file: {path} (it starts with {shown!r})")
    if kind == "arc" or not gz or size <= cfg.chunk_bytes:
        return FilePlan([ReadTask(path, source, kind, end=size, size=size)], size)
    bounds, cut = [0], cfg.chunk_bytes
    with storage.open_input(path, block=SCAN_BYTES) as f:
        while cut < size:  # a member opening a record within SCAN_BYTES of each cut, else the next cut
            window = min(size, cut + max(SCAN_BYTES, cfg.chunk_bytes // 4))
            pos = next_member(f, cut, window)
            while pos < window and not _chained(f, pos, size):  # inside a payload: look further
                pos = next_member(f, pos + 1, window)
            if pos < window:
                bounds.append(pos)
                cut = pos + cfg.chunk_bytes
            elif len(bounds) == 1:  # none after the first cut: one gzip stream (or huge records), read whole
                break
            else:
                cut = window
    bounds.append(size)
    return FilePlan([ReadTask(path, source, "warc", start=a, end=b, size=b - a)
                     for a, b in zip(bounds[:-1], bounds[1:])], size)


CHAIN_BYTES = 1 << 20  # a cut is checked this far: its members follow one another, whole


def _chained(f, pos: int, size: int) -> bool:
    """Whether the gzip member at ``pos`` is one of the file's own: it and the members after it
    decompress whole (CRC checked) and each ends where the next begins, to the file's end or
    for :data:`CHAIN_BYTES`. A ``.warc.gz`` held as a record's payload, its outer member in
    stored deflate blocks (level 0), shows gzip members that open WARC records; its chain
    breaks where the archive ends inside the payload (the payload's own bytes follow, then
    the outer member's trailer) or at the stored block header that splits it every 64 KB.
    A cut there would invent its records; the planner looks further."""
    end = min(size, pos + CHAIN_BYTES)
    while pos < end:
        f.seek(pos)
        if f.read(3) != GZIP_MAGIC:
            return False
        d, at = zlib.decompressobj(31), pos
        f.seek(pos)
        while not d.eof and at < end:
            chunk = f.read(min(1 << 16, size - at))
            if not chunk:
                return False
            at += len(chunk)
            try:
                while chunk:  # nothing held: 64 KB of output at a time, dropped
                    d.decompress(chunk, 1 << 16)
                    chunk = d.unconsumed_tail
                    if d.eof:
                        break
            except zlib.error:
                return False
        if not d.eof:  # a member longer than the check: as far as seen, one of the file's
            return True
        pos = at - len(d.unused_data)
    return True


def next_member(f, pos: int, end: int, start: re.Pattern = WARC_START) -> int:
    """The offset of the first gzip member at or after ``pos`` that starts a record (its
    first decompressed bytes match ``start``: the magic bytes alone may occur inside
    compressed data), or ``end``."""
    while pos < end:
        f.seek(pos)
        buf = f.read(min(1 << 16, end - pos))
        i = buf.find(GZIP_MAGIC)
        if i < 0:
            pos += max(len(buf) - 2, 1)
            continue
        f.seek(pos + i)
        try:
            head = zlib.decompressobj(31).decompress(f.read(1 << 14), 16)
        except zlib.error:
            head = b""
        if start.match(head):
            return pos + i
        pos += i + 1
    return end


def next_header(f, pos: int, end: int) -> int:
    """Uncompressed: the offset of the first line at or after ``pos`` opening a record."""
    while pos < end:
        f.seek(pos)
        buf = f.read(min(1 << 16, end - pos))
        for m in re.finditer(rb"(?:^|\n)WARC/\d", buf):
            at = pos + m.start() + (buf[m.start():m.start() + 1] == b"\n")
            if at >= pos:
                return at
        if len(buf) < 16:
            return end
        pos += len(buf) - 8
    return end
