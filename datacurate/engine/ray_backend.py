"""The one place that knows about Ray.

* Map work: a list of items (read tasks for segment 0, intermediate part files for later
  segments) becomes a Ray Data dataset, one block per item; ``map_batches`` runs the
  Ray-free :mod:`datacurate.engine.process` functions on each (read -> stages -> write
  parts, batch by batch), so a worker holds one batch and the driver only per-item
  statistics.
* Global stages: their all-to-all phases (shuffles, groupbys, actors holding filter
  slices) live in :mod:`datacurate.engine.global_ops`.

With no address an embedded local Ray starts with the configured resources; with an
address (``--ray-address``, ``RAY_ADDRESS``, or the environment ``ray job submit``
sets up) the same code runs on a cluster.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Callable, Iterator

import pyarrow as pa

from datacurate.config import PipelineConfig, RayConfig
from datacurate.engine.process import (
    build_stages, curate_task, curate_work_file, output_schema, plan_segments,
)
from datacurate.stages import STAGES

_STAGE_CACHE: dict = {}  # per worker process: models load once, not once per task


def init_ray(cfg: RayConfig) -> bool:
    """Connect to (address) or start (no address) Ray; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs = dict(logging_level=logging.WARNING, log_to_driver=True)
    if cfg.address:
        ray.init(address=cfg.address, **kwargs)
        return True
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, loopback-only cluster
    ray.init(
        address="local",  # always a private instance: never join a cluster that happens to run here
        num_cpus=cfg.num_cpus,
        object_store_memory=cfg.object_store_memory_mb * (1 << 20) if cfg.object_store_memory_mb else None,
        include_dashboard=False,
        **kwargs,
    )
    return True


def segments_of(cfg: PipelineConfig):
    segs = plan_segments(cfg.stages)
    columns = list(zip(output_schema(cfg.stages).names, output_schema(cfg.stages).types))
    for s in segs:
        s.columns = columns
    return segs


def _stages_for(cfg: PipelineConfig, seg_index: int, key: str):
    cached = _STAGE_CACHE.get((key, seg_index))
    if cached is None:
        seg = segments_of(cfg)[seg_index]
        g = STAGES[seg.global_before.name](seg.global_before.config) if seg.global_before else None
        cached = _STAGE_CACHE[(key, seg_index)] = (seg, build_stages(seg.maps), g)
    return cached


def _run_items(batch: pa.Table, cfg: PipelineConfig, seg_index: int, key: str) -> Iterator[pa.Table]:
    seg, stages, gstage = _stages_for(cfg, seg_index, key)
    for item in batch.column("item").to_pylist():
        if gstage is None:
            stats = curate_task(json.loads(item), cfg, seg, stages)
        else:
            stats = curate_work_file(item, cfg, seg, gstage, stages)
        yield pa.table({"stats": [json.dumps(stats)]})


def quiet_data_context():
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the runner prints its own funnel line
    ctx.print_on_execution_start = False
    return ctx


def run_segment(cfg: PipelineConfig, seg_index: int, items: list[str], on_stats: Callable[[dict], None]) -> None:
    """Run one segment's map work over ``items``; ``on_stats`` gets each item's stats on the driver."""
    if not items:
        return
    ds = map_items(items, _run_items, {"cfg": cfg, "seg_index": seg_index, "key": str(hash(repr(cfg.stages)))})
    for row in ds.iter_rows():
        on_stats(json.loads(row["stats"]))


def map_items(items: list[str], fn: Callable, fn_kwargs: dict):
    """A dataset running ``fn(batch of one "item", **fn_kwargs)`` once per item (a read
    task or a part file), one CPU each: the shape of every per-file phase."""
    import ray.data

    quiet_data_context()
    ds = ray.data.from_items([{"item": i} for i in items], override_num_blocks=len(items))
    return ds.map_batches(fn, batch_size=1, batch_format="pyarrow", fn_kwargs=fn_kwargs, num_cpus=1)


def shutdown() -> None:
    import ray

    ray.shutdown()
