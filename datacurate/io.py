"""Readers and writers: the only module that touches data files.

Reading is planned on the driver as a list of small :class:`ReadTask` descriptions
(a file, or a byte range of a plain JSONL file, or a Parquet row group range) and
executed anywhere by :func:`read_task`, which yields Arrow batches in the common
schema. Bad records never raise: they become rows with ``reject_stage = "input"`` and
a reason (``input/malformed_json``, ``input/invalid_utf8``, ``input/missing_text``,
``input/null_text``, ``input/non_string_text``, ``input/not_an_object``,
``input/doc_too_large``) so that ``read == kept + rejected`` holds for every run.

A record without an id gets ``<source>:<line>`` (1-based line, or 0-based row for
Parquet), stable across runs and worker counts.
"""

from __future__ import annotations

import glob
import gzip
import io
import itertools
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datacurate import fields, storage
from datacurate.input_config import InputConfig
from datacurate.schema import (
    BASE_COLUMNS, DOMAIN, ID, INPUT_STAGE, ORD, REJECT_REASON, REJECT_STAGE, SOURCE, TEXT, is_internal,
)

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".jsonl.zst", ".jsonl.zstd", ".json.zst")
PARQUET_SUFFIXES = (".parquet", ".pq")


class InputError(ValueError):
    """An input path that cannot be read (reported before any work starts)."""


@dataclass
class ReadTask:
    path: str  # absolute path
    source: str  # the name written to the `source` column and used in derived ids
    fmt: str  # "jsonl" | "parquet"
    index: int = 0  # task number: names the part files
    start: int = 0  # jsonl: byte offset; parquet: first row group
    end: int = -1  # jsonl: byte end (-1 = EOF); parquet: row group end (exclusive)
    first_line: int = 1  # jsonl: line number of the first line in the range; parquet: first row
    size: int = 0  # bytes to read (for progress)
    taken: list[str] | None = None  # raw field names a record may not hold; None: keep no extra fields
    json_fields: list[str] = field(default_factory=list)  # parquet: fields kept as JSON text (types differ)

    def to_dict(self) -> dict:
        return asdict(self)


def detect_format(path: str, fmt: str) -> str | None:
    if fmt != "auto":
        return fmt
    low = path.lower()
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return None


def expand_inputs(paths: list[str], fmt: str = "auto") -> list[tuple[str, str]]:
    """Files, directories (recursive) and globs -> sorted [(absolute path or URL, source name)]."""
    found: dict[str, str] = {}
    for spec in paths:
        if storage.is_remote(spec):
            found.update(_expand_remote(spec, fmt))
            continue
        spec = storage.local_path(spec)
        p = Path(spec).expanduser()
        if any(ch in spec for ch in "*?["):
            matches = sorted(glob.glob(str(p), recursive=True))
            if not matches:
                raise InputError(f"input glob matched no files: {spec}")
            base = Path(spec.split("*")[0].rsplit("/", 1)[0] or ".")
            for m in matches:
                if os.path.isfile(m):
                    found[os.path.abspath(m)] = _rel(m, base)
        elif p.is_dir():
            files = [f for f in sorted(p.rglob("*")) if f.is_file() and detect_format(f.name, fmt)]
            if not files:
                raise InputError(f"input directory has no JSONL or Parquet files: {spec}")
            for f in files:
                found[str(f.resolve())] = _rel(str(f), p)
        elif p.is_file():
            found[str(p.resolve())] = p.name
        else:
            raise InputError(f"input not found: {spec}")
    out = []
    for path, source in sorted(found.items(), key=lambda kv: kv[1]):
        if detect_format(path, fmt) is None:
            if any(ch in s for s in paths for ch in "*?["):
                continue  # a glob may sweep up READMEs and the like
            raise InputError(f"cannot tell the format of {path}; name it .jsonl[.gz|.zst] or .parquet, or set input.format")
        out.append((path, source))
    if not out:
        raise InputError(f"no JSONL or Parquet files in: {', '.join(paths)}")
    return out


def _expand_remote(spec: str, fmt: str) -> dict[str, str]:
    """An object-store file, prefix ("directory") or glob -> {URL: source name}, named as
    local inputs are (relative to the directory or to the glob's fixed part)."""
    try:
        storage.check_bucket(spec)
        if any(ch in spec for ch in "*?["):
            matches = storage.glob(spec)
            if not matches:
                raise InputError(f"input glob matched no files: {spec}")
            base = spec.split("*")[0].rsplit("/", 1)[0]
            return {m: m[len(base):].lstrip("/") for m in matches}
        st = storage.info(spec)
        if st.type == storage.pafs.FileType.File:
            return {spec: spec.rstrip("/").rsplit("/", 1)[-1]}
        if st.type == storage.pafs.FileType.NotFound:
            raise InputError(f"input not found: {spec}")
        files = [u for u in storage.walk_files(spec) if detect_format(u, fmt)]
        if not files:
            raise InputError(f"input directory has no JSONL or Parquet files: {spec}")
        return {u: u[len(spec.rstrip("/")):].lstrip("/") for u in files}
    except storage.StorageError as e:
        raise InputError(f"input: {e}") from None


def _rel(path: str, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return Path(path).name


def plan_reads(cfg: InputConfig, text_key: str = "input.text_field",
               reserved: dict[str, str] | None = None) -> list[ReadTask]:
    """Split the inputs into read tasks; plain JSONL files larger than chunk_bytes are
    cut at line boundaries (line numbers counted here so derived ids stay stable).

    Each file is first checked for the text field (:func:`check_text_field`); ``text_key``
    is the setting its error message suggests. With ``reserved`` (the columns the run
    adds: name -> who adds it) the tasks keep every other field of a record
    (:mod:`datacurate.fields`), and a field that would take one of those names (in a
    JSONL file's first records, anywhere in a Parquet schema) is a ConfigError; without,
    only text, id and domain are read (a side corpus).
    """
    tasks: list[ReadTask] = []
    bad: dict[str, str] = {}
    if reserved is not None:
        fields.check_rename(cfg)
        bad = fields.taken(cfg, reserved)
    schemas = []
    for path, source in expand_inputs(cfg.path, cfg.format):
        fmt = detect_format(path, cfg.format)
        size = storage.size(path) if storage.is_remote(path) else os.path.getsize(path)
        if fmt == "parquet":
            try:
                pf = storage.parquet_file(path)
                meta = pf.metadata
            except Exception as e:  # noqa: BLE001 - report any unreadable parquet in one line
                raise InputError(f"not a readable Parquet file: {path} ({e})") from None
            check_text_field(_parquet_fields(pf), cfg, source, text_key)
            fields.check_names(pf.schema_arrow.names, bad, source)
            schemas.append(pf.schema_arrow)
            row = 0
            for rg in range(meta.num_row_groups):
                tasks.append(ReadTask(path, source, fmt, start=rg, end=rg + 1, first_line=row,
                                      size=meta.row_group(rg).total_byte_size))
                row += meta.row_group(rg).num_rows
            continue
        try:
            sample = _jsonl_fields(ReadTask(path, source, fmt, end=size))
        except Exception as e:  # noqa: BLE001 - a corrupt .gz / .zst: one line, before any work
            raise InputError(f"cannot read {path}: {e}") from None
        check_text_field(sample, cfg, source, text_key)
        fields.check_names(sample.fields, bad, source)
        if path.lower().endswith(".jsonl") or path.lower().endswith((".json", ".ndjson")):
            for start, end, line in _split_jsonl(path, size, cfg.chunk_bytes):
                tasks.append(ReadTask(path, source, fmt, start=start, end=end, first_line=line, size=end - start))
        else:
            tasks.append(ReadTask(path, source, fmt, size=size))
    as_json = fields.parquet_json_fields(schemas, cfg) if reserved is not None else []
    for i, t in enumerate(tasks):
        t.index = i
        if reserved is not None:
            t.taken = sorted(bad)
            t.json_fields = as_json if t.fmt == "parquet" else []
    return tasks


SAMPLE_RECORDS = 1000  # records per file that the text-field check reads


class _FieldStats:
    """What the first records of a file hold: how many, how many lack each field, and the
    mean length of each field's string values (the longest is most likely the text)."""

    def __init__(self):
        self.records, self.fields = 0, {}  # field -> [records with it, string values, their chars]

    def add(self, name: str, value, n: int = 1, chars: int | None = None) -> None:
        f = self.fields.setdefault(name, [0, 0, 0])
        f[0] += n
        if chars is not None or isinstance(value, str):
            f[1] += n
            f[2] += chars if chars is not None else len(value)

    def longest_text(self, exclude: tuple[str, ...] = ()) -> str | None:
        strings = [(f[2] / f[1], name) for name, f in self.fields.items() if f[1] and name not in exclude]
        return max(strings)[1] if strings else None


def _jsonl_fields(task: ReadTask, n: int = SAMPLE_RECORDS) -> _FieldStats:
    st = _FieldStats()
    for raw in _open_lines(task):
        try:
            obj = orjson.loads(raw) if raw.strip() else None
        except orjson.JSONDecodeError:
            continue  # a malformed line is its own reject, not a missing field
        if isinstance(obj, dict):
            st.records += 1
            for k, v in obj.items():
                st.add(k, v)
            if st.records >= n:
                break
    return st


def _parquet_fields(pf: pq.ParquetFile, n: int = SAMPLE_RECORDS) -> _FieldStats:
    st = _FieldStats()
    st.records = min(pf.metadata.num_rows, n)
    strings = [f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    lengths = {}
    if strings and st.records:
        batch = next(pf.iter_batches(batch_size=n, columns=strings))
        lengths = {c: pc.sum(pc.utf8_length(batch.column(i))).as_py() or 0 for i, c in enumerate(strings)}
    for name in pf.schema_arrow.names:
        st.add(name, None, st.records, lengths.get(name))
    return st


def check_text_field(st: _FieldStats, cfg: InputConfig, source: str, text_key: str = "input.text_field") -> None:
    """Fail when more than half of a file's first records lack the text field: a run that
    rejects nearly everything as input/missing_text is almost always a misnamed field.
    The suggestion is the string field (other than the id and domain fields) with the
    longest values."""
    text_field = cfg.text_field
    have = st.fields.get(text_field, [0])[0]
    if not st.records or 2 * (st.records - have) <= st.records:
        return
    best = st.longest_text(exclude=(cfg.id_field, cfg.domain_field))
    fields = ", ".join(st.fields) or "none"
    hint = f"set {text_key}={best}" if best and best != text_field else f"set {text_key}=NAME"
    raise InputError(f"input: no '{text_field}' field in {round(100 * (st.records - have) / st.records)}% of records "
                     f"of {source}; fields seen: {fields}; {hint}")


def _split_jsonl(path: str, size: int, chunk: int) -> list[tuple[int, int, int]]:
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


def _file(path: str):
    """A local path as it is (gzip opens it itself); an object as a file."""
    return storage.open_input(path) if storage.is_remote(path) else path


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


def _open_lines(task: ReadTask) -> Iterator[bytes]:
    low = task.path.lower()
    if low.endswith(".gz"):
        with gzip.open(_file(task.path), "rb") as f:
            yield from f
    elif low.endswith((".zst", ".zstd")):
        import zstandard

        with storage.open_stream(task.path) as raw:
            reader = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw), 1 << 20)
            yield from reader
    elif storage.is_remote(task.path):
        yield from _range_lines(task)
    else:
        with open(task.path, "rb") as f:
            f.seek(task.start)
            remaining = task.end - task.start
            while remaining > 0:
                line = f.readline(remaining)
                if not line:
                    break
                remaining -= len(line)
                yield line


def _range_lines(task: ReadTask) -> Iterator[bytes]:
    """The lines of a byte range of an object (ranged GETs of 8 MB), as readline gives them."""
    rest = b""
    with storage.open_input(task.path) as f:
        for buf in storage.iter_chunks(f, task.start, task.end, 8 << 20):
            lines = (rest + buf).split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield line + b"\n"
    if rest:
        yield rest


_NO_FIELDS: dict = {}  # the record of a row whose line is no JSON object: every extra field null


class _Batcher:
    """Accumulates rows and emits Arrow tables of ``rows`` rows (or ~64 MB of text).

    With ``keep`` it also keeps each row's parsed record and, at flush, builds one column
    per other field seen in the batch (first-seen order; :func:`fields.jsonl_column`)."""

    def __init__(self, task: ReadTask, rows: int, cfg: InputConfig | None = None):
        self.task, self.rows, self.row_in_task = task, rows, 0
        self.keep = task.taken is not None and cfg is not None
        if self.keep:
            self.own, self.rename = {cfg.text_field, cfg.id_field, cfg.domain_field}, cfg.rename
        self._reset()

    def _reset(self):
        self.ids, self.texts, self.domains, self.reasons, self.nbytes, self.records = [], [], [], [], 0, []

    def add(self, id_, text, domain, reason=None, record=_NO_FIELDS):
        self.ids.append(id_)
        self.texts.append(text)
        self.domains.append(domain)
        self.reasons.append(reason)
        self.nbytes += len(text)
        if self.keep:
            self.records.append(record)

    def _extras(self) -> dict[str, pa.Array]:
        if not self.keep:
            return {}
        n, records = len(self.records), self.records
        seen = dict.fromkeys(itertools.chain.from_iterable(records))  # every key, first-seen order, in C
        return {self.rename.get(k, k): fields.jsonl_column(list(map(dict.get, records, itertools.repeat(k, n))))
                for k in seen if k not in self.own}

    def full(self) -> bool:
        return len(self.ids) >= self.rows or self.nbytes >= 64 << 20

    def flush(self) -> pa.Table | None:
        n = len(self.ids)
        if n == 0:
            return None
        table = _batch(self.task, self.row_in_task, pa.array(self.ids, BASE_COLUMNS[ID]),
                       pa.array(self.texts, BASE_COLUMNS[TEXT]), pa.array(self.domains, BASE_COLUMNS[DOMAIN]),
                       self._extras(), pa.array(self.reasons, pa.string()))
        self.row_in_task += n
        self._reset()
        return table


def _batch(task: ReadTask, first_row: int, ids: pa.Array, texts: pa.Array, domains: pa.Array, extras: dict,
           reasons: pa.Array) -> pa.Table:
    """Rows ``first_row``.. of a task in the common schema: the base columns, the extra
    fields, the reject columns (``input`` where there is a reason) and ``_ord``."""
    n, first = len(ids), (task.index << 32) + first_row
    return pa.table({
        ID: ids.cast(BASE_COLUMNS[ID]),
        TEXT: texts.cast(BASE_COLUMNS[TEXT]),
        DOMAIN: domains.cast(BASE_COLUMNS[DOMAIN]),
        SOURCE: pa.array([task.source] * n, BASE_COLUMNS[SOURCE]),
        **extras,
        REJECT_STAGE: pc.if_else(pc.is_valid(reasons), pa.scalar(INPUT_STAGE), pa.scalar(None, pa.string())),
        REJECT_REASON: reasons.cast(pa.string()),
        ORD: pa.array(range(first, first + n), pa.int64()),
    })


def _field_str(value, default):
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def read_task(task: ReadTask | dict, cfg: InputConfig, counters: dict | None = None) -> Iterator[pa.Table]:
    """Read one task; yield batches in the common schema (see module docstring).

    ``counters`` (if given) receives file-level facts: blank lines, empty files.
    """
    if isinstance(task, dict):
        task = ReadTask(**task)
    counters = counters if counters is not None else {}
    n = 0
    for table in _read_parquet(task, cfg) if task.fmt == "parquet" else _jsonl_batches(task, cfg, counters):
        n += table.num_rows
        yield table
    if n == 0 and task.start == 0:
        counters["empty_files"] = counters.get("empty_files", 0) + 1


def _jsonl_batches(task: ReadTask, cfg: InputConfig, counters: dict) -> Iterator[pa.Table]:
    batcher = _Batcher(task, cfg.batch_rows, cfg)
    for record in _read_jsonl(task, cfg, counters):
        batcher.add(*record)
        if batcher.full():
            yield batcher.flush()
    last = batcher.flush()
    if last is not None:
        yield last


def read_texts(cfg: InputConfig, tasks: list | None = None, counters: dict | None = None) -> Iterator[pa.Array]:
    """The valid texts of some inputs (a side corpus such as a DSIR target), batch by
    batch; rows the reader rejects are counted in ``counters["rejected"]``."""
    counters = counters if counters is not None else {}
    for task in tasks if tasks is not None else plan_reads(cfg):
        for table in read_task(task, cfg, counters):
            ok = pc.is_null(table.column(REJECT_REASON))
            counters["rejected"] = counters.get("rejected", 0) + table.num_rows - pc.sum(ok.cast(pa.int64())).as_py()
            yield table.column(TEXT).filter(ok).combine_chunks()


def _read_jsonl(task: ReadTask, cfg: InputConfig, counters: dict):
    tf, idf, df = cfg.text_field, cfg.id_field, cfg.domain_field
    default_domain = cfg.default_domain
    taken = frozenset(task.taken or ())
    for lineno, raw in enumerate(_open_lines(task), start=task.first_line):
        if not raw.strip():
            counters["blank_lines"] = counters.get("blank_lines", 0) + 1
            continue
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
        if not isinstance(obj, dict):
            yield derived, raw.decode("utf-8", "replace").rstrip("\n"), default_domain, "input/not_an_object"
            continue
        id_ = _field_str(obj.get(idf), derived)
        domain = _field_str(obj.get(df), default_domain)
        text = obj.get(tf, _MISSING)
        if not taken.isdisjoint(obj):  # a field named as a column the run adds, past the planned sample
            yield id_, raw.decode("utf-8", "replace").rstrip("\n"), domain, fields.RESERVED_REASON
        elif text is _MISSING or text is None:  # the raw line is kept: the record is not lost
            reason = "input/missing_text" if text is _MISSING else "input/null_text"
            yield id_, raw.decode("utf-8", "replace").rstrip("\n"), domain, reason, obj
        elif not isinstance(text, str):
            yield id_, orjson.dumps(text).decode(), domain, "input/non_string_text", obj
        elif len(text) > cfg.max_doc_chars:
            yield id_, text, domain, "input/doc_too_large", obj
        else:
            yield id_, text, domain, None, obj


_MISSING = object()


def _as_str(col) -> pa.Array:
    """A column as strings: Arrow's cast where it has one, ``str()`` for nested types."""
    try:
        return pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())


def _read_parquet(task: ReadTask, cfg: InputConfig) -> Iterator[pa.Table]:
    """Parquet batches straight into the common schema, vectorised (no loop per row).

    A row without text (no such column, or null) keeps its whole record as JSON in
    ``text``, as a JSONL reject keeps its raw line: the row group's other columns are
    read only then. The other fields, when the task keeps them, pass as they are (as JSON
    text where the inputs disagree on their type).
    """
    pf = storage.parquet_file(task.path)
    names = set(pf.schema_arrow.names)
    own = (cfg.text_field, cfg.id_field, cfg.domain_field)
    cols = [c for c in own if c in names]
    extras = [c for c in pf.schema_arrow.names if c not in own] if task.taken is not None else []
    row, in_task = task.first_line, 0
    null = pa.scalar(None, pa.string())
    for rg in range(task.start, task.end):
        full, offset = None, 0
        for batch in pf.iter_batches(batch_size=cfg.batch_rows, row_groups=[rg], columns=cols + extras):
            n = batch.num_rows
            derived = pc.binary_join_element_wise(pa.scalar(f"{task.source}:"), _as_str(pa.array(range(row, row + n))),
                                                  "")
            ids = pc.fill_null(_as_str(batch.column(cfg.id_field)), derived) if cfg.id_field in cols else derived
            domains = (pc.fill_null(_as_str(batch.column(cfg.domain_field)), cfg.default_domain)
                       if cfg.domain_field in cols else pa.array([cfg.default_domain] * n, pa.string()))
            if cfg.text_field not in cols:
                no_text = pa.array([True] * n)
                texts = pa.array([""] * n, pa.large_string())
                reasons = pa.array(["input/missing_text"] * n, pa.string())
            else:
                col = batch.column(cfg.text_field)
                no_text = pc.is_null(col)
                is_str = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                texts = _as_str(col)
                bad = (pa.scalar("input/non_string_text") if not is_str else
                       pc.if_else(pc.greater(pc.utf8_length(pc.fill_null(texts, "")), cfg.max_doc_chars),
                                  pa.scalar("input/doc_too_large"), null))
                reasons = pc.if_else(no_text, pa.scalar("input/null_text"), bad)  # an array: no_text is one
                texts = pc.fill_null(texts, "").cast(pa.large_string())
            if pc.any(no_text).as_py():
                full = full if full is not None else pf.read_row_group(rg)
                records = full.slice(offset, n).filter(no_text).to_pylist()
                raw = pa.array([orjson.dumps(r, default=str, option=orjson.OPT_NON_STR_KEYS).decode() for r in records],
                               pa.large_string())
                texts = pc.replace_with_mask(texts, no_text, raw)
            yield _batch(task, in_task, ids, texts, domains, _parquet_extras(batch, extras, cfg.rename, task.json_fields),
                         reasons)
            row += n
            in_task += n
            offset += n


def _parquet_extras(batch: pa.RecordBatch, names: list[str], rename: dict, as_json: list[str]) -> dict:
    out = {}
    for name in names:
        new = rename.get(name, name)
        out[new] = fields.to_json(batch.column(name)) if new in as_json else batch.column(name)
    return out


# ----------------------------------------------------------------------------- writing


def write_atomic(table: pa.Table, path: str, compression: str = "zstd") -> None:
    """Write ``path`` whole or not at all (a local temporary renamed, or one S3 upload):
    a crashed task never leaves half a file."""
    storage.write_parquet(table, path, compression)


def write_parts(table: pa.Table, kept_dir: str, rejected_dir: str, name: str, compression: str = "zstd",
                keep_internal: bool = False) -> dict[str, int]:
    """Write kept rows to ``kept_dir/part-<name>.parquet`` and rejected rows to ``rejected_dir``.

    The same ``name`` always names the same rows, so a retried task overwrites its
    parts instead of duplicating them. ``keep_internal`` keeps engine columns (``_ord``)
    in kept rows, for intermediate outputs that a later global stage reads.
    """
    import pyarrow.compute as pc

    rejected_mask = pc.is_valid(table.column(REJECT_REASON))
    written = {}
    for d, mask in ((kept_dir, pc.invert(rejected_mask)), (rejected_dir, rejected_mask)):
        kept = d == kept_dir
        rows = table.filter(mask)
        drop = [c for c in rows.column_names if is_internal(c) and not (kept and keep_internal)]
        if kept:
            drop += [REJECT_STAGE, REJECT_REASON]
        rows = rows.drop_columns(drop)
        written["kept" if kept else "rejected"] = rows.num_rows
        if rows.num_rows:
            write_atomic(fields.for_output(rows), storage.join(d, f"part-{name}.parquet"), compression)
    return written
