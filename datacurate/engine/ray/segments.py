"""Map work on Ray: a list of items (read tasks for segment 0, intermediate part files for
later segments) becomes a Ray Data dataset, one block per item, mapped by a pool of
:class:`SegmentWork` actors, one CPU each: each builds the segment's stages once (models
load in ``__init__``) and runs the Ray-free :mod:`datacurate.engine.process` functions on
each item it gets (read -> stages -> write parts, batch by batch), so a worker holds one
batch and the driver only per-item statistics. A worker that dies is restarted and its
item run again (Ray Data's actor pool); a finished item is in the journal for ``--resume``.
"""

from __future__ import annotations

import json
from typing import Callable, Iterator

import pyarrow as pa
import ray
import ray.data

from datacurate import errors
from datacurate.config import PipelineConfig
from datacurate.engine import faults
from datacurate.engine.memory import give_back
from datacurate.engine.process import build_stages, curate_task, curate_work_file, output_schema, segments_of
from datacurate.engine.ray.data import map_items, quiet_data_context
from datacurate.registry import STAGES


def _build(cfg: PipelineConfig, seg_index: int) -> tuple:
    seg = segments_of(cfg)[seg_index]
    g = seg.global_before
    return seg, build_stages(seg.maps), STAGES[g.name](g.config) if g else None


class SegmentWork:
    """One segment's map work in one worker (a Ray Data class UDF; see the module docstring)."""

    def __init__(self, cfg: PipelineConfig, seg_index: int, journal=None):
        self.cfg, self.seg_index, self.journal = cfg, seg_index, journal
        self.seg, self.stages, self.gstage = errors.guarded(_build, cfg, seg_index)

    def __call__(self, batch: pa.Table) -> Iterator[pa.Table]:
        return errors.guarded(self._items, batch)

    def _items(self, batch: pa.Table) -> Iterator[pa.Table]:
        for entry in batch.column("item").to_pylist():
            name, item = json.loads(entry)
            if self.gstage is None:
                stats = curate_task(json.loads(item), self.cfg, self.seg, self.stages)
            else:
                stats = curate_work_file(item, self.cfg, self.seg, self.gstage, self.stages)
            if self.journal is not None:
                self.journal.record(f"s{self.seg_index}", name, stats)
            for stage in self.stages:
                faults.point(stage.name, "map")
            give_back()
            yield pa.table({"key": [name], "stats": [json.dumps(stats)]})


def run_segment(cfg: PipelineConfig, seg_index: int, items: list[tuple[str, str]],
                on_stats: Callable[[dict, str], None], journal=None) -> None:
    """Run one segment's map work over ``items`` ((name, read task or part file)); ``on_stats``
    gets each item's stats and name on the driver; with a ``journal`` each finished item is recorded."""
    if not items:
        return
    quiet_data_context()
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    ds = ray.data.from_items([{"item": json.dumps(list(i))} for i in items], override_num_blocks=len(items))
    ds = ds.map_batches(SegmentWork, fn_constructor_kwargs={"cfg": cfg, "seg_index": seg_index, "journal": journal},
                        batch_size=1, batch_format="pyarrow", num_cpus=1,
                        compute=ray.data.ActorPoolStrategy(size=min(cpus, len(items)), max_tasks_in_flight_per_actor=1))
    for row in ds.iter_rows():
        on_stats(json.loads(row["stats"]), row["key"])


def _conform_items(batch: pa.Table, plan: dict, compression: str) -> pa.Table:
    from datacurate.fields import conform

    for path in batch.column("item").to_pylist():
        conform(path, plan[path], compression)
        give_back()
    return pa.table({"done": batch.column("item")})


def unify_fields(cfg: PipelineConfig) -> int:
    """Give every part of kept/ and rejected/ the run's extra fields, in one order and type
    (:func:`datacurate.fields.unify_plan`: footers only), rewriting the parts that differ,
    one task each; how many were rewritten."""
    from datacurate import storage
    from datacurate.fields import unify_plan

    files = [f for d in ("kept", "rejected") for f in storage.list_files(storage.join(cfg.output.path, d), ".parquet")]
    plan = unify_plan(files, output_schema(cfg.stages).names)
    if plan:
        map_items(sorted(plan), _conform_items, {"plan": plan, "compression": cfg.output.compression}).materialize()
    return len(plan)


def _one(batch: pa.Table, fn: Callable, kwargs: dict) -> pa.Table:
    return pa.table({"out": [json.dumps(fn(**kwargs))]})


def in_one_task(fn: Callable, **kwargs):
    """``fn(**kwargs)`` (a JSON-able result) inside one Ray task, retried like any other."""
    return json.loads(next(iter(map_items(["one"], _one, {"fn": fn, "kwargs": kwargs}).iter_rows()))["out"])
