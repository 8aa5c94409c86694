"""WARC, WET, WAT and ARC files (``input.format: warc``; by name ``.warc[.gz]``, ``.warc.wet[.gz]``,
``.wet.gz``, ``.warc.wat[.gz]``, ``.arc[.gz]``), read with FastWARC (ARC, which FastWARC does not read, by a
small parser here: ARC v1 and v2 headers, by the version the file's ``filedesc`` declares).

Every ``response``, ``resource`` and ``conversion`` (WET) record is one document (but one
whose target is no web URL: Heritrix's ``dns:`` lookups, wget's own log, a browser's
``chrome-extension://`` files, counted by type and scheme: :func:`is_document`): ``id`` =
``WARC-Record-ID`` (``<source>#<id>`` when the run reads several archive files, which may hold
the same records: each row its own id), ``url`` = ``WARC-Target-URI``, ``date`` = ``WARC-Date`` (ARC: the
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
counted by type in ``stats.json`` (``input_files.warc_records``) and the report's funnel,
and each file by kind (``input_files.archive_files``: WARC, WET, WAT, ARC; a WAT holds
``metadata`` records only: counted, no rows).

A ``.gz`` file larger than ``input.chunk_bytes`` is cut into read tasks at gzip member
boundaries (found near each cut and checked to start a WARC record); a task reads whole
records only, so memory is one record, flat in file size. Damage never ends a file and
is counted per record: every record whose bytes are damaged (cut short, a corrupt gzip
member, a malformed header) is one ``input/truncated_record`` / ``input/corrupt_record``
reject, never zero and never one invented; reading resumes at the next member (or record
header), and the records before and after survive (:mod:`datacurate.readers.archive.damage`;
tests/test_warc_damage.py checks it against warcio at many cut and corrupt offsets). A record
without a target URI is ``input/missing_url``; a payload over ``max_doc_chars``
``input/doc_too_large``: a payload is held only up to 4 x ``max_doc_chars`` bytes, stored and
HTTP-decoded (gzip, deflate, brotli inflated to that cap and no further: a decompression
bomb costs the cap), the rest read and counted, never held; a binary payload (its media
type not text) is not held at all, nor is an uncompressed ARC file (read in 8 MB windows).
A file that is not a WARC or ARC at all is one line before any work.

The parts, by concern, are in :mod:`datacurate.readers.archive` (planning, WARC, ARC, damage
recovery, HTTP decoding); this module is the reader contract: records into rows.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from datacurate.configs.input import InputConfig
from datacurate.readers.base import Batcher, ReadTask, Tally, count
from datacurate.readers.archive.arcfile import arc_records
from datacurate.readers.archive.http import decode, payload_cap
from datacurate.readers.archive.plan import plan, sample
from datacurate.readers.archive.record import DOCUMENTS, WEB_SCHEMES, Record, target_url
from datacurate.readers.archive.warcfile import warc_records

__all__ = ["COLUMNS", "DOCUMENTS", "SUFFIXES", "Record", "decode", "is_document", "plan", "read", "records", "sample",
           "target_url"]

SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".warc.wet", ".warc.wet.gz", ".wet.gz", ".wet",
            ".warc.wat", ".warc.wat.gz", ".wat.gz", ".wat")
KINDS = ((".wat", "WAT"), (".wet", "WET"), (".arc", "ARC"))  # a file's kind by its name (else "WARC")


COLUMNS = {"url": pa.string(), "date": pa.string(), "content_type": pa.string(), "http_status": pa.int32(),
           "warc_type": pa.string(), "warc_offset": pa.int64(),
           # how the payload was decoded (text/charset.py): the WHATWG encoding, and the U+FFFD it put in
           "charset": pa.string(), "n_replacement_chars": pa.int32()}


def read(task: ReadTask, cfg: InputConfig, counters: dict, tally: Tally) -> Iterator[pa.Table]:
    batcher, extra = Batcher(task, cfg.batch_rows), {k: [] for k in COLUMNS}
    if task.start == 0:  # the file's first task names its kind: a WAT's records are all counted, none a row
        count(counters.setdefault("archive_files", {}), file_kind(task.path))
    for rec in records(task, tally, payload_cap(cfg.max_doc_chars)):
        if rec.damage is None and not is_document(rec):
            count(counters.setdefault("warc_records", {}), _kind_of(rec))
            continue
        tally.records += 1
        tally.bytes += len(rec.payload)
        text, reason, encoding, n_bad = _row(rec, cfg)
        batcher.add(_row_id(rec, task), text, cfg.default_domain, reason)
        for k, v in zip(COLUMNS, (rec.url, rec.date, rec.content_type, rec.http_status, rec.warc_type, rec.offset,
                                  encoding, n_bad)):
            extra[k].append(v)
        if batcher.full():
            yield _flush(batcher, extra)
    if batcher.ids:
        yield _flush(batcher, extra)


def _row_id(rec: Record, task: ReadTask) -> str:
    """The record's ``WARC-Record-ID``; with several archive files in the run, qualified by the
    file (``<source>#<id>``: two files may hold the same records); none (ARC, damage): ``<source>@<offset>``."""
    if rec.record_id is None:
        return f"{task.source}@{rec.offset}"
    return f"{task.source}#{rec.record_id}" if task.qualify_ids else rec.record_id


def file_kind(path: str) -> str:
    """"WARC", "WET" (Common Crawl's extracted text), "WAT" (its metadata, JSON in ``metadata``
    records) or "ARC", by the file's name."""
    low = path.lower().removesuffix(".gz")
    return next((kind for suffix, kind in KINDS if low.endswith(suffix)), "WARC")


def is_document(rec: Record) -> bool:
    """A ``response``, ``conversion`` or ``resource`` record, except one whose target is no web
    URL (http, https, ftp): Heritrix's ``dns:`` lookups, a browser's ``chrome-extension://``
    files, a crawler's own ``metadata://`` files are counted by type and scheme, never rows. WARC 1.1 (ISO 28500, 6.6): a resource record holds "a resource, without full
    protocol response information", such as a page captured without its HTTP headers (warcio's
    example-resource.warc.gz: http://example.com/), a document; GNU wget writes its own
    arguments and log as resource records of ``metadata://gnu.org/software/wget/warc/...``,
    the crawler's files, not the crawl's. A resource without a target URI stays a document
    (``input/missing_url``): it is accounted, never dropped unseen."""
    if rec.warc_type not in DOCUMENTS:
        return False
    return not rec.url or rec.url.lower().startswith(WEB_SCHEMES)


def _kind_of(rec: Record) -> str:
    """A non-document record's key in ``warc_records``: its type (a response, resource or
    conversion of another scheme: and that scheme, ``response (dns:)``)."""
    if rec.warc_type in DOCUMENTS and rec.url:
        return f"{rec.warc_type} ({rec.url.split(':', 1)[0].lower()}:)"
    return rec.warc_type or "unknown"


def records(task: ReadTask, tally: Tally | None = None, cap: int | None = None) -> Iterator[Record]:
    """Every record of a task, documents or not, damage included; payloads whole (for tests and
    tools), or with ``cap`` held up to ``cap`` bytes (:func:`payload_cap`: a row's reading)."""
    tally = tally if tally is not None else Tally()
    return arc_records(task, tally, cap) if task.fmt == "arc" else warc_records(task, tally, cap)


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
    if reason is None and (rec.oversize or len(text) > cfg.max_doc_chars):
        reason = "input/doc_too_large"
    return text, reason, encoding, n_bad
