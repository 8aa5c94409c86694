"""The one place that knows about Ray.

* Map work: a list of items (read tasks for segment 0, intermediate part files for later
  segments) becomes a Ray Data dataset, one block per item; ``map_batches`` runs the
  Ray-free :mod:`datacurate.engine.process` functions on each (read -> stages -> write
  parts, batch by batch), so a worker holds one batch and the driver only per-item
  statistics.
* Global stages: their all-to-all phases (shuffles, groupbys, actors holding filter
  slices) run through :mod:`datacurate.engine.context`, which the stages call.

With no address an embedded local Ray starts with the configured resources; with an
address (``--ray-address``, ``RAY_ADDRESS``, or the environment ``ray job submit``
sets up) the same code runs on a cluster.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import sys
import threading
import time
from typing import Callable, Iterator

import pyarrow as pa

from datacurate import errors
from datacurate.config import PipelineConfig, RayConfig
from datacurate.engine import faults, supervise
from datacurate.engine.memory import give_back
from datacurate.engine.process import (
    build_stages, curate_task, curate_work_file, output_schema, plan_segments,
)
_STAGE_CACHE: dict = {}  # per worker process: models load once, not once per task


LOST_AFTER_S = 5.0  # the cluster's control store unreachable this long: the run stops


def _watch(gcs_address: str, stop: threading.Event, lost_after: float = LOST_AFTER_S) -> None:
    """Library use (no CLI supervisor): stop the process with one line when the cluster's
    GCS stops answering, instead of Ray's minutes of reconnect attempts (or a hang) when a
    cluster goes away mid-run. Best effort: Ray's own exit of the driver can come first;
    the CLI's supervisor (:mod:`datacurate.engine.supervise`) has no such race."""
    host, port = gcs_address.rsplit(":", 1)
    down_since = None
    while not stop.wait(0.5):
        try:
            socket.create_connection((host, int(port)), timeout=2.0).close()
            down_since = None
        except OSError:
            down_since = down_since or time.monotonic()
            if time.monotonic() - down_since >= lost_after:
                print(f"datacurate: lost the Ray cluster at {gcs_address} (no answer for {lost_after:.0f} s); "
                      "the run stopped: run again with --resume to continue", file=sys.stderr, flush=True)
                os._exit(3)


_WATCH: dict = {}


def init_ray(cfg: RayConfig) -> bool:
    """Connect to (address) or start (no address) Ray; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs = dict(logging_level=logging.WARNING, log_to_driver=True)
    if cfg.address:
        if supervise.announce(cfg.address):  # the CLI's supervisor watches (engine/supervise.py)
            ray.init(address=cfg.address, **kwargs)
            node = ray._private.worker.global_worker.node
            supervise.announce(getattr(ray.get_runtime_context(), "gcs_address", None) or cfg.address,
                               f"{node.node_ip_address}:{node.node_manager_port}")
            return True
        early = _watch_address(cfg.address)  # a cluster that dies while we connect: no endless retries
        ray.init(address=cfg.address, **kwargs)
        if early is not None:
            early.set()
        _start_watch(ray)
        return True
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an embedded, loopback-only cluster
    ray.init(
        address="local",  # always a private instance: never join a cluster that happens to run here
        num_cpus=cfg.num_cpus,
        object_store_memory=object_store_bytes(cfg),
        # processes that spill and restore objects: Ray's default of 4 costs 0.1-0.3 GB
        # each; one spilled 2.2 GB at 474 MiB/s in the 1M-document run (4: 313 MiB/s)
        _system_config={"max_io_workers": max(1, (cfg.num_cpus or os.cpu_count() or 1) // 4)},
        include_dashboard=False,
        **kwargs,
    )
    _start_watch(ray)
    return True


OBJECT_STORE_MB_PER_CPU = 512


def object_store_bytes(cfg: RayConfig) -> int:
    """The embedded Ray's object store: ``object_store_memory_mb``, else 512 MiB per CPU
    (never more than Ray's own default, 30 % of memory).

    The object store only carries global stages' shuffles (map work writes Parquet
    parts), and beyond its size Ray spills to disk. Its pages stay resident once touched,
    so with Ray's default the memory peak grew with the corpus: on 2 cores, the touched
    store alone was 0.8 GB at 300k documents and more at 1M; capped at 1 GiB the 1M run
    spilled 2 GB and its peak fell from 4.36 to 3.32 GB (issue 18, benchmarks/README.md)."""
    if cfg.object_store_memory_mb:
        return cfg.object_store_memory_mb * (1 << 20)
    cpus = cfg.num_cpus or os.cpu_count() or 1
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    want = int(cpus * OBJECT_STORE_MB_PER_CPU) << 20
    return min(want, int(0.3 * total)) if total else want


def _watch_address(address: str) -> threading.Event | None:
    """Watch a ``host:port`` address before Ray has connected (None for others: auto, ray://)."""
    if address == "auto" or "://" in address or ":" not in address:
        return None
    stop = threading.Event()
    threading.Thread(target=_watch, args=(address, stop, 3 * LOST_AFTER_S), name="datacurate-ray-connect",
                     daemon=True).start()
    return stop


def _start_watch(ray) -> None:
    stop = threading.Event()
    address = getattr(ray.get_runtime_context(), "gcs_address", None)
    if not address or ":" not in address:  # e.g. a Ray Client (ray://) session: Ray's own errors apply
        return
    thread = threading.Thread(target=_watch, args=(address, stop), name="datacurate-ray-watch", daemon=True)
    thread.start()
    _WATCH["stop"] = stop


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
        g = seg.global_before.cls(seg.global_before.config) if seg.global_before else None
        _STAGE_CACHE.clear()  # segments run one after another: an earlier one's models are done with
        cached = _STAGE_CACHE[(key, seg_index)] = (seg, build_stages(seg.maps), g)
    return cached


def _run_items(batch: pa.Table, cfg: PipelineConfig, seg_index: int, key: str, journal) -> Iterator[pa.Table]:
    seg, stages, gstage = _stages_for(cfg, seg_index, key)
    for entry in batch.column("item").to_pylist():
        name, item = json.loads(entry)
        if gstage is None:
            stats = curate_task(json.loads(item), cfg, seg, stages)
        else:
            stats = curate_work_file(item, cfg, seg, gstage, stages)
        if journal is not None:
            journal.record(f"s{seg_index}", name, stats)
        for stage in stages:
            faults.point(stage.name, "map")
        give_back()
        yield pa.table({"key": [name], "stats": [json.dumps(stats)]})


def quiet_data_context():
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.CRITICAL)  # a failed task: the CLI says it in one line
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the runner prints its own funnel line
    ctx.print_on_execution_start = False
    # groupbys by sort-based shuffle in tasks: the default hash shuffle starts aggregator
    # actors, about 5 s per groupby even on a few hundred rows here (Ray 2.60)
    ctx.shuffle_strategy = "sort_shuffle_pull_based"
    return ctx


def run_segment(cfg: PipelineConfig, seg_index: int, items: list[tuple[str, str]],
                on_stats: Callable[[dict, str], None], journal=None) -> None:
    """Run one segment's map work over ``items`` ((name, read task or part file)); ``on_stats``
    gets each item's stats and name on the driver; with a ``journal`` each finished item is recorded."""
    if not items:
        return
    ds = map_items([json.dumps(list(i)) for i in items], _run_items,
                   {"cfg": cfg, "seg_index": seg_index, "key": str(hash(repr(cfg.stages))), "journal": journal})
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


def map_items(items: list[str], fn: Callable, fn_kwargs: dict):
    """A dataset running ``fn(batch of one "item", **fn_kwargs)`` once per item (a read
    task or a part file), one CPU each: the shape of every per-file phase."""
    import ray.data

    quiet_data_context()
    ds = ray.data.from_items([{"item": i} for i in items], override_num_blocks=len(items))
    return ds.map_batches(functools.partial(errors.guarded, fn), batch_size=1, batch_format="pyarrow",
                          fn_kwargs=fn_kwargs, num_cpus=1)


def shutdown() -> None:
    import ray

    stop = _WATCH.pop("stop", None)
    if stop is not None:
        stop.set()
    ray.shutdown()


def _local_stage(batch: pa.Table, kwargs: dict) -> pa.Table:
    from datacurate.engine.local import run_stage

    return pa.table({"out": [json.dumps(run_stage(**kwargs))]})


def run_global_in_one_task(**kwargs) -> dict:
    """:func:`datacurate.engine.local.run_stage` inside one Ray task (retried like any other)."""
    ds = map_items(["local"], _local_stage, {"kwargs": kwargs})
    return json.loads(next(iter(ds.iter_rows()))["out"])
