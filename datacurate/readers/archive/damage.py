"""Damage recovery in gzip files: inflating one member and checking it whole, telling padding
from damage, the rows of a damaged member, and the members whose gzip header was smashed
after it. Each damaged record is one reject; none is invented (tests/test_warc_damage.py)."""

from __future__ import annotations

import re
import zlib
from typing import Iterator

from datacurate.readers.archive.record import GZIP_MAGIC, WARC_START, Record, damaged


def is_padding(f, start: int, end: int) -> bool:
    """Whether the bytes from ``start`` to ``end`` are padding (zeros, blanks), no record."""
    f.seek(start)
    return end - start <= 1 << 16 and not f.read(end - start).strip(b"\0\r\n\t ")


def damaged_member(records: Iterator[Record], pos: int, reason: str, lost: list[int]) -> Iterator[Record]:
    """The rows of a damaged gzip member at ``pos``: the records read before the damage
    whole but for the last one, which is the reject (the member itself when none parsed);
    then one reject per member found ``lost`` after it. What the parser makes of the bytes
    after the last record (no ``WARC-Type``: the rest of its block, a parse error) is no
    record of its own."""
    held = None
    for rec in records:
        if rec.warc_type is None:
            continue
        if held is not None:
            yield held
        held = rec
    yield held._replace(damage=reason) if held is not None else damaged(
        pos, ValueError("a gzip member cut short or corrupt"), reason)
    for at in lost:
        yield damaged(at, ValueError("a gzip member with a damaged header"), "input/corrupt_record")


def inflate(f, pos: int, end: int, most: int | None) -> tuple[bytes | None, int | None]:
    """Decompress the gzip member at ``pos``: (its bytes, None when larger than ``most``,
    or what decompressed before the damage; the offset where it ends, None when it is
    damaged: not gzip, corrupt, its CRC or length wrong, or cut)."""
    f.seek(pos)
    d, out, size, n, step = zlib.decompressobj(31), [], 0, 0, 1 << 14
    while n < end - pos:
        chunk = f.read(min(step, end - pos - n))
        if not chunk:
            break
        n, step = n + len(chunk), min(step * 4, 1 << 22)
        while chunk:
            try:
                piece = d.decompress(chunk, 1 << 22)
            except zlib.error:
                return (b"".join(out) if out is not None else None), None
            size += len(piece)
            if out is not None:
                out.append(piece)
                if most is not None and size > most:
                    out = None
            if d.eof:
                return (b"".join(out) if out is not None else None), pos + n - len(d.unused_data)
            chunk = d.unconsumed_tail
    return (b"".join(out) if out is not None else None), None


def lost_members(f, start: int, end: int, record: re.Pattern = WARC_START, most: int = 1 << 20) -> list[int]:
    """Members between a damaged one (at ``start``) and the next whole one (``end``) whose
    gzip header is smashed: found where a raw deflate stream decodes to a record's start (their
    offset: 10 bytes, a plain gzip header, before it). Past ``most`` bytes not searched. A
    member whose header and first compressed bytes are both destroyed after a damaged one
    cannot be found: the two are one reject."""
    f.seek(start)
    buf = f.read(min(end - start, most))
    own = _gzip_header_len(buf)  # where the damaged member's own deflate stream starts (None: its header is smashed)
    found = []
    for i in range((own or 10) + (own is not None), len(buf) - 8):
        try:
            if not record.match(zlib.decompressobj(-15).decompress(buf[i:i + 1024], 16)):
                continue
        except zlib.error:
            continue
        if own is None and i < 1024:  # the damaged member's own stream, after a header of unknown length
            own = i
            continue
        found.append(start + max(_header_start(buf, i), 1))
    return found


def _header_start(buf: bytes, i: int) -> int:
    """Where the gzip header of the deflate stream at ``i`` starts, its magic smashed: the
    nearest start whose flags give a header of that length (else a plain 10-byte one)."""
    for j in range(i - 10, max(i - 1024, -1), -1):
        if _gzip_header_len(GZIP_MAGIC + buf[j + 3:i]) == i - j:
            return j
    return i - 10


def _gzip_header_len(buf: bytes) -> int | None:
    """The length of the gzip header at the start of ``buf`` (RFC 1952; None when it is no gzip header)."""
    if not buf.startswith(GZIP_MAGIC) or len(buf) < 10 or buf[3] & 0xE0:
        return None
    flags, i = buf[3], 10
    if flags & 4:  # FEXTRA
        i += 2 + int.from_bytes(buf[10:12], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            i = buf.find(b"\0", i) + 1
            if i == 0:
                return None
    return i + 2 * bool(flags & 2)  # FHCRC
