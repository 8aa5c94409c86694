"""JSON lines (``.jsonl``, ``.ndjson``, ``.json``; plain, ``.gz`` or ``.zst``), and a
``.json`` file that holds one JSON array of records (``input.format: json``, or found by
its first byte with ``auto``).

A plain file is cut into read tasks at line boundaries (``input.chunk_bytes``; line
numbers counted on the driver so derived ids stay stable); a compressed file is one task
that reads its stream to the end; a JSON array is parsed whole (one task). Bad records
never raise: ``input/malformed_json``, ``input/invalid_utf8``, ``input/missing_text``,
``input/null_text``, ``input/non_string_text``, ``input/not_an_object``,
``input/doc_too_large``, and ``input/error`` for a record whose reading raised anyway (its
line kept as text: no record ends a run). A record without an id gets ``<source>:<line>`` (for an array,
``<source>:<n>``, its 1-based position).
"""

from __future__ import annotations

import gzip
import io
from typing import Iterator

import orjson

from datacurate.formats import fields, storage
from datacurate.configs.input import InputConfig
from datacurate.readers.base import (
    COMPRESSED, SAMPLE_RECORDS, Batcher, Counted, FieldStats, FilePlan, ReadTask, Tally, count, field_str,
)

SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz", ".jsonl.zst", ".jsonl.zstd",
            ".json.zst")
ARRAY_SUFFIXES = (".json", ".json.gz", ".json.zst")  # where auto looks for an array


def is_array(path: str) -> bool:
    """Whether a file's first non-blank byte opens a JSON array."""
    with _stream(path) as f:
        head = f.read(4096).lstrip()
    return head.startswith(b"[")


def plan(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "jsonl") -> FilePlan:
    if fmt == "json" or path.lower().endswith(COMPRESSED):
        return FilePlan([ReadTask(path, source, fmt, end=size, size=size, whole=True)], size)
    return FilePlan([ReadTask(path, source, fmt, start=a, end=b, first_line=line, size=b - a)
                     for a, b, line in _split(path, size, cfg.chunk_bytes)], size)


def sample(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "jsonl",
           n: int = SAMPLE_RECORDS) -> FieldStats:
    """The fields of the first ``n`` records (for the text-field and column-name checks)."""
    st = FieldStats()
    if fmt == "json":
        objs = _array(path)[0]
        records = objs if isinstance(objs, list) else [objs]
    else:
        records = _first_objects(ReadTask(path, source, fmt, end=size, whole=path.lower().endswith(COMPRESSED)), n)
    for obj in records:
        if isinstance(obj, dict):
            st.records += 1
            for k, v in obj.items():
                st.add(k, v)
            if st.records >= n:
                break
    return st


def _first_objects(task: ReadTask, n: int) -> Iterator:
    for raw in _open_lines(task, Tally()):
        try:
            yield orjson.loads(raw) if raw.strip() else None
        except orjson.JSONDecodeError:
            continue  # a malformed line is its own reject, not a missing field


def read(task: ReadTask, cfg: InputConfig, counters: dict, tally: Tally) -> Iterator:
    batcher = Batcher(task, cfg.batch_rows, cfg)
    records = _read_array(task, cfg, tally) if task.fmt == "json" else _read_lines(task, cfg, counters, tally)
    for record in records:
        batcher.add(*record)
        if batcher.full():
            yield batcher.flush()
    last = batcher.flush()
    if last is not None:
        yield last


def _split(path: str, size: int, chunk: int) -> list[tuple[int, int, int]]:
    if size <= chunk:
        return [(0, size, 1)]
    bounds = [0]
    with storage.open_input(path) as f:
        while bounds[-1] + chunk < size:
            pos = _next_line(f, bounds[-1] + chunk, not storage.is_remote(path))
            if pos >= size:
                break
            bounds.append(pos)
        bounds.append(size)
        out, line = [], 1
        for a, b in zip(bounds[:-1], bounds[1:]):
            out.append((a, b, line))
            line += sum(buf.count(b"\n") for buf in storage.iter_chunks(f, a, b))
    return out


def _next_line(f, pos: int, local: bool) -> int:
    """The offset of the first line that starts after ``pos`` (or EOF)."""
    f.seek(pos)
    if local:
        f.readline()  # move to the start of the next line
        return f.tell()
    while True:  # an object store's file: no buffered readline, read 64 KB at a time
        buf = f.read(1 << 16)
        if not buf:
            return pos
        i = buf.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(buf)


def _stream(path: str, raw=None):
    """The decompressed bytes of a whole file (``raw``: the stored stream to read from)."""
    raw = raw if raw is not None else storage.open_stream(path)
    low = path.lower()
    if low.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if low.endswith((".zst", ".zstd")):
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True), 1 << 20)
    return raw


def _open_lines(task: ReadTask, tally: Tally) -> Iterator[bytes]:
    """The lines of a task; ``tally.consumed``: the bytes of the stored file they came from
    (a compressed stream's, once it was read to its end)."""
    if task.whole:
        with storage.open_stream(task.path) as stored:
            raw = Counted(stored)
            with _stream(task.path, raw) as f:
                yield from f
        tally.consumed += raw.n
    elif storage.is_remote(task.path):
        yield from _range_lines(task, tally)
    else:
        with open(task.path, "rb") as f:
            f.seek(task.start)
            remaining = task.end - task.start
            while remaining > 0:
                line = f.readline(remaining)
                if not line:
                    break
                remaining -= len(line)
                tally.consumed += len(line)
                yield line


def _range_lines(task: ReadTask, tally: Tally) -> Iterator[bytes]:
    """The lines of a byte range of an object (ranged GETs of 8 MB), as readline gives them."""
    rest = b""
    with storage.open_input(task.path) as f:
        for buf in storage.iter_chunks(f, task.start, task.end, 8 << 20):
            lines = (rest + buf).split(b"\n")
            rest = lines.pop()
            for line in lines:
                tally.consumed += len(line) + 1
                yield line + b"\n"
    if rest:
        tally.consumed += len(rest)
        yield rest


_MISSING = object()


def _read_lines(task: ReadTask, cfg: InputConfig, counters: dict, tally: Tally):
    default_domain = cfg.default_domain
    taken = frozenset(task.taken or ())
    for lineno, raw in enumerate(_open_lines(task, tally), start=task.first_line):
        tally.lines += 1
        tally.bytes += len(raw)
        if not raw.strip():
            count(counters, "blank_lines")
            continue
        tally.records += 1
        derived = f"{task.source}:{lineno}"
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                if cfg.invalid_utf8 == "replace":
                    try:
                        obj = orjson.loads(raw.decode("utf-8", "replace"))
                    except orjson.JSONDecodeError:
                        yield derived, raw.decode("utf-8", "replace"), default_domain, "input/malformed_json"
                        continue
                else:
                    yield derived, raw.decode("utf-8", "replace"), default_domain, "input/invalid_utf8"
                    continue
            else:
                yield derived, raw.decode("utf-8").rstrip("\n"), default_domain, "input/malformed_json"
                continue
        yield _safe_row(obj, derived, raw, cfg, taken)


def _safe_row(obj, derived: str, raw: bytes | None, cfg: InputConfig, taken: frozenset) -> tuple:
    """:func:`_row`, and where it raises (a record no rule foresaw), ``input/error`` with the
    record's text as it came: no record ends a run."""
    try:
        return _row(obj, derived, raw, cfg, taken)
    except Exception:  # noqa: BLE001 - one record's failure is that record's reject reason
        text = raw.decode("utf-8", "replace").rstrip("\n") if raw is not None else repr(obj)
        return derived, text, cfg.default_domain, "input/error"


def _row(obj, derived: str, raw: bytes | None, cfg: InputConfig, taken: frozenset) -> tuple:
    """One parsed record as a row: (id, text, domain, reason[, record]); ``raw`` is its line
    (None: an array element, whose JSON is written again when a reject keeps it)."""
    default_domain = cfg.default_domain
    if not isinstance(obj, dict):
        return derived, _raw(raw, obj), default_domain, "input/not_an_object"
    id_ = field_str(obj.get(cfg.id_field), derived)
    domain = field_str(obj.get(cfg.domain_field), default_domain)
    text = obj.get(cfg.text_field, _MISSING)
    if not taken.isdisjoint(obj):  # a field named as a column the run adds, past the planned sample
        return id_, _raw(raw, obj), domain, fields.RESERVED_REASON
    if text is _MISSING or text is None:  # the raw line is kept: the record is not lost
        reason = "input/missing_text" if text is _MISSING else "input/null_text"
        return id_, _raw(raw, obj), domain, reason, obj
    if not isinstance(text, str):
        return id_, orjson.dumps(text).decode(), domain, "input/non_string_text", obj
    if len(text) > cfg.max_doc_chars:
        return id_, text, domain, "input/doc_too_large", obj
    return id_, text, domain, None, obj


def _raw(raw: bytes | None, obj) -> str:
    return raw.decode("utf-8", "replace").rstrip("\n") if raw is not None else orjson.dumps(obj).decode()


def _array(path: str) -> tuple[object, bytes, int]:
    """(the parsed document or ``_MISSING``, its bytes, stored bytes consumed)."""
    with storage.open_stream(path) as stored:
        raw = Counted(stored)
        with _stream(path, raw) as f:
            data = f.read()
    try:
        return orjson.loads(data), data, raw.n
    except orjson.JSONDecodeError:
        return _MISSING, data, raw.n


def _read_array(task: ReadTask, cfg: InputConfig, tally: Tally):
    """A JSON array of records: each element a row; a file that does not parse is one
    ``input/malformed_json`` reject holding its text."""
    doc, data, consumed = _array(task.path)
    tally.consumed += consumed
    tally.bytes += len(data)
    tally.lines += data.count(b"\n")
    if doc is _MISSING:
        tally.records += 1
        try:
            data.decode("utf-8")
            reason = "input/malformed_json"
        except UnicodeDecodeError:
            reason = "input/invalid_utf8"
        yield f"{task.source}:1", data.decode("utf-8", "replace"), cfg.default_domain, reason
        return
    taken = frozenset(task.taken or ())
    for i, obj in enumerate(doc if isinstance(doc, list) else [doc], start=1):
        tally.records += 1
        yield _safe_row(obj, f"{task.source}:{i}", None, cfg, taken)
