"""ARC files (the Internet Archive's format before WARC), v1 and v2, plain or one gzip member
per record."""

from __future__ import annotations

import re
from typing import Iterator

from datacurate.formats import storage
from datacurate.readers.base import ReadTask, Tally
from datacurate.readers.archive.damage import damaged_member, inflate, lost_members
from datacurate.readers.archive.http import parse_content_type, split_http, undo_encodings
from datacurate.readers.archive.plan import next_member
from datacurate.readers.archive.record import ARC_START, GZIP_MAGIC, Record, damaged, file_size, target_url, warc_date
from datacurate.text import charset as charsets


WINDOW = 8 << 20  # an uncompressed ARC is read this much at a time (more for a larger record)


def arc_records(task: ReadTask, tally: Tally, cap: int | None = None) -> Iterator[Record]:
    """ARC v1/v2 (the Internet Archive's ARC file format): a header line per record,
    ``length`` bytes (HTTP response and body), a newline. The ``filedesc://`` record's
    body names the version and the header's fields: v1 ``URL IP-address Archive-date
    Content-type Archive-length``, v2 ``URL IP-address Archive-date Content-type
    Result-code Checksum Location Offset Filename Archive-length``. A ``.gz`` ARC is one
    member per record, each checked as a WARC's (:func:`_gz_records`): a damaged member is
    one reject, reading goes on at the next member that starts a record. An uncompressed ARC
    is read in windows of :data:`WINDOW` bytes (a larger record: its own length), never whole.
    ``cap``: payload bytes held (:func:`datacurate.readers.archive.http.payload_cap`)."""
    fields = list(_ARC_FIELDS[1])  # v1 until the file's version block says otherwise
    size = file_size(task.path)
    with storage.open_input(task.path) as f:
        if f.read(3) != GZIP_MAGIC and not task.path.lower().endswith(".gz"):
            pos, want, resync = 0, WINDOW, False
            while pos < size:
                f.seek(pos)
                data = f.read(want)
                final, more = pos + len(data) >= size, {}
                yield from _arc_parse(data, pos, fields, False, cap, None if final else more, resync)
                if final:
                    break
                pos, want, resync = pos + more["at"], max(WINDOW, more.get("need", 0)), more.get("resync", False)
                tally.consumed = pos
            tally.consumed = size
            return
        pos = 0
        while pos < size:
            tally.consumed = pos
            data, nxt = inflate(f, pos, size, most=None)  # an ARC member is parsed in memory
            if nxt is not None:
                yield from _arc_parse(data, pos, fields, True, cap)
                pos = nxt
                continue
            nxt = next_member(f, pos + 1, size, ARC_START)
            reason = "input/truncated_record" if nxt >= size else "input/corrupt_record"
            yield from damaged_member(_arc_parse(data, pos, fields, True, cap), pos, reason,
                                       lost_members(f, pos, nxt, ARC_START))
            pos = nxt
        tally.consumed = size


_ARC_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9+.\-]*://\S*[^\n]* -?\w+\r?$", re.M)
# the header fields of each ARC version (a file's own URL-record definition line wins)


_ARC_FIELDS = {1: ("URL", "IP-address", "Archive-date", "Content-type", "Archive-length"),
               2: ("URL", "IP-address", "Archive-date", "Content-type", "Result-code", "Checksum", "Location",
                   "Offset", "Filename", "Archive-length")}


def _arc_version(body: bytes) -> tuple[str, ...]:
    """The header fields a ``filedesc`` body declares: its URL-record definition line
    (second line), else its version number's (first line), else v1's."""
    lines = body.split(b"\n")
    names = tuple(lines[1].decode("ascii", "replace").split()) if len(lines) > 1 else ()
    if names[:1] == ("URL",) and names[-1:] == ("Archive-length",) and "Archive-date" in names:
        return names
    version = lines[0].split(b" ")[0] if lines else b""
    return _ARC_FIELDS.get(int(version) if version.isdigit() else 1, _ARC_FIELDS[1])


def _arc_parse(data: bytes, base: int, fields: list, per_member: bool, cap: int | None = None,
               more: dict | None = None, resync: bool = False) -> Iterator[Record]:
    """The records of ARC bytes (``fields``: the header's field names, updated by a
    ``filedesc`` record); a header with no valid length is damage (a reject, or a
    ``filedesc`` counted as warcinfo), and parsing resumes at the next header line.

    ``more`` (a window of an uncompressed file, not its end): a record that runs past the
    window is left for the next, which starts at ``more["at"]`` (``need``: the bytes that
    record takes; ``resync``: the next window begins inside a damaged record's bytes, so
    reading starts at its first header line)."""
    pos, n = 0, len(data)
    if resync:
        m = _ARC_HEADER.search(data)
        if m is None:
            if more is not None:  # from the last line's start (none: a longer window from here)
                last = data.rfind(b"\n")
                more.update(at=last + 1, resync=True)
                if last < 0:
                    more["need"] = 2 * n + 1
            return
        pos = m.start()
    while pos < n:
        eol = data.find(b"\n", pos)
        eol = n if eol < 0 else eol
        line = data[pos:eol].rstrip(b"\r")
        if not line.strip():
            pos = eol + 1
            continue
        offset = base if per_member else base + pos
        if eol == n and more is not None:  # the window ends inside this header line
            more.update(at=pos, need=2 * (n - pos) + 1)
            return
        if eol == n and not per_member:  # the file ends inside this header line
            yield damaged(offset, ValueError(f"ARC header cut short: {line[:200]!r}"), "input/truncated_record")
            return
        values = line.split(b" ")
        filedesc = line.startswith(b"filedesc://")
        width = len(values) if filedesc else len(fields)  # the filedesc line is written in its own version
        length = int(values[-1]) if len(values) >= width and values[-1].isdigit() else None
        if length is None:  # resume at the next line that looks like a header
            m = _ARC_HEADER.search(data, eol + 1)
            pos = m.start() if m else n
            if m is None and more is not None:  # in a later window
                more.update(at=max(data.rfind(b"\n") + 1, eol + 1), resync=True)
            if filedesc:
                yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            else:
                yield damaged(offset, ValueError(f"ARC header without a valid length: {line[:200]!r}"),
                              "input/corrupt_record")
            continue
        if more is not None and eol + 1 + length >= n:  # the record (and its newline) runs past the window
            more.update(at=pos, need=eol + 2 + length - pos)
            return
        body = data[eol + 1:eol + 1 + length]
        pos = eol + 1 + length
        if filedesc and len(body) < length:
            yield damaged(offset, ValueError("ARC file header cut short"), "input/truncated_record")
            continue
        if filedesc:
            fields[:] = _arc_version(body)
            yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            continue
        # the URL may hold spaces: the other fields are the last width - 1 values
        head = dict(zip(fields[1:], values[len(values) - width + 1:]))
        url = b" ".join(values[:len(values) - width + 1]).decode("utf-8", "replace")
        date = warc_date(head["Archive-date"].decode("ascii", "replace"))
        ctype = parse_content_type(head["Content-type"].decode("ascii", "replace"))[0]
        status, charset, payload, headers = None, None, body, {}
        if body.startswith(b"HTTP/"):
            status, headers, payload = split_http(body)
        declared = headers.get("content-length", "")
        if len(body) < length and not (declared.isdigit() and len(payload) >= int(declared)):
            # cut short (a record whose HTTP body is whole, but for a miscounted ARC length, is read)
            yield Record(offset, "response", None, target_url(url), date, ctype, None, None, body,
                         damage="input/truncated_record")
            continue
        if headers.get("content-type"):
            ctype, charset = parse_content_type(headers["content-type"])
        oversize = False
        if cap is not None and ctype is not None and not charsets.is_text(ctype, b""):
            payload = b""  # a binary payload: an empty-text row, never decoded
        else:
            payload = undo_encodings(payload, headers.get("transfer-encoding"), headers.get("content-encoding"), cap)
            if cap is not None and len(payload) > cap:
                payload, oversize = payload[:cap], True
        yield Record(offset, "response", None, target_url(url), date, ctype, charset, status, payload,
                     oversize=oversize)
    if more is not None:
        more.setdefault("at", n)
