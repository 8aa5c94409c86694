"""Ray Data behind the primitives a global stage uses: :class:`Data` (a distributed
table: map, groupby, join, sorted head), :class:`ActorRef` (a stateful worker), and
:func:`map_items`, one task per item (a file, a read task): the shape of every per-file
phase. Every function handed to them is plain code on pyarrow Tables.
"""

from __future__ import annotations

import functools
import logging
import math
import posixpath
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import ray
import ray.data

from datacurate.core import errors
from datacurate.formats import storage
from datacurate.phases import faults
from datacurate.phases.context import JP, SIDE, Blocks, Worker, join_group
from datacurate.engine.memory import give_back


def _task(fn: Callable, stage: str, phase: str, batch, **kw):
    out = errors.guarded(fn, batch, **kw)
    faults.point(stage, phase)
    give_back()
    return out


class Data(Blocks):
    """:class:`~datacurate.phases.context.Blocks` on Ray Data: a distributed table (a Ray Data
    dataset, lazily evaluated)."""

    def __init__(self, ds, stage: str, blocks: int = 1, max_blocks: int = 1 << 30):
        # blocks: how many blocks ``ds`` has (one per file read, ``parts`` after a shuffle);
        # max_blocks: how many a shuffle's input may have (see _bounded)
        self._ds, self._stage, self._blocks, self._max = ds, stage, blocks, max_blocks

    def _wrap(self, ds, blocks: int | None = None) -> "Data":
        return Data(ds, self._stage, self._blocks if blocks is None else blocks, self._max)

    def _bounded(self, ds, blocks: int):
        """``ds`` (of ``blocks`` blocks) coalesced to at most ``max_blocks`` before a
        sort-based shuffle. Measured here (Ray 2.60, 2 cores, 676k rows in 515 blocks, one
        per part file): a groupby of even two integer columns grew the driver by about 1 GB
        of native memory, and 1.7 GB with all columns (growing faster than the block count:
        +0.19 GB at 147 blocks); coalesced to 8 blocks first, the driver stayed at 0.23 GB
        and the groupby took 31 s instead of 74 s."""
        return ds.repartition(self._max) if blocks > self._max else ds

    def _fn(self, fn: Callable, phase: str):
        return functools.partial(_task, fn, self._stage, phase)

    def map(self, phase: str, fn: Callable, whole: bool = False, **kw) -> "Data":
        size = {"batch_size": None} if whole else {}
        return self._wrap(self._ds.map_batches(self._fn(fn, phase), batch_format="pyarrow", fn_kwargs=kw, **size))

    def map_pool(self, phase: str, cls: type, args: tuple, batch_rows: int, gpus: int = 0, cpus: int = 1,
                 concurrency: int = 1) -> "Data":
        """A Ray Data actor pool of ``concurrency`` actors (``num_gpus`` = ``gpus`` each when
        the cluster has GPUs): each builds ``cls(*args)`` once (a model loads once per actor)
        and is fed batches while the tasks before it (tokenizers on CPU workers) run ahead."""
        # Ray 2.60 prints one core-worker line per pool (its MapWorker's constructor arguments in the
        # object store with restarts allowed, ray-project/ray#53727); restarts are worth more than the line
        return self._wrap(self._ds.map_batches(
            _PoolWorker, fn_constructor_args=(cls, args, self._stage, phase), batch_size=batch_rows,
            batch_format="pyarrow", num_gpus=gpus, num_cpus=cpus,
            concurrency=max(1, min(concurrency, self._blocks))))  # no more actors than blocks to feed them

    def groupby(self, phase: str, key: str, parts: int, fn: Callable, concurrency: int | None = None, **kw) -> "Data":
        extra = {"concurrency": concurrency} if concurrency else {}
        ds = self._bounded(self._ds, self._blocks)
        return self._wrap(ds.groupby(key, num_partitions=parts).map_groups(
            self._fn(fn, phase), batch_format="pyarrow", fn_kwargs=kw, **extra), blocks=parts)

    def join(self, other: "Data", on: str, parts: int) -> "Data":
        """Built from one sort-based groupby of both sides tagged and partitioned by key, and
        a vectorised lookup per partition: Ray Data's own join starts hash-shuffle actors
        that cost about 8 s per join even on a few hundred rows (measured here, Ray 2.60).
        """
        left_schema, right_schema = self._ds.schema(), other._ds.schema()
        fields = [pa.field(n, t) for n, t in zip(left_schema.names, left_schema.types)]
        fields += [pa.field(n, t) for n, t in zip(right_schema.names, right_schema.types) if n not in left_schema.names]
        schema = pa.schema(fields)
        left = self._ds.map_batches(_join_side, batch_format="pyarrow",
                                    fn_kwargs={"side": 0, "on": on, "parts": parts, "schema": schema})
        right = other._ds.map_batches(_join_side, batch_format="pyarrow",
                                      fn_kwargs={"side": 1, "on": on, "parts": parts, "schema": schema})
        both = self._bounded(left.union(right), self._blocks + other._blocks)
        joined = both.groupby(JP, num_partitions=parts).map_groups(
            join_group, batch_format="pyarrow",
            fn_kwargs={"on": on, "left": list(left_schema.names), "right": [n for n in right_schema.names if n != on]})
        return self._wrap(joined, blocks=parts)

    def single(self, phase: str, fn: Callable, **kw) -> "Data":
        """A repartition to one block, then one map over it."""
        return self._wrap(self._ds.repartition(1), blocks=1).map(phase, fn, whole=True, **kw)

    def select(self, columns: Sequence[str]) -> "Data":
        return self._wrap(self._ds.select_columns(list(columns)))

    def rename(self, mapping: dict) -> "Data":
        return self._wrap(self._ds.rename_columns(mapping))

    def materialize(self) -> "Data":
        return self._wrap(self._ds.materialize())

    def count(self) -> int:
        return self._ds.count()

    def rows(self) -> list[dict]:
        return list(self._ds.iter_rows())


class _PoolWorker:
    """The actor of :meth:`Data.map_pool`: the stage's worker object, errors explained."""

    def __init__(self, cls: type, args: tuple, stage: str, phase: str):
        self.obj, self.stage, self.phase = errors.guarded(cls, *args), stage, phase

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = errors.guarded(self.obj, batch)
        faults.point(self.stage, self.phase)
        return out


def _join_side(batch: pa.Table, side: int, on: str, parts: int, schema: pa.Schema) -> pa.Table:
    cols = [batch[f.name] if f.name in batch.column_names else pa.nulls(batch.num_rows, f.type) for f in schema]
    key = batch[on].to_numpy()
    cols += [pa.array(np.full(batch.num_rows, side, np.int8)), pa.array((key % parts).astype(np.int32))]
    return pa.Table.from_arrays(cols, names=schema.names + [SIDE, JP])


class ActorRef(Worker):
    """A stateful worker a global stage created; :meth:`call` runs one method on it."""

    def __init__(self, handle, name: str = "actor"):
        self.handle, self.name = handle, name

    def call(self, method: str, *args):
        try:
            return ray.get(getattr(self.handle, method).remote(*args))
        except ray.exceptions.RayActorError as e:  # its node (or process) is gone, and the state it held
            why = next((ln.strip() for ln in str(e).splitlines() if "died because" in ln), "it died")
            raise errors.Explained(f"lost {self.name}, which held part of the stage's state: {why}") from None


SHUFFLE_BLOCK_BYTES = 64 << 20  # Parquet bytes read per block fed to a shuffle
MAX_SHUFFLE_BLOCKS = 256


def shuffle_blocks(files: Sequence[str]) -> int:
    """How many blocks a shuffle of data read from ``files`` may take: one per 64 MiB of
    Parquet (at least two per CPU of the cluster, at most 256)."""
    listed: dict = {}
    for d in {posixpath.dirname(f) for f in files}:  # one listing per directory, not a request per file
        listed.update(storage.sizes(d))
    total = sum(listed.get(f, 0) for f in files)
    cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
    return int(min(MAX_SHUFFLE_BLOCKS, max(2 * cpus, math.ceil(total / SHUFFLE_BLOCK_BYTES))))


def quiet_data_context():
    logging.getLogger("ray.data").setLevel(logging.CRITICAL)  # a failed task: the CLI says it in one line
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the runner prints its own funnel line
    ctx.print_on_execution_start = False
    # groupbys by sort-based shuffle in tasks: the default hash shuffle starts aggregator
    # actors, about 5 s per groupby even on a few hundred rows here (Ray 2.60)
    ctx.shuffle_strategy = "sort_shuffle_pull_based"
    return ctx


def map_items(items: list[str], fn: Callable, fn_kwargs: dict, blocks: int | None = None):
    """A dataset running ``fn(batch of "item"s, **fn_kwargs)``, one CPU each: once per item
    (a read task or a part file), or, with ``blocks``, once per each of that many runs of
    consecutive items (never more tasks than items).

    ``blocks`` bounds what the driver holds: Ray Data keeps per-block statistics and
    references on the driver while a dataset runs, so one block per part file made the
    driver grow with the corpus (~11 KB per part file: 0.353 GB at 1M documents, 0.412 GB
    at 3M over the global stages, where exact and near dedup read 2,608 / 7,812 parts;
    benchmarks/README.md, driver benchmark)."""
    quiet_data_context()
    n = len(items) if blocks is None else max(1, min(blocks, len(items)))
    ds = ray.data.from_items([{"item": i} for i in items], override_num_blocks=n)
    return ds.map_batches(functools.partial(errors.guarded, fn), batch_size=1 if blocks is None else None,
                          batch_format="pyarrow", fn_kwargs=fn_kwargs, num_cpus=1)
