"""Reading and writing: the only module (with :mod:`datacurate.readers`) that touches data files.

Reading is planned on the driver (:func:`plan_reads`) as a list of small :class:`ReadTask`
descriptions (a file, a byte range of a plain JSONL file or of a WARC file cut at gzip
members, a Parquet row group) and executed anywhere by :func:`read_task`, which yields
Arrow batches in the common schema. Each format is one module of
:mod:`datacurate.readers` (:data:`READERS`). Bad records never raise: they become rows
with ``reject_stage = "input"`` and an ``input/...`` reason, so that ``read == kept +
rejected`` holds for every run; and every task counts what it consumed, so that the run
checks per file that its tasks read it whole (:func:`check_consumed`).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import fields, storage
from datacurate.core.coerce import ConfigError
from datacurate.core.dicts import merge
from datacurate.configs.input import InputConfig
from datacurate.readers import jsonl, parquet, warc
from datacurate.readers.base import SAMPLE_RECORDS, InputError, ReadTask, Tally, check_text_field, count
from datacurate.core.schema import (BASE_COLUMNS, DOMAIN, INPUT_STAGE, ORD, REJECT_REASON, REJECT_STAGE, SOURCE, TEXT,
                               is_internal)

__all__ = ["InputError", "ReadTask", "SAMPLE_RECORDS", "ReadPlan", "plan_reads", "read_task", "read_texts",
           "check_consumed", "file_columns", "expand_inputs", "find_inputs", "detect_format", "write_atomic", "write_parts"]

READERS = {"jsonl": jsonl, "json": jsonl, "parquet": parquet, "warc": warc, "arc": warc}  # input.format -> its module
JSONL_SUFFIXES, PARQUET_SUFFIXES = jsonl.SUFFIXES, parquet.SUFFIXES
KINDS = "JSONL, JSON, Parquet or WARC"


def detect_format(path: str, fmt: str) -> str | None:
    """The format of ``path``: ``fmt`` unless "auto", else by its name (None: unknown)."""
    if fmt != "auto":
        return fmt
    low = path.lower()
    for name in ("parquet", "warc", "jsonl"):
        if low.endswith(READERS[name].SUFFIXES):
            return name
    return None


def find_inputs(paths: list[str], fmt: str = "auto") -> tuple[list[tuple[str, str]], list[str]]:
    """Files, directories (recursive) and globs -> (sorted [(absolute path or URL, source
    name)] to read, the files a directory or glob holds that are not read)."""
    found: dict[str, str] = {}
    for spec in paths:
        if storage.is_remote(spec):
            found.update(_expand_remote(spec))
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
            files = [f for f in sorted(p.rglob("*")) if f.is_file()]
            if not any(detect_format(f.name, fmt) for f in files):
                raise InputError(f"input directory has no {KINDS} files: {spec}")
            for f in files:
                found[str(f.resolve())] = _rel(str(f), p)
        elif p.is_file():
            if detect_format(str(p), fmt) is None:
                raise InputError(f"cannot tell the format of {p.resolve()}; name it .jsonl[.gz|.zst], .json, "
                                 ".parquet, .warc[.gz] (.arc, .wet, .wat too) or set input.format")
            found[str(p.resolve())] = p.name
        else:
            raise InputError(f"input not found: {spec}")
    out, skipped = [], []
    for path, source in sorted(found.items(), key=lambda kv: kv[1]):
        (out if detect_format(path, fmt) else skipped).append((path, source))
    if not out:
        raise InputError(f"no {KINDS} files in: {', '.join(paths)}")
    return out, [source for _, source in skipped]


def expand_inputs(paths: list[str], fmt: str = "auto") -> list[tuple[str, str]]:
    """The files :func:`find_inputs` reads."""
    return find_inputs(paths, fmt)[0]


def _expand_remote(spec: str) -> dict[str, str]:
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
        files = storage.walk_files(spec)
        if not files:
            raise InputError(f"input directory has no {KINDS} files: {spec}")
        return {u: u[len(spec.rstrip("/")):].lstrip("/") for u in files}
    except storage.StorageError as e:
        raise InputError(f"input: {e}") from None


def _rel(path: str, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return Path(path).name


class ReadPlan(list):
    """The read tasks of a run (a list of :class:`ReadTask`), with ``files``: {source:
    {"path", "size", "total", "unit"}} (what each file's tasks must consume together),
    ``skipped``: the files of a directory or glob that are not read, and ``empty``: the
    input files of 0 bytes; ``columns``: per file, its format and the columns its rows can
    carry (:func:`file_columns`)."""

    def __init__(self, tasks=(), files=None, skipped=None):
        super().__init__(tasks)
        self.files: dict[str, dict] = files or {}
        self.skipped: list[str] = skipped or []
        self.columns: dict[str, tuple[str, list[str]]] = {}  # source -> (format, the columns its rows can carry)

    @property
    def empty(self) -> list[str]:
        return [s for s, f in self.files.items() if f["size"] == 0]


def _format_of(path: str, fmt: str) -> str:
    """jsonl, unless auto finds a JSON array in a .json file; a WARC module's format."""
    found = detect_format(path, fmt)
    if found == "jsonl" and fmt == "auto" and path.lower().endswith(jsonl.ARRAY_SUFFIXES) and jsonl.is_array(path):
        return "json"
    return found


def plan_reads(cfg: InputConfig, text_key: str = "input.text_field",
               reserved: dict[str, str] | None = None) -> ReadPlan:
    """Split the inputs into read tasks (each format module's ``plan``).

    Each file is first checked for the text field (:func:`check_text_field`, formats with
    a text field); ``text_key`` is the setting its error message suggests. With
    ``reserved`` (the columns the run adds: name -> who adds it) the tasks keep every other
    field of a record (:mod:`datacurate.formats.fields`), and a field that would take one of those
    names (in a JSONL file's first records, anywhere in a Parquet schema) is a ConfigError;
    without, only text, id and domain are read (a side corpus).
    """
    bad: dict[str, str] = {}
    if reserved is not None:
        fields.check_rename(cfg)
        bad = fields.taken(cfg, reserved)
    found, skipped = find_inputs(cfg.path, cfg.format)
    plan, schemas = ReadPlan(skipped=skipped), []
    for path, source in found:
        size = storage.size(path) if storage.is_remote(path) else os.path.getsize(path)
        try:
            fmt = _format_of(path, cfg.format)
            reader = READERS[fmt]
            sample = reader.sample(path, source, size, cfg, fmt)
            if sample is not None:
                check_text_field(sample, cfg, source, text_key)
                fields.check_names(sample.fields, bad, source)
            file_plan = reader.plan(path, source, size, cfg, fmt)
        except (InputError, ConfigError):
            raise
        except Exception as e:  # noqa: BLE001 - a corrupt .gz / .zst, an unreadable file: one line, before any work
            raise InputError(f"cannot read {path}: {e}") from None
        if file_plan.schema is not None:
            schemas.append(file_plan.schema)
        plan.extend(file_plan.tasks)
        plan.files[source] = {"path": path, "size": size, "total": file_plan.total, "unit": file_plan.unit}
        plan.columns[source] = (fmt, file_columns(sample, cfg, fmt))
    as_json = fields.parquet_json_fields(schemas, cfg) if reserved is not None else []
    archives = {t.source for t in plan if t.fmt in ("warc", "arc")}
    for i, t in enumerate(plan):
        t.index = i
        t.qualify_ids = len(archives) > 1 and t.source in archives  # two files may hold the same records
        if reserved is not None:
            t.taken = sorted(bad)
            t.json_fields = as_json if t.fmt == "parquet" else []
    return plan


def file_columns(sample, cfg: InputConfig, fmt: str) -> list[str] | None:
    """The columns the rows of a file can carry: the base columns, and a WARC / ARC
    record's (:data:`datacurate.readers.warc.COLUMNS`), or the other fields (after
    ``input.rename``) of a JSONL file's first records or a Parquet file's schema; None for a
    file of no records."""
    if sample is None:
        return list(BASE_COLUMNS) + list(getattr(READERS[fmt], "COLUMNS", {}))
    if not sample.records:  # no rows: it cannot lack a column
        return None
    own = {cfg.text_field, cfg.id_field, cfg.domain_field}
    return list(BASE_COLUMNS) + [cfg.rename.get(n, n) for n in sample.fields if n not in own]


def read_task(task: ReadTask | dict, cfg: InputConfig, counters: dict | None = None) -> Iterator[pa.Table]:
    """Read one task; yield batches in the common schema (see module docstring).

    ``counters`` (if given) receives file-level facts: blank lines, empty files, and under
    ``files[source]`` what the task consumed (:class:`Tally`), also when it stops early.
    """
    if isinstance(task, dict):
        task = ReadTask(**task)
    counters = counters if counters is not None else {}
    tally = Tally()
    try:
        for table in READERS[task.fmt].read(task, cfg, counters, tally):
            framed = frame(table, task, tally.rows)
            tally.rows += table.num_rows
            yield framed
    finally:
        merge(counters, {"files": {task.source: tally.as_dict()}})
        if tally.rows == 0 and task.start == 0:
            count(counters, "empty_files")


def frame(table: pa.Table, task: ReadTask, first_row: int) -> pa.Table:
    """A reader's batch (rows ``first_row``.. of ``task``) in the common schema: the one
    place that adds ``source`` (after the base columns), ``reject_stage`` (``input`` where
    the reader gave a reason) and ``_ord`` (read task << 32 | row in the task: input order)."""
    n, first = table.num_rows, (task.index << 32) + first_row
    reasons = table.column(REJECT_REASON)
    at = table.schema.get_field_index(DOMAIN) + 1
    table = table.add_column(at, SOURCE, pa.array([task.source] * n, BASE_COLUMNS[SOURCE]))
    stage = pc.if_else(pc.is_valid(reasons), pa.scalar(INPUT_STAGE), pa.scalar(None, pa.string()))
    table = table.add_column(table.schema.get_field_index(REJECT_REASON), REJECT_STAGE, stage)
    return table.append_column(ORD, pa.array(range(first, first + n), pa.int64()))


def check_consumed(plan: ReadPlan, counters: dict) -> list[str]:
    """One line per input file whose tasks did not consume it whole, or whose records did
    not all become rows (``counters``: the run's, summed over its tasks)."""
    problems = []
    got = counters.get("files", {})
    for source, f in plan.files.items():
        c = got.get(source, {})
        consumed, records, rows = c.get("consumed", 0), c.get("records", 0), c.get("rows", 0)
        if consumed != f["total"]:
            problems.append(f"input {f['path']}: its read tasks consumed {consumed:,} of its {f['total']:,} "
                            f"{f['unit']} ({rows:,} rows read); the run is incomplete")
        elif records != rows:
            problems.append(f"input {f['path']}: {records:,} records found but {rows:,} rows read; "
                            "the run is incomplete")
    return problems


def read_texts(cfg: InputConfig, tasks: list | None = None, counters: dict | None = None) -> Iterator[pa.Array]:
    """The valid texts of some inputs (a side corpus such as a DSIR target), batch by
    batch; rows the reader rejects are counted in ``counters["rejected"]``."""
    counters = counters if counters is not None else {}
    for task in tasks if tasks is not None else plan_reads(cfg):
        for table in read_task(task, cfg, counters):
            ok = pc.is_null(table.column(REJECT_REASON))
            counters["rejected"] = counters.get("rejected", 0) + table.num_rows - pc.sum(ok.cast(pa.int64())).as_py()
            yield table.column(TEXT).filter(ok).combine_chunks()


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
