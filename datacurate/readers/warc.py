"""WARC, WET and ARC files (``input.format: warc``; by name ``.warc[.gz]``, ``.warc.wet[.gz]``,
``.wet.gz``, ``.arc[.gz]``), read with FastWARC (ARC, which FastWARC does not read, by a
small parser here: ARC v1 and v2 headers, by the version the file's ``filedesc`` declares).

Every ``response``, ``resource`` and ``conversion`` (WET) record is one document (but a
resource record of no web URL, such as wget's own log: :func:`is_document`): ``id`` =
``WARC-Record-ID``, ``url`` = ``WARC-Target-URI``, ``date`` = ``WARC-Date`` (ARC: the
``Archive-date``) in one form, ISO 8601 UTC to the microsecond
(``2014-02-16T05:02:21.000000Z``, :mod:`datacurate.text.dates`; as written when it is no
date), ``content_type`` (the HTTP ``Content-Type``, else ``WARC-Identified-Payload-Type``,
else the record's), ``http_status`` (null for records without HTTP), ``warc_type``,
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
(``request``, ``warcinfo``, ``metadata``, ``revisit``, ``resource (metadata:)``) are
counted by type in ``stats.json`` (``input_files.warc_records``) and the report's funnel.

A ``.gz`` file larger than ``input.chunk_bytes`` is cut into read tasks at gzip member
boundaries (found near each cut and checked to start a WARC record); a task reads whole
records only, so memory is one record, flat in file size. Damage never ends a file and
is counted per record: every record whose bytes are damaged (cut short, a corrupt gzip
member, a malformed header) is one ``input/truncated_record`` / ``input/corrupt_record``
reject, never zero and never one invented; reading resumes at the next member (or record
header), and the records before and after survive (:func:`_warc_records`;
tests/test_warc_damage.py checks it against warcio at many cut and corrupt offsets). A record
without a target URI is ``input/missing_url``; a payload over ``max_doc_chars``
``input/doc_too_large``. A file that is not a WARC or ARC at all is one line before any work.
"""

from __future__ import annotations

import io
import os
import re
import zlib
from typing import Iterator, NamedTuple

import pyarrow as pa

from datacurate.formats import storage
from datacurate.configs.input import InputConfig
from datacurate.readers.base import Batcher, Counted, FilePlan, InputError, ReadTask, Tally, count
from datacurate.text import charset as charsets
from datacurate.text.dates import iso_utc

SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".warc.wet", ".warc.wet.gz", ".wet.gz", ".wet")
DOCUMENTS = ("response", "resource", "conversion")
WEB_SCHEMES = ("http:", "https:", "ftp:")  # a resource record of another scheme is not a document (is_document)
COLUMNS = {"url": pa.string(), "date": pa.string(), "content_type": pa.string(), "http_status": pa.int32(),
           "warc_type": pa.string(), "warc_offset": pa.int64(),
           # how the payload was decoded (text/charset.py): the WHATWG encoding, and the U+FFFD it put in
           "charset": pa.string(), "n_replacement_chars": pa.int32()}
GZIP_MAGIC = b"\x1f\x8b\x08"
SCAN_BYTES = 1 << 20  # planning looks this far past a cut (or a quarter chunk) for the next record's gzip member


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
        if min(_next_member(f, 1, limit), _next_header(f, 1, limit)) < limit:
            return "warc"
        return "arc" if _next_member(f, 1, limit, _ARC_START) < limit else None


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
            pos = _next_member(f, cut, window)
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


_WARC_START = re.compile(rb"WARC/\d")
_ARC_START = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]*://")


def _next_member(f, pos: int, end: int, start: re.Pattern = _WARC_START) -> int:
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
        if rec.damage is None and not is_document(rec):
            count(counters.setdefault("warc_records", {}), _kind_of(rec))
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


def is_document(rec: Record) -> bool:
    """A ``response``, ``conversion`` or ``resource`` record, except a resource whose target is
    no web URL. WARC 1.1 (ISO 28500, 6.6): a resource record holds "a resource, without full
    protocol response information", such as a page captured without its HTTP headers (warcio's
    example-resource.warc.gz: http://example.com/), a document; GNU wget writes its own
    arguments and log as resource records of ``metadata://gnu.org/software/wget/warc/...``,
    the crawler's files, not the crawl's. A resource without a target URI stays a document
    (``input/missing_url``): it is accounted, never dropped unseen."""
    if rec.warc_type not in DOCUMENTS:
        return False
    return rec.warc_type != "resource" or not rec.url or rec.url.lower().startswith(WEB_SCHEMES)


def _kind_of(rec: Record) -> str:
    """A non-document record's key in ``warc_records``: its type (a resource: and its URI scheme)."""
    if rec.warc_type == "resource" and rec.url:
        return f"resource ({rec.url.split(':', 1)[0].lower()}:)"
    return rec.warc_type or "unknown"


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
    size = _size(task.path)
    f = raw = storage.open_input(task.path, block=storage.REMOTE_RANGE)  # on S3: 8 MB ranges, not one GET per member or 64 KB
    try:
        gz = f.read(3) == GZIP_MAGIC or task.path.lower().endswith(".gz")
        at_eof = task.end == size
        yield from (_gz_records if gz else _plain_records)(f, task, tally, at_eof)
        tally.consumed = task.end - task.start
    finally:
        raw.close()


MEMBER_IN_MEMORY = 64 << 20  # a gzip member up to this size (decompressed) is read from memory, a larger one streamed


def _gz_records(f, task: ReadTask, tally: Tally, at_eof: bool) -> Iterator[Record]:
    pos = task.start
    while pos < task.end:
        tally.consumed = pos - task.start  # the records before this member are whole
        data, nxt = _inflate(f, pos, task.end, MEMBER_IN_MEMORY)
        if nxt is not None:  # a whole member
            n = 0
            for n, rec in enumerate(_member_records(f, pos, nxt, data), 1):
                yield rec
            if n == 0 and (data is None or data.strip()):
                yield _damage(pos, ValueError("a gzip member that holds no WARC record"), "input/corrupt_record")
            pos = nxt
            continue
        nxt = _next_member(f, pos + 1, task.end)
        if _padding(f, pos, nxt):
            pos = nxt
            continue
        reason = "input/truncated_record" if at_eof and nxt >= task.end else "input/corrupt_record"
        lost = _lost_members(f, pos, nxt)
        yield from _damaged_member(_member_records(f, pos, nxt, data), pos, reason, lost)
        pos = nxt


def _padding(f, start: int, end: int) -> bool:
    """Whether the bytes from ``start`` to ``end`` are padding (zeros, blanks), no record."""
    f.seek(start)
    return end - start <= 1 << 16 and not f.read(end - start).strip(b"\0\r\n\t ")


def _damaged_member(records: Iterator[Record], pos: int, reason: str, lost: list[int]) -> Iterator[Record]:
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
    yield held._replace(damage=reason) if held is not None else _damage(
        pos, ValueError("a gzip member cut short or corrupt"), reason)
    for at in lost:
        yield _damage(at, ValueError("a gzip member with a damaged header"), "input/corrupt_record")


def _inflate(f, pos: int, end: int, most: int | None) -> tuple[bytes | None, int | None]:
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


def _member_records(f, pos: int, end: int, data: bytes | None) -> Iterator[Record]:
    """The records of the gzip member at ``pos``: parsed from its decompressed ``data``, or
    (too large to hold) streamed from the file up to ``end``. Each has the member's offset."""
    if data is not None:
        return _parse(io.BytesIO(data), lambda r: pos)
    f.seek(pos)
    return _parse(Counted(f, end - pos), lambda r: pos)


def _parse(stream, offset_of) -> Iterator[Record]:
    """FastWARC's records of a stream; one that does not parse ends it, as damage."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    at = None
    try:
        for r in ArchiveIterator(stream, record_types=WarcRecordType.any_type, parse_http=True, auto_decode="none",
                                 fsspec_args=False):
            at = offset_of(r)
            yield _fast_record(r, at)
    except OSError as e:
        yield _damage(at if at is not None else offset_of(None), e, "input/corrupt_record")


def _lost_members(f, start: int, end: int, record: re.Pattern = _WARC_START, most: int = 1 << 20) -> list[int]:
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


def _plain_records(f, task: ReadTask, tally: Tally, at_eof: bool) -> Iterator[Record]:
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
            f.seek(pos)
            yield from _parse(Counted(f, min(rec_end + 4, task.end) - pos), lambda r: pos)
            pos = rec_end
            continue
        nxt = _next_header(f, pos + 1, task.end)
        cut = at_eof and nxt >= task.end and (rec_end is not None or len(head) == task.end - pos)
        yield _damage(pos, ValueError(error or "the file ends inside this record"),
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
                      _date(h.get("WARC-Date")), None, None, None, raw, damage="input/truncated_record")
    ctype = charset = None
    if http is not None:
        ctype, charset = _content_type(http.get("Content-Type"))
        raw = _undo_encodings(raw, http.get("Transfer-Encoding"), http.get("Content-Encoding"))
    if ctype is None:
        ctype = _content_type(h.get("WARC-Identified-Payload-Type"))[0]
    if ctype is None and http is None:
        ctype = _content_type(h.get("Content-Type"))[0]
    return Record(offset, warc_type, h.get("WARC-Record-ID"), _url(h.get("WARC-Target-URI")), _date(h.get("WARC-Date")),
                  ctype, charset, http.status_code if http is not None else None, raw)


def _date(value: str | None) -> str | None:
    """A WARC-Date (or ARC date) in one form, ISO 8601 UTC to the microsecond; as written when it is no date."""
    return iso_utc(value) or value


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


def _arc_records(task: ReadTask, tally: Tally) -> Iterator[Record]:
    """ARC v1/v2 (the Internet Archive's ARC file format): a header line per record,
    ``length`` bytes (HTTP response and body), a newline. The ``filedesc://`` record's
    body names the version and the header's fields: v1 ``URL IP-address Archive-date
    Content-type Archive-length``, v2 ``URL IP-address Archive-date Content-type
    Result-code Checksum Location Offset Filename Archive-length``. A ``.gz`` ARC is one
    member per record, each checked as a WARC's (:func:`_gz_records`): a damaged member is
    one reject, reading goes on at the next member that starts a record."""
    fields = list(_ARC_FIELDS[1])  # v1 until the file's version block says otherwise
    size = _size(task.path)
    with storage.open_input(task.path) as f:
        if f.read(3) != GZIP_MAGIC and not task.path.lower().endswith(".gz"):
            f.seek(0)
            yield from _arc_parse(f.read(), 0, fields, per_member=False)
            tally.consumed = size
            return
        pos = 0
        while pos < size:
            tally.consumed = pos
            data, nxt = _inflate(f, pos, size, most=None)  # an ARC member is parsed in memory
            if nxt is not None:
                yield from _arc_parse(data, pos, fields, per_member=True)
                pos = nxt
                continue
            nxt = _next_member(f, pos + 1, size, _ARC_START)
            reason = "input/truncated_record" if nxt >= size else "input/corrupt_record"
            yield from _damaged_member(_arc_parse(data, pos, fields, per_member=True), pos, reason,
                                       _lost_members(f, pos, nxt, _ARC_START))
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


def _arc_parse(data: bytes, base: int, fields: list, per_member: bool) -> Iterator[Record]:
    """The records of ARC bytes (``fields``: the header's field names, updated by a
    ``filedesc`` record); a header with no valid length is damage (a reject, or a
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
        if eol == n and not per_member:  # the file ends inside this header line
            yield _damage(offset, ValueError(f"ARC header cut short: {line[:200]!r}"), "input/truncated_record")
            return
        values = line.split(b" ")
        filedesc = line.startswith(b"filedesc://")
        width = len(values) if filedesc else len(fields)  # the filedesc line is written in its own version
        length = int(values[-1]) if len(values) >= width and values[-1].isdigit() else None
        if length is None:  # resume at the next line that looks like a header
            m = _ARC_HEADER.search(data, eol + 1)
            pos = m.start() if m else n
            if filedesc:
                yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            else:
                yield _damage(offset, ValueError(f"ARC header without a valid length: {line[:200]!r}"),
                              "input/corrupt_record")
            continue
        body = data[eol + 1:eol + 1 + length]
        pos = eol + 1 + length
        if filedesc and len(body) < length:
            yield _damage(offset, ValueError("ARC file header cut short"), "input/truncated_record")
            continue
        if filedesc:
            fields[:] = _arc_version(body)
            yield Record(offset, "warcinfo", None, None, None, None, None, None, b"")
            continue
        # the URL may hold spaces: the other fields are the last width - 1 values
        head = dict(zip(fields[1:], values[len(values) - width + 1:]))
        url = b" ".join(values[:len(values) - width + 1]).decode("utf-8", "replace")
        date = _date(head["Archive-date"].decode("ascii", "replace"))
        ctype = _content_type(head["Content-type"].decode("ascii", "replace"))[0]
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
