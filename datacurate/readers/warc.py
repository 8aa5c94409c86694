"""WARC, WET and ARC files (``input.format: warc``; by name ``.warc[.gz]``, ``.warc.wet[.gz]``,
``.wet.gz``, ``.arc[.gz]``), read with FastWARC (ARC, which FastWARC does not read, by a
small parser here).

Every ``response``, ``resource`` and ``conversion`` (WET) record is one document: ``id`` =
``WARC-Record-ID``, ``url`` = ``WARC-Target-URI``, ``date`` = ``WARC-Date``,
``content_type`` (the HTTP ``Content-Type``, else ``WARC-Identified-Payload-Type``, else
the record's), ``http_status`` (null for records without HTTP), ``warc_type``,
``warc_offset`` (the record's byte offset in the stored file: its gzip member for a
``.gz``), ``source`` (the file), ``charset`` (the WHATWG encoding the payload was read
as) and ``n_replacement_chars`` (the U+FFFD its decoding put in). ``text`` is the payload
(HTTP transfer and content encodings undone) decoded as a browser decodes it
(:mod:`datacurate.text.charset`: byte-order mark, HTTP header, ``<meta>`` prescan, then
resiliparse's ``detect_encoding`` (on 277 real pages with no declared charset,
benchmarks/bench_charset.py: right for 94.9% at ~3,000 pages/s, against 85.6% at ~500
pages/s for charset-normalizer), labels from the WHATWG table, each tried until one
decodes). A page is never rejected for its encoding; only bytes that are not text at all
are (``input/not_text``), and a record whose decoding fails for any other reason is
``input/error``: one page never ends a run. An image, a PDF or another
binary payload is a document with empty text and its ``content_type``. Other records
(``request``, ``warcinfo``, ``metadata``, ``revisit``) are counted by type in
``stats.json`` (``input_files.warc_records``).

A ``.gz`` file larger than ``input.chunk_bytes`` is cut into read tasks at gzip member
boundaries (found near each cut and checked to start a WARC record); a task reads whole
records only, so memory is one record, flat in file size. Damage never ends a file:
a truncated record, a corrupt gzip member, a malformed header become one
``input/truncated_record`` / ``input/corrupt_record`` reject each, reading resumes at the
next member (or record header), and the records before and after survive. A record
without a target URI is ``input/missing_url``; a payload over ``max_doc_chars``
``input/doc_too_large``. A file that is not a WARC or ARC at all is one line before any work.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import Iterator, NamedTuple

import pyarrow as pa

from datacurate import storage
from datacurate.input_config import InputConfig
from datacurate.readers.base import Batcher, Counted, FilePlan, InputError, ReadTask, Tally, count
from datacurate.text import charset as charsets

SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".warc.wet", ".warc.wet.gz", ".wet.gz", ".wet")
DOCUMENTS = ("response", "resource", "conversion")
COLUMNS = {"url": pa.string(), "date": pa.string(), "content_type": pa.string(), "http_status": pa.int32(),
           "warc_type": pa.string(), "warc_offset": pa.int64(),
           # how the payload was decoded (text/charset.py): the WHATWG encoding, and the U+FFFD it put in
           "charset": pa.string(), "n_replacement_chars": pa.int32()}
GZIP_MAGIC = b"\x1f\x8b\x08"


class Record(NamedTuple):
    """One record, format-neutral: what a row needs (``payload``: HTTP encodings undone)."""

    offset: int
    warc_type: str
    record_id: str | None
    url: str | None
    date: str | None
    content_type: str | None
    charset: str | None  # of the HTTP Content-Type header
    http_status: int | None
    payload: bytes
    damage: str | None = None  # a reject reason: this "record" is damage found at ``offset``


# ----------------------------------------------------------------------------- planning


def _head(path: str, n: int = 4096) -> tuple[bytes, bool]:
    """The first ``n`` bytes of a file's content (decompressed), and whether it is gzip."""
    with storage.open_input(path) as f:
        raw = f.read(n * 4)
    if raw.startswith(GZIP_MAGIC):
        d = zlib.decompressobj(31)
        try:
            return d.decompress(raw, n), True
        except zlib.error:
            return b"", True
    return raw[:n], False


def _kind(head: bytes) -> str | None:
    head = head.lstrip()
    if head.startswith(b"WARC/"):
        return "warc"
    if head.startswith(b"filedesc://"):
        return "arc"
    return None


def sample(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "warc"):
    return None  # no text field to look for: the columns are the record's


def plan(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "warc") -> FilePlan:
    if size == 0:
        return FilePlan([ReadTask(path, source, "warc", end=0)], 0)
    head, gz = _head(path)
    kind = _kind(head)
    if kind is None:
        shown = head[:40].decode("utf-8", "replace").split("\n")[0]
        raise InputError(f"not a WARC or ARC file: {path} (it starts with {shown!r})")
    if kind == "arc" or not gz or size <= cfg.chunk_bytes:
        return FilePlan([ReadTask(path, source, kind, end=size, size=size)], size)
    bounds = [0]
    with storage.open_input(path) as f:
        while bounds[-1] + cfg.chunk_bytes < size:
            pos = _next_member(f, bounds[-1] + cfg.chunk_bytes, size)
            if pos >= size:
                break
            bounds.append(pos)
    bounds.append(size)
    return FilePlan([ReadTask(path, source, "warc", start=a, end=b, size=b - a)
                     for a, b in zip(bounds[:-1], bounds[1:])], size)


def _next_member(f, pos: int, end: int, check: bool = True) -> int:
    """The offset of the first gzip member at or after ``pos`` that starts a WARC record
    (the magic bytes alone may occur inside compressed data; ``check=False``: the first
    magic bytes), or ``end``."""
    while pos < end:
        f.seek(pos)
        buf = f.read(min(1 << 16, end - pos))
        i = buf.find(GZIP_MAGIC)
        if i < 0:
            pos += max(len(buf) - 2, 1)
            continue
        if not check:
            return pos + i
        f.seek(pos + i)
        try:
            head = zlib.decompressobj(31).decompress(f.read(1 << 14), 16)
        except zlib.error:
            head = b""
        if head.startswith(b"WARC/"):
            return pos + i
        pos += i + 1
    return end


def _next_header(f, pos: int, end: int) -> int:
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


# ----------------------------------------------------------------------------- reading


def read(task: ReadTask, cfg: InputConfig, counters: dict, tally: Tally) -> Iterator[pa.Table]:
    batcher, extra = Batcher(task, cfg.batch_rows), {k: [] for k in COLUMNS}
    for rec in records(task, tally):
        if rec.damage is None and rec.warc_type not in DOCUMENTS:
            count(counters.setdefault("warc_records", {}), rec.warc_type or "unknown")
            continue
        tally.records += 1
        tally.bytes += len(rec.payload)
        text, reason, encoding, n_bad = _row(rec, cfg)
        batcher.add(rec.record_id or f"{task.source}@{rec.offset}", text, cfg.default_domain, reason)
        for k, v in zip(COLUMNS, (rec.url, rec.date, rec.content_type, rec.http_status, rec.warc_type, rec.offset,
                                  encoding, n_bad)):
            extra[k].append(v)
        if batcher.full():
            yield _flush(batcher, extra)
    if batcher.ids:
        yield _flush(batcher, extra)


def records(task: ReadTask, tally: Tally | None = None) -> Iterator[Record]:
    """Every record of a task, documents or not, damage included (for tests and tools)."""
    tally = tally if tally is not None else Tally()
    return _arc_records(task, tally) if task.fmt == "arc" else _warc_records(task, tally)


def _flush(batcher: Batcher, extra: dict) -> pa.Table:
    cols = {k: pa.array(v, COLUMNS[k]) for k, v in extra.items()}
    for v in extra.values():
        v.clear()
    return batcher.flush(cols)


def _row(rec: Record, cfg: InputConfig) -> tuple[str, str | None, str | None, int | None]:
    """(text, reject reason or None, encoding, U+FFFD put in) of a document record."""
    if rec.damage is not None:
        return rec.payload.decode("utf-8", "replace"), rec.damage, None, None
    try:
        text, encoding, n_bad, reason = decode(rec.payload, rec.charset, rec.content_type)
    except Exception:  # noqa: BLE001 - no page may end a run: a record that fails is a reject
        return rec.payload.decode("utf-8", "replace"), "input/error", None, None
    if reason is None and not rec.url:
        reason = "input/missing_url"
    if reason is None and len(text) > cfg.max_doc_chars:
        reason = "input/doc_too_large"
    return text, reason, encoding, n_bad


def _warc_records(task: ReadTask, tally: Tally) -> Iterator[Record]:
    """The records of a byte range (whole records from ``start`` on, none past ``end``).
    Damage is one ``Record`` with ``damage`` set, at the damaged record's offset (where
    known, else just after the last good one); reading goes on at the next gzip member or
    record header, and the damage is ``input/truncated_record`` when nothing follows it."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    if task.end <= task.start:
        return
    f = storage.open_input(task.path)
    gz = f.read(3) == GZIP_MAGIC
    pos, pending = task.start, None  # pending: (offset, error) of damage not yet reported
    try:
        while pos < task.end:
            f.seek(pos)
            window, cur, done = Counted(f, task.end - pos), None, None
            try:
                for r in ArchiveIterator(window, record_types=WarcRecordType.any_type, parse_http=True,
                                         auto_decode="none", fsspec_args=False):
                    cur = pos + r.stream_pos
                    tally.consumed = cur - task.start  # the records before this one are whole
                    rec = _fast_record(r, cur)
                    if pending is not None:
                        yield _damage(*pending, "input/corrupt_record")
                        pending = None
                    yield rec
                    done = cur
                if gz and pending is None and not _members_whole(f, done if done is not None else pos, task.end):
                    at = _next_member(f, done + 1, task.end, check=False) if done is not None else pos
                    pending = (min(at, task.end - 1), EOFError("the last gzip member is cut short"))
                pos = task.end
            except OSError as e:
                after = (cur if cur is not None else pos) + 1
                nxt = (_next_member if gz else _next_header)(f, after, task.end)
                if pending is None:  # at the record that failed, else the next member or header after the last good one
                    at = cur if cur is not None and cur != done else (
                        _next_member(f, after, task.end, check=False) if gz else nxt)
                    pending = (min(at, task.end - 1) if at >= task.end else at, e)
                pos = nxt
        if pending is not None:
            yield _damage(*pending, "input/truncated_record" if task.end == _size(task.path) else
                          "input/corrupt_record")
        tally.consumed = task.end - task.start
    finally:
        f.close()


def _members_whole(f, start: int, end: int, most: int = 64 << 20) -> bool:
    """Whether the gzip members from ``start`` (the last record's) to ``end`` are complete:
    FastWARC ends quietly at a member cut short. Past ``most`` bytes it is not checked."""
    if end - start > most:
        return True
    f.seek(start)
    data = f.read(end - start)
    while data:
        d = zlib.decompressobj(31)
        try:
            while d.decompress(data, 1 << 20) and d.unconsumed_tail:
                data = d.unconsumed_tail
        except zlib.error:
            return False
        if not d.eof:
            return False
        data = d.unused_data
    return True


def _size(path: str) -> int:
    return storage.size(path) if storage.is_remote(path) else os.path.getsize(path)


def _damage(offset: int, error: BaseException, reason: str) -> Record:
    return Record(offset, None, None, None, None, None, None, None, str(error).encode(), damage=reason)


def _fast_record(r, offset: int) -> Record:
    h = r.headers
    warc_type = h.get("WARC-Type")
    if warc_type not in DOCUMENTS:
        return Record(offset, warc_type, h.get("WARC-Record-ID"), _url(h.get("WARC-Target-URI")), None, None, None,
                      None, b"")
    raw = r.reader.read()
    http = r.http_headers if r.is_http else None
    if len(raw) < r.content_length:  # the file ended inside this record
        return Record(offset, warc_type, h.get("WARC-Record-ID"), _url(h.get("WARC-Target-URI")),
                      h.get("WARC-Date"), None, None, None, raw, damage="input/truncated_record")
    ctype = charset = None
    if http is not None:
        ctype, charset = _content_type(http.get("Content-Type"))
        raw = _undo_encodings(raw, http.get("Transfer-Encoding"), http.get("Content-Encoding"))
    if ctype is None:
        ctype = _content_type(h.get("WARC-Identified-Payload-Type"))[0]
    if ctype is None and http is None:
        ctype = _content_type(h.get("Content-Type"))[0]
    return Record(offset, warc_type, h.get("WARC-Record-ID"), _url(h.get("WARC-Target-URI")), h.get("WARC-Date"),
                  ctype, charset, http.status_code if http is not None else None, raw)


def _url(value: str | None) -> str | None:
    """A target URI as a URL: wget's ``<...>`` brackets off, spaces escaped (as warcio does)."""
    if not value:
        return None
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    return value.replace(" ", "%20") or None


def _content_type(value: str | None) -> tuple[str | None, str | None]:
    """(media type, lower-case; charset parameter) of a Content-Type value."""
    if not value:
        return None, None
    parts = value.split(";")
    mime = parts[0].strip().lower() or None
    charset = next((p.split("=", 1)[1].strip().strip("\"'") for p in parts[1:]
                    if p.strip().lower().startswith("charset=")), None)
    return mime, charset or None


def _undo_encodings(raw: bytes, transfer: str | None, content: str | None) -> bytes:
    """The payload without HTTP chunking and compression (as received when they do not undo)."""
    if transfer and "chunked" in transfer.lower():
        raw = _dechunk(raw)
    enc = (content or "").strip().lower()
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompress(raw, 47)
        if enc == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -15)
        if enc == "br":
            import brotli

            return brotli.decompress(raw)
    except Exception:  # noqa: BLE001 - a payload that does not decompress is read as stored
        return raw
    return raw


def _dechunk(raw: bytes) -> bytes:
    out, pos = [], 0
    while True:
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            return raw  # not chunked after all (as warcio: the stored bytes)
        try:
            n = int(raw[pos:eol].split(b";")[0].strip(), 16)
        except ValueError:
            return raw
        if n == 0:
            return b"".join(out)
        out.append(raw[eol + 2:eol + 2 + n])
        pos = eol + 2 + n + 2


# ----------------------------------------------------------------------------- ARC


def _gzip_members(f) -> Iterator[tuple[int, bytes]]:
    """(offset, decompressed bytes) of each gzip member of ``f``, read in 1 MB steps."""
    pos, buf, d, out, start = 0, b"", zlib.decompressobj(31), [], 0
    while True:
        chunk = f.read(1 << 20)
        data = buf + chunk
        buf = b""
        while data:
            out.append(d.decompress(data))
            if d.eof:
                consumed = len(data) - len(d.unused_data)
                pos += consumed
                yield start, b"".join(out)
                out, start, data, d = [], pos, d.unused_data, zlib.decompressobj(31)
            else:
                pos += len(data)
                data = b""
        if not chunk:
            if out and any(out):
                raise EOFError(b"".join(out))  # a member cut short
            return


def _arc_records(task: ReadTask, tally: Tally) -> Iterator[Record]:
    """ARC v1/v2: a header line ``URL IP date content-type [...] length``, ``length``
    bytes (HTTP response and body), a newline. A ``.gz`` ARC is one member per record."""
    with storage.open_stream(task.path) as raw:
        f = Counted(raw)
        if task.path.lower().endswith(".gz"):
            try:
                for offset, data in _gzip_members(f):
                    yield from _arc_parse(data, offset, task.source, per_member=True)
            except (EOFError, zlib.error) as e:
                yield _damage(f.n, ValueError("gzip member cut short or corrupt"),
                              "input/truncated_record" if isinstance(e, EOFError) else "input/corrupt_record")
        else:
            yield from _arc_parse(f.read(), 0, task.source, per_member=False)
        tally.consumed = f.n


_ARC_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9+.\-]*://\S*[^\n]* -?\w+\r?$", re.M)


def _arc_parse(data: bytes, base: int, source: str, per_member: bool) -> Iterator[Record]:
    """The records of ARC bytes; a header with no valid length is damage (a reject, or a
    ``filedesc`` counted as warcinfo), and parsing resumes at the next header line."""
    pos, n = 0, len(data)
    while pos < n:
        eol = data.find(b"\n", pos)
        eol = n if eol < 0 else eol
        line = data[pos:eol].rstrip(b"\r")
        if not line.strip():
            pos = eol + 1
            continue
        offset = base if per_member else base + pos
        fields = line.split(b" ")
        url = b" ".join(fields[:-4]).decode("utf-8", "replace")
        length = int(fields[-1]) if len(fields) >= 5 and fields[-1].isdigit() else None
        if length is None:  # resume at the next line that looks like a header
            m = _ARC_HEADER.search(data, eol + 1)
            pos = m.start() if m else n
            if url.startswith("filedesc://"):
                yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            else:
                yield _damage(offset, ValueError(f"ARC header without a valid length: {line[:200]!r}"),
                              "input/corrupt_record")
            continue
        body = data[eol + 1:eol + 1 + length]
        pos = eol + 1 + length
        if url.startswith("filedesc://"):
            yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            continue
        date = fields[-3].decode("ascii", "replace")
        ctype = _content_type(fields[-2].decode("ascii", "replace"))[0]
        status, charset, payload, headers = None, None, body, {}
        if body.startswith(b"HTTP/"):
            status, headers, payload = _http(body)
        declared = headers.get("content-length", "")
        if len(body) < length and not (declared.isdigit() and len(payload) >= int(declared)):
            # cut short (a record whose HTTP body is whole, but for a miscounted ARC length, is read)
            yield Record(offset, "response", None, _url(url), date, ctype, None, None, body,
                         damage="input/truncated_record")
            continue
        if headers.get("content-type"):
            ctype, charset = _content_type(headers["content-type"])
        payload = _undo_encodings(payload, headers.get("transfer-encoding"), headers.get("content-encoding"))
        yield Record(offset, "response", None, _url(url), date, ctype, charset, status, payload)


def _http(body: bytes) -> tuple[int | None, dict, bytes]:
    end = body.find(b"\r\n\r\n")
    sep = 4
    if end < 0 or (0 <= body.find(b"\n\n") < end):
        end, sep = body.find(b"\n\n"), 2
    if end < 0:
        return None, {}, body
    lines = body[:end].decode("iso-8859-1").splitlines()
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, body
    headers = {}
    for h in lines[1:]:
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body[end + sep:]


# ----------------------------------------------------------------------------- decoding


def decode(payload: bytes, charset: str | None, content_type: str | None) -> tuple[str, str | None, int, str | None]:
    """(text, WHATWG encoding or None, U+FFFD put in, reject reason or None) of a payload: a
    binary one is empty text; a text one is decoded as a browser does (text/charset.py),
    and rejected only when its bytes are not text at all (``input/not_text``)."""
    if not charsets.is_text(content_type, payload):
        return "", None, 0, None
    d = charsets.decode(payload, charset)
    return d.text, d.encoding, d.n_replacement_chars, "input/not_text" if d.not_text else None
