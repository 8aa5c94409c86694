"""The global-stage primitives in one process: the small-input path, ``stage(table)``,
and a way to run a stage's distributed phases without a cluster.

:class:`LocalContext` offers what ``RayContext`` (:mod:`datacurate.engine.ray.context`)
offers (per-file tasks, groupbys, joins, a sorted head, stateful workers) with pyarrow in
this process, so a stage's ``run_global`` runs unchanged and writes the same decisions,
shard files and saved filters. Below ``ray.small_input_docs`` documents the engine runs a
global stage this way inside one Ray task: a Ray Data groupby or join costs seconds of
fixed overhead however small the data (measured in benchmarks/README.md). A global stage
called on one table runs the same ``run_global`` here (:func:`run_table`).
"""

from __future__ import annotations

import json
import tempfile
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datacurate.formats import storage
from datacurate.phases import faults, layout
from datacurate.phases.context import SIDE, Blocks, Context, DirectOutputs, Worker, join_group, read_part
from datacurate.phases.journal import Journal
from datacurate.core.schema import ID, ORD, REJECT_REASON


class LocalData(Blocks):
    """:class:`~datacurate.phases.context.Blocks` in memory (a list of tables)."""

    def __init__(self, blocks: list[pa.Table], stage: str):
        self.blocks, self._stage = [b for b in blocks if b is not None], stage

    def _wrap(self, blocks) -> "LocalData":
        return LocalData(list(blocks), self._stage)

    def _concat(self) -> pa.Table | None:
        blocks = [b for b in self.blocks if b.num_rows]
        return pa.concat_tables(blocks, promote_options="permissive") if blocks else None

    def map(self, phase: str, fn: Callable, whole: bool = False, **kw) -> "LocalData":
        out = []
        for b in self.blocks:
            out.append(fn(b, **kw))
            faults.point(self._stage, phase)
        return self._wrap(out)

    def map_pool(self, phase: str, cls: type, args: tuple, batch_rows: int, gpus: int = 0, cpus: int = 1,
                 concurrency: int = 1) -> "LocalData":
        worker = cls(*args)  # one worker: this process
        out = []
        for b in self.blocks:
            out.extend(worker(b.slice(i, batch_rows)) for i in range(0, b.num_rows, batch_rows))
            faults.point(self._stage, phase)
        return self._wrap(out)

    def groupby(self, phase: str, key: str, parts: int, fn: Callable, concurrency: int | None = None,
                **kw) -> "LocalData":
        t = self._concat()
        if t is None:
            return self._wrap([])
        t = t.take(pc.sort_indices(t[key]))  # stable: a group keeps its rows' order
        k = t[key].to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
        ends = np.append(starts[1:], len(k))
        out = []
        for a, b in zip(starts, ends):
            out.append(fn(t.slice(int(a), int(b - a)), **kw))
            faults.point(self._stage, phase)
        return self._wrap(out)

    def join(self, other: "LocalData", on: str, parts: int) -> "LocalData":
        left, right = self._concat(), other._concat()
        if left is None or right is None:
            return self._wrap([])
        tagged = pa.concat_tables([
            left.append_column(SIDE, pa.array(np.zeros(left.num_rows, np.int8))),
            right.append_column(SIDE, pa.array(np.ones(right.num_rows, np.int8)))], promote_options="permissive")
        return self._wrap([join_group(tagged, on, left.column_names, [n for n in right.column_names if n != on])])

    def single(self, phase: str, fn: Callable, **kw) -> "LocalData":
        t = self._concat()
        out = [fn(t, **kw)] if t is not None else []
        faults.point(self._stage, phase)
        return self._wrap(out)

    def select(self, columns: Sequence[str]) -> "LocalData":
        return self._wrap(b.select(list(columns)) for b in self.blocks)

    def rename(self, mapping: dict) -> "LocalData":
        return self._wrap(b.rename_columns([mapping.get(n, n) for n in b.column_names]) for b in self.blocks)

    def materialize(self) -> "LocalData":
        return self

    def count(self) -> int:
        return sum(b.num_rows for b in self.blocks)

    def rows(self) -> list[dict]:
        return [r for b in self.blocks for r in b.to_pylist()]


class LocalActorRef(Worker):
    """A stateful worker object in this process (the local stand-in for an actor)."""

    def __init__(self, obj):
        self.obj = obj

    def call(self, method: str, *args):
        return getattr(self.obj, method)(*args)


class LocalContext(Context):
    """A :class:`Context` whose primitives run in this process."""

    def read(self, files: Sequence[str], columns: Sequence[str]) -> LocalData:
        blocks = []
        for f in files:
            blocks.append(read_part(f, columns))
        return LocalData(blocks, self.stage)

    def _run_items(self, phase: str, fn: Callable, todo: list, kwargs: dict, journal, kind: str) -> dict:
        out = {}
        for key, item in todo:
            res = json.loads(json.dumps(fn(item, **kwargs)))  # as the distributed path returns it
            if journal is not None:
                journal.record(kind, key, res)
            faults.point(self.stage, phase)
            out[key] = res
        return out

    def actors(self, cls: type, args: Sequence[tuple]) -> list[LocalActorRef]:
        return [LocalActorRef(cls(*a)) for a in args]

    def release(self, actors) -> None:
        pass


def run_global(stage, ctx: Context) -> dict:
    """``stage.run_global(ctx)``: its metrics, and how many per-file tasks the journal had
    done (the small-input path runs this in one Ray task)."""
    return {"metrics": stage.run_global(ctx), "skipped": ctx.skipped}


def run_table(stage, table: pa.Table, out: str | None = None) -> tuple[pa.Table, dict]:
    """``stage.run_global`` over one table (with ``_ord``), in this process: the table is
    the one part file of a run whose OUT is ``out`` (where the stage writes what a run
    writes under OUT; by default a temporary directory, dropped); its decisions and
    metrics. Outputs the stage writes elsewhere (``output``, ``save_filter`` ...) go
    straight to their place."""
    with tempfile.TemporaryDirectory(prefix="datacurate-") as tmp:
        root = storage.abspath(out or tmp)
        part = storage.join(layout.parts(root, 0), "part-0.parquet")
        if ID not in table.column_names:  # documents known by their position
            table = table.append_column(ID, pa.array([str(i) for i in range(table.num_rows)], pa.string()))
        if table.num_rows:
            storage.write_parquet(table, part)
        ctx = LocalContext(root, stage.name, Journal(layout.journal(root)),
                           [part] if table.num_rows else [], root, DirectOutputs())
        metrics = stage.run_global(ctx)
        path = ctx.decisions_path(part)
        decisions = storage.read_parquet(path) if storage.exists(path) else None
        storage.delete(layout.work(root))
    if decisions is None:
        cols = {ORD: pa.int64(), REJECT_REASON: pa.string(), **stage.columns}
        decisions = pa.table({n: pa.array([], t) for n, t in cols.items()})
    return decisions, metrics


def input_docs(files: Sequence[str]) -> int:
    """Rows in some Parquet files, from their footers."""
    return sum(storage.parquet_file(f).metadata.num_rows for f in files)
