"""The work of one read task, with no Ray in sight: read -> stages -> write parts.

The engine hands each read task to :func:`curate_task` inside a Ray Data
``map_batches``; tests and the Python API can call it directly. Rejected rows stay in
the batch (later stages skip them) until :func:`datacurate.io.write_parts` splits kept
from rejected, so every document read is written exactly once.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.config import PipelineConfig, StageSpec
from datacurate.engine.stats import count_reasons, merge
from datacurate.io import ReadTask, read_task, write_parts
from datacurate.schema import (
    BASE_COLUMNS, INPUT_STAGE, PART, REJECT_COLUMNS, REJECT_REASON, REJECT_STAGE, ROW, is_internal,
)
from datacurate.stages import STAGES, Stage


def build_stages(specs: Sequence[StageSpec]) -> list[Stage]:
    return [STAGES[s.name](s.config) for s in specs]


def output_schema(stages: Sequence[Stage]) -> pa.Schema:
    """Column order and types of every part file: base, annotations (stage order), reject."""
    fields = dict(BASE_COLUMNS)
    for st in stages:
        fields.update(st.columns)
    fields.update(REJECT_COLUMNS)
    return pa.schema(list(fields.items()))


def apply_stage(stage: Stage, table: pa.Table) -> tuple[pa.Table, dict]:
    """Run ``stage`` on the rows nobody rejected yet; return the full batch and its stats."""
    t0 = time.perf_counter()
    alive = np.asarray(pc.is_null(table.column(REJECT_REASON)))
    n_in = int(alive.sum())
    if n_in == table.num_rows:
        out = stage(table)
    else:
        idx_alive = np.flatnonzero(alive)
        idx_dead = np.flatnonzero(~alive)
        dead = table.take(idx_dead)
        if n_in:
            live = stage(table.take(idx_alive))
            old_reasons = dead.column(REJECT_REASON)
            for name in live.column_names:
                if name not in dead.column_names:
                    dead = dead.append_column(name, pa.nulls(dead.num_rows, live.schema.field(name).type))
            dead = dead.set_column(dead.schema.get_field_index(REJECT_REASON), REJECT_REASON, old_reasons)
            dead = dead.select(live.column_names).cast(live.schema)
            merged = pa.concat_tables([live, dead])
            out = merged.take(np.argsort(np.concatenate([idx_alive, idx_dead]), kind="stable"))
        else:
            out = table
    for name, typ in stage.columns.items():
        if name not in out.column_names:
            out = out.append_column(name, pa.nulls(out.num_rows, typ))
        elif out.schema.field(name).type != typ:
            out = out.set_column(out.schema.get_field_index(name), name, out.column(name).cast(typ))
    reasons = out.column(REJECT_REASON)
    newly = np.asarray(pc.is_valid(reasons)) & alive
    stage_col = np.asarray(out.column(REJECT_STAGE).to_pylist(), dtype=object)
    stage_col[newly] = stage.name
    out = out.set_column(out.schema.get_field_index(REJECT_STAGE), REJECT_STAGE, pa.array(stage_col, pa.string()))
    rejected = count_reasons(reasons.filter(pa.array(newly)))
    metrics = stage.metrics(out.filter(pa.array(alive))) if n_in else {}
    st = {"in": n_in, "kept": n_in - int(newly.sum()), "rejected": rejected,
          "seconds": time.perf_counter() - t0}
    if metrics:
        st["metrics"] = metrics
    return out, st


def curate_task(task: ReadTask | dict, cfg: PipelineConfig, stages: Sequence[Stage] | None = None) -> dict:
    """Read one task, run the stages on each batch, write kept/rejected parts; return stats."""
    stages = list(stages) if stages is not None else build_stages(cfg.stages)
    schema = output_schema(stages)
    counters: dict = {}
    stats: dict = {"tasks": 1, "read": 0, "kept": 0, "rejected": {}, "stages": {}}
    t_read = time.perf_counter()
    read_seconds = 0.0
    for table in read_task(task, cfg.input, counters):
        read_seconds += time.perf_counter() - t_read
        n = table.num_rows
        input_rejects = count_reasons(table.column(REJECT_REASON).drop_null())
        stats["read"] += n
        merge(stats["stages"], {INPUT_STAGE: {"in": n, "kept": n - sum(input_rejects.values()),
                                              "rejected": input_rejects, "seconds": 0.0}})
        for stage in stages:
            table, st = apply_stage(stage, table)
            merge(stats["stages"], {stage.name: st})
        t0 = time.perf_counter()
        part = table.column(PART)[0].as_py() + f"-{table.column(ROW)[0].as_py():09d}"
        table = table.select([c for c in table.column_names if not is_internal(c)])
        table = table.select(schema.names).cast(schema)
        written = write_parts(table, cfg.output.path, part, cfg.output.compression)
        stats["kept"] += written["kept"]
        merge(stats["rejected"], count_reasons(table.column(REJECT_REASON).drop_null()))
        merge(stats, {"write_seconds": time.perf_counter() - t0})
        t_read = time.perf_counter()
    read_seconds += time.perf_counter() - t_read
    merge(stats["stages"], {INPUT_STAGE: {"in": 0, "kept": 0, "rejected": {}, "seconds": read_seconds}})
    stats["input_files"] = counters
    return stats
