"""The work of one task, with no Ray in sight: read -> stages -> write parts.

A pipeline is cut into *segments* at its global stages (dedup, resampling). Segment 0
reads the input (:func:`curate_task`, one read task at a time); each later segment
reads the previous segment's intermediate parts, applies the global stage's decisions
and runs the map stages that follow (:func:`curate_work_file`). Rejected rows stay in
the batch (later stages skip them) until :func:`datacurate.formats.io.write_parts` splits kept
from rejected, so every document read is written exactly once. The engine hands these
functions to Ray; tests and the Python API can call them directly.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datacurate.formats import fields, storage
from datacurate.configs.pipeline import ConfigError, PipelineConfig, StageSpec
from datacurate.core.errors import is_operational
from datacurate.engine.stats import StageStats, add_task, count_reasons, merge, plain
from datacurate.formats.io import ReadTask, read_task, write_parts
from datacurate.phases import faults, layout
from datacurate.report.profile import profile
from datacurate.core.schema import (
    BASE_COLUMNS, INPUT_STAGE, INTERNAL_COLUMNS, ORD, REJECT_COLUMNS, REJECT_REASON, REJECT_STAGE, is_internal,
    part_name,
)
from datacurate.stages.base import Stage


@dataclass
class Segment:
    """Map stages to run after an optional global stage, and where the kept rows go."""

    index: int
    maps: list[StageSpec]
    global_before: StageSpec | None = None  # the global stage whose decisions open this segment
    final: bool = True  # kept rows go to OUT/kept (else to OUT/_work/s<index> for the next global stage)
    columns: list = field(default_factory=list)  # (name, type) of every stage in the pipeline


def plan_segments(specs: Sequence[StageSpec]) -> list[Segment]:
    segments = [Segment(0, [])]
    for spec in specs:
        if spec.cls.is_global:
            segments[-1].final = False
            segments.append(Segment(len(segments), [], global_before=spec))
        else:
            segments[-1].maps.append(spec)
    return segments


def segments_of(cfg: PipelineConfig) -> list[Segment]:
    """The pipeline's segments, each knowing every output column (name, type)."""
    segs, schema = plan_segments(cfg.stages), output_schema(cfg.stages)
    columns = list(zip(schema.names, schema.types))
    for s in segs:
        s.columns = columns
    return segs


def build_stages(specs: Sequence[StageSpec]) -> list[Stage]:
    """The stages of ``specs``; side inputs staged in the output's file system (on a cluster,
    :mod:`datacurate.engine.side`) are read from this node's downloaded copies."""
    from datacurate.engine.side import localize

    return [s.cls(s.config) for s in localize(list(specs))]


def output_schema(specs: Sequence[StageSpec]) -> pa.Schema:
    """Column order and types of every output part: base, annotations (stage order), reject."""
    fields = dict(BASE_COLUMNS)
    for s in specs:
        fields.update(s.cls.columns)
    fields.update(REJECT_COLUMNS)
    return pa.schema(list(fields.items()))


def reserved_columns(specs: Sequence[StageSpec]) -> dict[str, str]:
    """The column names an input field may not take, each with what adds it."""
    out = {n: "the reader adds" for n in BASE_COLUMNS}
    out.update({n: "the engine adds" for n in REJECT_COLUMNS})
    out.update({n: "the engine uses internally" for n in INTERNAL_COLUMNS})
    for s in specs:
        out.update({n: f"stage {s.name} adds" for n in s.cls.columns})
    return out


def check_columns(specs: Sequence[StageSpec], columns: dict[str, tuple[str, list[str] | None]]) -> None:
    """Before any work: every column a stage needs (``Stage.needs_columns``) is one that
    every input file's rows can carry (``columns``: source -> (format, its columns; None:
    no rows), :attr:`datacurate.formats.io.ReadPlan.columns`) or that an earlier stage adds; else a
    ConfigError naming the stage, the column, the files and the fix. A directory mixing
    formats is read by format per file; it is refused only here, when a stage needs a
    column some of its files cannot have (WARC's ``url`` beside JSONL records without one)."""
    from datacurate.readers.warc import COLUMNS as WARC_COLUMNS

    added: set[str] = set()
    for spec in specs:
        for col, setting in spec.cls.needs_columns(spec.config).items():
            if col in added:
                continue
            lacking = [(src, fmt) for src, (fmt, have) in columns.items() if have is not None and col not in have]
            if not lacking:
                continue
            fmts = sorted({fmt.upper() for _, fmt in lacking})
            shown = ", ".join(src for src, _ in lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
            how = "; ".join(f"{f} records have no '{col}'" if f in ("WARC", "ARC") else
                            f"{f} records without a '{col}' field" for f in fmts)
            web = " read WARC / ARC input (its rows carry it)," if col in WARC_COLUMNS else ""
            raise ConfigError(f"{spec.cls.stats_key(spec.config)}: needs the column '{col}' ({setting}), which "
                              f"{len(lacking)} input file{'s' * (len(lacking) != 1)} cannot have ({shown}: {how});"
                              f"{web} give the records a '{col}' field, change {spec.name}'s setting, or remove the stage")
        added.update(spec.cls.columns)


def _output(table: pa.Table, columns: list) -> pa.Table:
    """``table`` in the order of output parts: base columns, the input's extra fields (as
    they come), the stages' columns (``columns``: the run's own, base first), reject."""
    table = _ensure_columns(table, dict(columns))
    own = {n for n, _ in columns}
    extras = [f for f in table.schema if f.name not in own and not is_internal(f.name)]
    base = [pa.field(n, t) for n, t in columns[:len(BASE_COLUMNS)]]
    schema = pa.schema(base + extras + [pa.field(n, t) for n, t in columns[len(BASE_COLUMNS):]])
    return table.select(schema.names).cast(schema)


def _mark_stage(out: pa.Table, newly: np.ndarray, name: str) -> pa.Table:
    stage_col = pc.if_else(pa.array(newly), pa.scalar(name, pa.string()), out.column(REJECT_STAGE).cast(pa.string()))
    return out.set_column(out.schema.get_field_index(REJECT_STAGE), REJECT_STAGE, stage_col)


def _ensure_columns(out: pa.Table, columns: dict) -> pa.Table:
    for name, typ in columns.items():
        if name not in out.column_names:
            out = out.append_column(name, pa.nulls(out.num_rows, typ))
        elif out.schema.field(name).type != typ:
            out = out.set_column(out.schema.get_field_index(name), name, out.column(name).cast(typ))
    return out


def apply_stage(stage: Stage, table: pa.Table, decisions: pa.Table | None = None) -> tuple[pa.Table, StageStats]:
    """Run ``stage`` (or apply a global stage's ``decisions``) on the rows nobody rejected
    yet; return the full batch, in order, and the stage's stats for this batch (a global
    stage with no ``decisions`` runs on the batch alone: its metrics are its run's)."""
    t0 = time.perf_counter()
    alive = np.asarray(pc.is_null(table.column(REJECT_REASON)))
    n_in = int(alive.sum())
    found: dict = {}

    def run(t: pa.Table) -> pa.Table:
        if decisions is None and stage.is_global:  # on this batch alone: its metrics are its run's
            t, found["metrics"] = stage.run_table(t)
            return t
        if decisions is None:
            return per_record(stage, t)
        return stage.annotated(t, *stage.apply(t, decisions))

    if n_in == table.num_rows:
        out = run(table)
    elif n_in == 0:
        out = table
    else:
        idx_alive, idx_dead = np.flatnonzero(alive), np.flatnonzero(~alive)
        live = run(table.take(idx_alive))
        dead = _ensure_columns(table.take(idx_dead), {f.name: f.type for f in live.schema})
        merged = pa.concat_tables([live, dead.select(live.column_names).cast(live.schema)])
        out = merged.take(np.argsort(np.concatenate([idx_alive, idx_dead]), kind="stable"))
    out = _ensure_columns(out, stage.columns)
    newly = np.asarray(pc.is_valid(out.column(REJECT_REASON))) & alive
    out = _mark_stage(out, newly, stage.stats_key(stage.config))  # a second instance's own label (exact_dedup:url)
    metrics = found.get("metrics") or (stage.metrics(out.filter(pa.array(alive))) if n_in else {})
    rejected = count_reasons(out.column(REJECT_REASON).filter(pa.array(newly)))
    return out, StageStats(n_in, n_in - int(newly.sum()), rejected, time.perf_counter() - t0, metrics or None)


def per_record(stage: Stage, table: pa.Table) -> pa.Table:
    """``stage(table)``; where it raises, the stage runs on each half, down to single rows:
    a row that fails alone is rejected as ``<stage>/error:<exception>`` (its input as it
    came, the stage's columns null), so no page ends a run and the others are judged as
    in any batch (a map stage judges each row alone). An error of the machine or the storage
    (:func:`datacurate.core.errors.is_operational`: a full disk, a lost object store, memory) and
    an interruption are raised as they are: they stop the run, and ``--resume`` goes on."""
    try:
        return stage(table)
    except Exception as e:  # noqa: BLE001 - one record's failure is that record's reject reason
        if is_operational(e):
            raise
        if table.num_rows <= 1:
            return _failed(stage, table, e)
    half = table.num_rows // 2
    parts = [per_record(stage, table.slice(0, half)), per_record(stage, table.slice(half))]
    return pa.concat_tables(parts, promote_options="permissive")


def _failed(stage: Stage, table: pa.Table, error: Exception) -> pa.Table:
    out = _ensure_columns(table, stage.columns)
    detail = " ".join(f"{type(error).__name__}: {error}".split())[:200]
    reason = pa.array([f"{stage.name}/error:{detail}"] * table.num_rows, pa.string())
    i = out.schema.get_field_index(REJECT_REASON)
    return out.set_column(i, REJECT_REASON, reason) if i >= 0 else out.append_column(REJECT_REASON, reason)


def _finish(table: pa.Table, stages: Sequence[Stage], seg: Segment, cfg: PipelineConfig, stats: dict) -> None:
    """Run the segment's map stages on ``table`` and write its parts."""
    for stage in stages:
        table, st = apply_stage(stage, table)
        add_task(stats, {"stages": {stage.stats_key(stage.config): st}})
    t0 = time.perf_counter()
    out = cfg.output.path
    name = f"s{seg.index}-{part_name(table.column(ORD)[0].as_py())}"
    rejected_dir = storage.join(out, "rejected")
    if seg.final:
        written = write_parts(_output(table, seg.columns), storage.join(out, "kept"), rejected_dir, name,
                              cfg.output.compression)
    else:
        written = _write_split(table, seg, out, name, cfg)
    final = table if seg.final else table.filter(pc.is_valid(table.column(REJECT_REASON)))
    merge(stats, {"profile": profile(final, *profiled(cfg))})  # the report's counts, made here (report.profile)
    stats["kept" if seg.final else "passed"] = stats.get("kept" if seg.final else "passed", 0) + written["kept"]
    merge(stats["rejected"], count_reasons(table.column(REJECT_REASON).drop_null()))
    merge(stats, {"write_seconds": time.perf_counter() - t0})


def profiled(cfg: PipelineConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What :func:`datacurate.report.profile.profile` needs of a run: the stages whose rejects
    hold the input payload as text (the reader's, and up to the first stage that rewrites
    the text; none when no stage does), and the columns stages count with a heading."""
    names = [INPUT_STAGE]
    for s in cfg.stages:
        names.append(s.cls.stats_key(s.config))  # as its rows' reject_stage names it (exact_dedup:url)
        if s.cls.rewrites_text(s.config):
            break
    else:
        names = []
    return tuple(names), tuple(c for s in cfg.stages for c, h in s.cls.counted.items() if h)


def _write_split(table: pa.Table, seg: Segment, out: str, name: str, cfg: PipelineConfig) -> dict:
    """Not the last segment: kept rows (with ``_ord``) to the work dir for the next global
    stage; rejected rows, in the final schema, to OUT/rejected."""
    from datacurate.formats.io import write_atomic

    rejected = pc.is_valid(table.column(REJECT_REASON))
    ok = table.filter(pc.invert(rejected))
    rej = _output(table.filter(rejected), seg.columns)
    if ok.num_rows:
        write_atomic(ok.drop_columns([REJECT_STAGE, REJECT_REASON]),
                     storage.join(layout.parts(out, seg.index), f"part-{name}.parquet"), cfg.output.compression)
    if rej.num_rows:
        write_atomic(fields.for_output(rej), storage.join(out, "rejected", f"part-{name}.parquet"),
                     cfg.output.compression)
    return {"kept": ok.num_rows, "rejected": rej.num_rows}


def new_stats() -> dict:
    return {"tasks": 1, "read": 0, "kept": 0, "rejected": {}, "stages": {}}


def curate_task(task: ReadTask | dict, cfg: PipelineConfig, seg: Segment, stages: Sequence[Stage] | None = None) -> dict:
    """Segment 0: read one task, run the map stages on each batch, write parts; return stats."""
    stages = list(stages) if stages is not None else build_stages(seg.maps)
    counters: dict = {}
    stats = new_stats()
    t_read, read_seconds = time.perf_counter(), 0.0
    reader = read_task(task, cfg.input, counters)
    try:
        for table in reader:
            read_seconds += time.perf_counter() - t_read
            n = table.num_rows
            rejected = count_reasons(table.column(REJECT_REASON).drop_null())
            stats["read"] += n
            add_task(stats, {"stages": {INPUT_STAGE: StageStats(n, n - sum(rejected.values()), rejected)}})
            _finish(table, stages, seg, cfg, stats)
            if faults.point(INPUT_STAGE, "read"):  # tests: the task stops short of its file's end
                break
            t_read = time.perf_counter()
    finally:
        reader.close()  # its tally of what it consumed goes into counters
    read_seconds += time.perf_counter() - t_read
    add_task(stats, {"stages": {INPUT_STAGE: StageStats(seconds=read_seconds)}})
    stats["input_files"] = counters
    return plain(stats)


def load_decisions(directory: str, part_file: str, stage: Stage) -> pa.Table:
    path = storage.join(directory, posixpath.basename(part_file))
    if storage.exists(path):
        return storage.read_parquet(path)
    cols = {ORD: pa.array([], pa.int64()), REJECT_REASON: pa.array([], pa.string())}
    cols.update({n: pa.array([], t) for n, t in stage.columns.items()})
    return pa.table(cols)


def curate_work_file(path: str, cfg: PipelineConfig, seg: Segment, global_stage: Stage,
                     stages: Sequence[Stage] | None = None) -> dict:
    """Later segments: one intermediate part -> global decisions -> map stages -> parts."""
    stages = list(stages) if stages is not None else build_stages(seg.maps)
    stats = new_stats()
    stats["read"] = 0  # counted once, in segment 0
    table = storage.read_parquet(path)
    for name, typ in REJECT_COLUMNS.items():
        table = table.append_column(name, pa.nulls(table.num_rows, typ))
    decisions = load_decisions(layout.decisions(cfg.output.path, seg.index), path, global_stage)
    table, st = apply_stage(global_stage, table, decisions)
    add_task(stats, {"stages": {global_stage.stats_key(global_stage.config): st}})
    _finish(table, stages, seg, cfg, stats)
    return plain(stats)
