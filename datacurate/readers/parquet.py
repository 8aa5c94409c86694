"""Parquet: one read task per row group, read column-wise straight into the common
schema (no loop per row). A row without text (no such column, or null) keeps its whole
record as JSON in ``text``, as a JSONL reject keeps its raw line; a record without an id
gets ``<source>:<row>`` (0-based). A row group that cannot be read (damage) makes its rows
not yet read ``input/corrupt_record`` rejects, one each, and the next row group is read. A
task's consumption is counted in rows."""

from __future__ import annotations

from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datacurate.formats import fields, storage
from datacurate.core.errors import is_operational
from datacurate.configs.input import InputConfig
from datacurate.readers.base import SAMPLE_RECORDS, FieldStats, FilePlan, InputError, ReadTask, Tally, make_batch

SUFFIXES = (".parquet", ".pq")


def _open(path: str) -> pq.ParquetFile:
    try:
        return storage.parquet_file(path)
    except Exception as e:  # noqa: BLE001 - report any unreadable parquet in one line
        raise InputError(f"not a readable Parquet file: {path} ({e})") from None


def plan(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "parquet") -> FilePlan:
    pf = _open(path)
    meta = pf.metadata
    tasks, row = [], 0
    for rg in range(meta.num_row_groups):
        tasks.append(ReadTask(path, source, fmt, start=rg, end=rg + 1, first_line=row,
                              size=meta.row_group(rg).total_byte_size))
        row += meta.row_group(rg).num_rows
    return FilePlan(tasks, meta.num_rows, "rows", pf.schema_arrow)


def sample(path: str, source: str, size: int, cfg: InputConfig, fmt: str = "parquet",
           n: int = SAMPLE_RECORDS) -> FieldStats:
    pf = _open(path)
    st = FieldStats()
    st.records = min(pf.metadata.num_rows, n)
    strings = [f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    lengths = {}
    if strings and st.records:
        batch = next(pf.iter_batches(batch_size=n, columns=strings))
        lengths = {c: pc.sum(pc.utf8_length(batch.column(i))).as_py() or 0 for i, c in enumerate(strings)}
    for name in pf.schema_arrow.names:
        st.add(name, None, st.records, lengths.get(name))
    return st


def _as_str(col) -> pa.Array:
    """A column as strings: Arrow's cast where it has one, ``str()`` for nested types."""
    try:
        return pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())


def read(task: ReadTask, cfg: InputConfig, counters: dict, tally: Tally) -> Iterator[pa.Table]:
    """Batches of the task's row groups; the other fields, when the task keeps them, pass
    as they are (as JSON text where the inputs disagree on their type)."""
    pf = storage.parquet_file(task.path)
    names = set(pf.schema_arrow.names)
    own = (cfg.text_field, cfg.id_field, cfg.domain_field)
    cols = [c for c in own if c in names]
    extras = [c for c in pf.schema_arrow.names if c not in own] if task.taken is not None else []
    row = task.first_line
    for rg in range(task.start, task.end):
        full, offset = None, 0
        try:
            for batch in pf.iter_batches(batch_size=cfg.batch_rows, row_groups=[rg], columns=cols + extras):
                n = batch.num_rows
                ids, texts, domains, reasons, no_text = _columns(batch, task, row, cfg, cols)
                if pc.any(no_text).as_py():
                    full = full if full is not None else pf.read_row_group(rg)
                    records = full.slice(offset, n).filter(no_text).to_pylist()
                    texts = pc.replace_with_mask(texts, no_text, pa.array([_json(r) for r in records],
                                                                          pa.large_string()))
                tally.consumed += n
                tally.records += n
                tally.bytes += batch.nbytes
                yield make_batch(ids, texts, domains, _extras(batch, extras, cfg.rename, task.json_fields), reasons)
                row += n
                offset += n
        except (OSError, pa.ArrowException) as e:  # a damaged row group: its rows not yet read are rejects
            if is_operational(e):  # not the file's damage: a lost store, a vanished file, a full disk
                raise
            n = pf.metadata.row_group(rg).num_rows - offset
            derived = pc.binary_join_element_wise(pa.scalar(f"{task.source}:"), _as_str(pa.array(range(row, row + n))),
                                                  "")
            tally.consumed += n
            tally.records += n
            nulls = {cfg.rename.get(c, c): pa.nulls(n, pa.string() if cfg.rename.get(c, c) in task.json_fields
                                                     else pf.schema_arrow.field(c).type) for c in extras}
            yield make_batch(derived, pa.array([""] * n, pa.large_string()),
                             pa.array([cfg.default_domain] * n, pa.string()), nulls,
                             pa.array(["input/corrupt_record"] * n, pa.string()))
            row += n


def _columns(batch: pa.RecordBatch, task: ReadTask, row: int, cfg: InputConfig, cols: list) -> tuple:
    """(ids, texts, domains, reasons, rows without text) of a batch of rows from ``row`` on."""
    n, null = batch.num_rows, pa.scalar(None, pa.string())
    derived = pc.binary_join_element_wise(pa.scalar(f"{task.source}:"), _as_str(pa.array(range(row, row + n))), "")
    ids = pc.fill_null(_as_str(batch.column(cfg.id_field)), derived) if cfg.id_field in cols else derived
    domains = (pc.fill_null(_as_str(batch.column(cfg.domain_field)), cfg.default_domain)
               if cfg.domain_field in cols else pa.array([cfg.default_domain] * n, pa.string()))
    if cfg.text_field not in cols:
        return (ids, pa.array([""] * n, pa.large_string()), domains, pa.array(["input/missing_text"] * n, pa.string()),
                pa.array([True] * n))
    col = batch.column(cfg.text_field)
    no_text = pc.is_null(col)
    is_str = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    texts = _as_str(col)
    bad = (pa.scalar("input/non_string_text") if not is_str else
           pc.if_else(pc.greater(pc.utf8_length(pc.fill_null(texts, "")), cfg.max_doc_chars),
                      pa.scalar("input/doc_too_large"), null))
    reasons = pc.if_else(no_text, pa.scalar("input/null_text"), bad)  # an array: no_text is one
    return ids, pc.fill_null(texts, "").cast(pa.large_string()), domains, reasons, no_text


def _json(record: dict) -> str:
    """A record without text, as JSON (its values that JSON cannot hold as their ``str``)."""
    try:
        return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, ValueError):  # orjson.JSONEncodeError: nesting, integers past 64 bits ...
        return repr(record)


def _extras(batch: pa.RecordBatch, names: list[str], rename: dict, as_json: list[str]) -> dict:
    out = {}
    for name in names:
        new = rename.get(name, name)
        out[new] = fields.to_json(batch.column(name)) if new in as_json else batch.column(name)
    return out
