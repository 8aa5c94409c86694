"""Map work on Ray: the items (read tasks for segment 0, intermediate part files later)
become Ray tasks (:mod:`datacurate.engine.ray.tasks`), one (one CPU) per item, run by a :class:`SegmentWork` built
once per worker process and segment (models load in ``__init__``) on the Ray-free
:mod:`datacurate.engine.process` functions (read -> stages -> write parts, batch by batch).
A task whose worker dies runs again (Ray's retry); a finished item is journaled.

Not a Ray Data actor pool, though the class has its shape: with Ray 2.60 every run then
prints a core-worker error line (ray-project/ray#57733), which breaks a failed run's one
line, and each segment starts new processes that import everything again (the sample
pipeline on 2 cores: 14-16 s with tasks, 28-38 s with actor pools).
"""

from __future__ import annotations

import json
from typing import Callable, Iterator

import pyarrow as pa

from datacurate.configs.pipeline import PipelineConfig
from datacurate.phases import faults
from datacurate.engine.memory import give_back
from datacurate.engine.process import build_stages, curate_task, curate_work_file, output_schema, segments_of
from datacurate.engine.ray.tasks import run_items


def _build(cfg: PipelineConfig, seg_index: int) -> tuple:
    seg = segments_of(cfg)[seg_index]
    g = seg.global_before
    return seg, build_stages(seg.maps), g.cls(g.config) if g else None


class SegmentWork:
    """One segment's map work in one worker (see the module docstring)."""

    def __init__(self, cfg: PipelineConfig, seg_index: int, journal=None):
        self.cfg, self.seg_index, self.journal = cfg, seg_index, journal
        self.seg, self.stages, self.gstage = _build(cfg, seg_index)

    def __call__(self, batch: pa.Table) -> Iterator[pa.Table]:
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


_WORK: dict = {}  # in a worker process: the SegmentWork of the segment it runs now


def segment_work(cfg: PipelineConfig, seg_index: int, journal=None) -> SegmentWork:
    """This process's :class:`SegmentWork` for segment ``seg_index`` of the run configured
    by ``cfg`` (all of it: a worker of a long-lived cluster serves many runs), built on first
    use; segments run one after another, so an earlier one's (and its models) is dropped."""
    key = (seg_index, repr(cfg))
    if key not in _WORK:
        _WORK.clear()
        _WORK[key] = SegmentWork(cfg, seg_index, journal)
    return _WORK[key]


def _segment_items(batch: pa.Table, cfg: PipelineConfig, seg_index: int, journal) -> Iterator[pa.Table]:
    return segment_work(cfg, seg_index, journal)(batch)


def run_segment(cfg: PipelineConfig, seg_index: int, items: list[tuple[str, str]],
                on_stats: Callable[[dict, str], None], journal=None) -> None:
    """Run one segment's map work over ``items`` ((name, read task or part file)); ``on_stats``
    gets each item's stats and name on the driver; with a ``journal`` each finished item is recorded."""
    if not items:
        return
    for out in run_items([json.dumps(list(i)) for i in items], _segment_items,
                         {"cfg": cfg, "seg_index": seg_index, "journal": journal}):
        for key, stats in zip(out.column("key").to_pylist(), out.column("stats").to_pylist()):
            on_stats(json.loads(stats), key)


def _conform_items(batch: pa.Table, plan: dict, compression: str) -> pa.Table:
    from datacurate.formats.fields import conform

    for path in batch.column("item").to_pylist():
        conform(path, plan[path], compression)
        give_back()
    return pa.table({"done": batch.column("item")})


def unify_fields(cfg: PipelineConfig) -> int:
    """Give every part of kept/ and rejected/ the run's extra fields, in one order and type
    (:func:`datacurate.formats.fields.unify_plan`: footers only), rewriting the parts that differ,
    one task each; how many were rewritten."""
    from datacurate.formats import storage
    from datacurate.formats.fields import unify_plan

    files = [f for d in ("kept", "rejected") for f in storage.list_files(storage.join(cfg.output.path, d), ".parquet")]
    plan = unify_plan(files, output_schema(cfg.stages).names)
    if plan:
        for _ in run_items(sorted(plan), _conform_items, {"plan": plan, "compression": cfg.output.compression}):
            pass
    return len(plan)


def _one(batch: pa.Table, fn: Callable, kwargs: dict) -> pa.Table:
    return pa.table({"out": [json.dumps(fn(**kwargs))]})


def in_one_task(fn: Callable, **kwargs):
    """``fn(**kwargs)`` (a JSON-able result) inside one Ray task, retried like any other."""
    out = next(run_items(["one"], _one, {"fn": fn, "kwargs": kwargs}))
    return json.loads(out.column("out")[0].as_py())


def cluster_gpus() -> int:
    """GPUs of the running cluster."""
    import ray

    return int(ray.cluster_resources().get("GPU", 0))
