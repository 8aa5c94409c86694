"""WARC files, read with FastWARC: a ``.gz`` member by member (each checked whole before its
records are read), an uncompressed file header by header (``Content-Length``); a record's
HTTP headers and payload into a :class:`Record`."""

from __future__ import annotations

import io
from typing import Iterator

from datacurate.formats import storage
from datacurate.readers.base import Counted, ReadTask, Tally
from datacurate.readers.archive.damage import damaged_member, inflate, is_padding, lost_members
from datacurate.readers.archive.http import parse_content_type, read_capped, stored_cap, undo_encodings
from datacurate.readers.archive.plan import next_header, next_member
from datacurate.readers.archive.record import DOCUMENTS, GZIP_MAGIC, Record, damaged, file_size, target_url, warc_date
from datacurate.text import charset as charsets


def warc_records(task: ReadTask, tally: Tally, cap: int | None = None) -> Iterator[Record]:
    """The records of a byte range (whole records from ``start`` on, none past ``end``).

    Damage is counted per record: each record whose stored bytes are damaged is one
    ``Record`` with ``damage`` set, at its offset, and no record is invented. In a
    ``.gz`` every gzip member is decompressed and checked (CRC and length) before its
    records are read: a member that fails is one reject (a member holding several records:
    those whole before the damage, then one reject), reading goes on at the next member
    that starts a record, and a member between the two whose gzip header itself is
    smashed is found by its deflate stream and is one reject more. An uncompressed WARC
    is walked header by header (``Content-Length``): a record cut short, a header that
    does not parse, bytes that are no record are one reject each, reading going on at the
    next ``WARC/`` line. ``input/truncated_record`` when the file ends inside the record,
    else ``input/corrupt_record``."""
    if task.end <= task.start:
        return
    size = file_size(task.path)
    f = raw = storage.open_input(task.path, block=storage.REMOTE_RANGE)  # on S3: 8 MB ranges, not one GET per member or 64 KB
    try:
        gz = f.read(3) == GZIP_MAGIC or task.path.lower().endswith(".gz")
        at_eof = task.end == size
        yield from (_gz_records if gz else _plain_records)(f, task, tally, at_eof, cap)
        tally.consumed = task.end - task.start
    finally:
        raw.close()


MEMBER_IN_MEMORY = 64 << 20  # a gzip member up to this size (decompressed) is read from memory, a larger one streamed


def _gz_records(f, task: ReadTask, tally: Tally, at_eof: bool, cap: int | None) -> Iterator[Record]:
    pos = task.start
    while pos < task.end:
        tally.consumed = pos - task.start  # the records before this member are whole
        data, nxt = inflate(f, pos, task.end, MEMBER_IN_MEMORY)
        if nxt is not None:  # a whole member
            n = 0
            for n, rec in enumerate(_one_row_each(_member_records(f, pos, nxt, data, cap)), 1):
                yield rec
            if n == 0 and (data is None or data.strip()):
                yield damaged(pos, ValueError("a gzip member that holds no WARC record"), "input/corrupt_record")
            pos = nxt
            continue
        nxt = next_member(f, pos + 1, task.end)
        if is_padding(f, pos, nxt):
            pos = nxt
            continue
        reason = "input/truncated_record" if at_eof and nxt >= task.end else "input/corrupt_record"
        lost = lost_members(f, pos, nxt)
        yield from damaged_member(_member_records(f, pos, nxt, data, cap), pos, reason, lost)
        pos = nxt


def _one_row_each(records: Iterator[Record]) -> Iterator[Record]:
    """The records of a whole gzip member, one row each: bytes after a record that do not parse
    (its ``Content-Length`` understates its block) make that record a reject, not a row more."""
    held = None
    for rec in records:
        if held is not None and rec.warc_type is None and rec.damage is not None:
            rec, held = held._replace(damage=rec.damage), None
        if held is not None:
            yield held
        held = rec
    if held is not None:
        yield held


def _member_records(f, pos: int, end: int, data: bytes | None, cap: int | None) -> Iterator[Record]:
    """The records of the gzip member at ``pos``: parsed from its decompressed ``data``, or
    (too large to hold) streamed from the file up to ``end``. Each has the member's offset."""
    if data is not None:
        return _parse(io.BytesIO(data), lambda r: pos, cap)
    f.seek(pos)
    return _parse(Counted(f, end - pos), lambda r: pos, cap)


def _parse(stream, offset_of, cap: int | None) -> Iterator[Record]:
    """FastWARC's records of a stream; one that does not parse ends it, as damage."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    at = None
    try:
        for r in ArchiveIterator(stream, record_types=WarcRecordType.any_type, parse_http=True, auto_decode="none",
                                 fsspec_args=False):
            at = offset_of(r)
            yield _fast_record(r, at, cap)
    except OSError as e:
        yield damaged(at if at is not None else offset_of(None), e, "input/corrupt_record")


def _plain_records(f, task: ReadTask, tally: Tally, at_eof: bool, cap: int | None) -> Iterator[Record]:
    pos = task.start
    while pos < task.end:
        tally.consumed = pos - task.start
        f.seek(pos)
        head = f.read(min(1 << 16, task.end - pos))
        blank = len(head) - len(head.lstrip(b"\0\r\n\t "))
        if blank:  # the blank lines that end a record, or padding
            pos += blank
            continue
        rec_end, error = _plain_extent(head, pos)
        if rec_end is not None and rec_end <= task.end:
            f.seek(rec_end)
            after = f.read(min(1 << 12, task.end - rec_end))
            ends = len(after) - len(after.lstrip(b"\r\n"))  # CRLF CRLF (WARC 1.1, 5.1); node-warc writes one CRLF
            rest = after[ends:]
            clean = not rest.strip(b"\0\r\n\t ") or rest.startswith(b"WARC/") or b"WARC/".startswith(rest)
            f.seek(pos)
            parsed = _parse(Counted(f, min(rec_end + (min(ends, 4) if clean else 4), task.end) - pos), lambda r: pos, cap)
            if clean:
                yield from parsed
                pos = rec_end
                continue
            # bytes that are no record after this one: its Content-Length understates its block. One
            # row, the record as a reject; reading goes on at the next record header
            nxt = next_header(f, rec_end, task.end)
            yield from damaged_member(parsed, pos, "input/corrupt_record", [])
            pos = nxt
            continue
        nxt = next_header(f, pos + 1, task.end)
        cut = at_eof and nxt >= task.end and (rec_end is not None or len(head) == task.end - pos)
        yield damaged(pos, ValueError(error or "the file ends inside this record"),
                      "input/truncated_record" if cut else "input/corrupt_record")
        pos = nxt


def _plain_extent(head: bytes, pos: int) -> tuple[int | None, str | None]:
    """(where the record at ``pos`` ends, its block included; or None and why) from its first bytes."""
    if not head.startswith(b"WARC/"):
        return None, f"not a WARC record header: {head[:40]!r}"
    stop = head.find(b"\r\n\r\n")
    if stop < 0:
        return None, "a WARC header without its end (cut, or over 64 KB)"
    for line in head[:stop].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return pos + stop + 4 + int(value.strip()), None
    return None, "a WARC header without Content-Length"


def _fast_record(r, offset: int, cap: int | None) -> Record:
    """A FastWARC record as a :class:`Record`. With ``cap`` (payload bytes, :func:`payload_cap`)
    a payload is held up to about ``cap`` bytes, stored and decoded, the rest read and counted
    only (``oversize``: an ``input/doc_too_large`` row), and a binary one (its media type not
    text) is not held at all: its row has empty text whatever its size."""
    h = r.headers
    warc_type = h.get("WARC-Type")
    if warc_type not in DOCUMENTS:
        return Record(offset, warc_type, h.get("WARC-Record-ID"), target_url(h.get("WARC-Target-URI")), None, None, None,
                      None, b"")
    http = r.http_headers if r.is_http else None
    ctype = charset = None
    if http is not None:
        ctype, charset = parse_content_type(http.get("Content-Type"))
    if ctype is None:
        ctype = parse_content_type(h.get("WARC-Identified-Payload-Type"))[0]
    if ctype is None and http is None:
        ctype = parse_content_type(h.get("Content-Type"))[0]
    binary = cap is not None and ctype is not None and not charsets.is_text(ctype, b"")
    raw, total = read_capped(r.reader, None if cap is None else 0 if binary else stored_cap(cap))
    if total < r.content_length:  # the file ended inside this record
        return Record(offset, warc_type, h.get("WARC-Record-ID"), target_url(h.get("WARC-Target-URI")),
                      warc_date(h.get("WARC-Date")), None, None, None, raw, damage="input/truncated_record")
    oversize = False
    if binary:
        raw = b""
    elif http is not None:
        oversize = cap is not None and total > stored_cap(cap)
        raw = undo_encodings(raw, http.get("Transfer-Encoding"), http.get("Content-Encoding"), cap)
    if cap is not None and len(raw) > cap:
        raw, oversize = raw[:cap], True
    return Record(offset, warc_type, h.get("WARC-Record-ID"), target_url(h.get("WARC-Target-URI")), warc_date(h.get("WARC-Date")),
                  ctype, charset, http.status_code if http is not None else None, raw, oversize=oversize)
