"""The one place that knows about Ray.

Read tasks become a Ray Data dataset (one block per task); ``map_batches`` runs
:func:`curate_task` on each (read -> stages -> write parts, streaming batch by batch,
so a worker holds one batch and the driver holds only per-task statistics). With no
address an embedded local Ray starts with the configured resources; with an address
(``--ray-address``, ``RAY_ADDRESS``, or the environment ``ray job submit`` sets up)
the same code runs on a cluster.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Callable, Iterator

import pyarrow as pa

from datacurate.config import PipelineConfig, RayConfig
from datacurate.engine.process import build_stages, curate_task

_STAGE_CACHE: dict[int, list] = {}  # per worker process: models load once, not once per task


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
        num_cpus=cfg.num_cpus,
        object_store_memory=cfg.object_store_memory_mb * (1 << 20) if cfg.object_store_memory_mb else None,
        include_dashboard=False,
        **kwargs,
    )
    return True


def _curate_blocks(batch: pa.Table, cfg: PipelineConfig, key: int) -> Iterator[pa.Table]:
    stages = _STAGE_CACHE.get(key)
    if stages is None:
        stages = _STAGE_CACHE[key] = build_stages(cfg.stages)
    for task in batch.column("task").to_pylist():
        stats = curate_task(json.loads(task), cfg, stages)
        yield pa.table({"stats": [json.dumps(stats)]})


def execute(cfg: PipelineConfig, tasks: list, on_stats: Callable[[dict], None]) -> None:
    """Run every read task on Ray; call ``on_stats`` on the driver as each task finishes."""
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # one fused operator: the runner prints its own funnel line
    ctx.print_on_execution_start = False
    items = [{"task": json.dumps(t.to_dict())} for t in tasks]
    ds = ray.data.from_items(items, override_num_blocks=max(1, len(items)))
    ds = ds.map_batches(
        _curate_blocks,
        batch_size=1,
        batch_format="pyarrow",
        fn_kwargs={"cfg": cfg, "key": hash(repr(cfg.stages))},
        num_cpus=1,
    )
    for row in ds.iter_rows():
        on_stats(json.loads(row["stats"]))


def shutdown() -> None:
    import ray

    ray.shutdown()
