"""The global-stage primitives in one process: the small-input path, and a way to run a
stage's distributed phases without a cluster.

:class:`LocalContext` offers what :class:`datacurate.engine.context.GlobalContext` offers
(per-file tasks, groupbys, joins, a sorted head, stateful workers) with pyarrow in this
process, so a stage's ``run_global`` runs unchanged and writes the same decisions, shard
files and saved filters. Below ``ray.small_input_docs`` documents the engine runs a
global stage this way inside one Ray task: a Ray Data groupby or join costs seconds of
fixed overhead however small the data (measured in benchmarks/README.md).
"""

from __future__ import annotations

import json
import posixpath
import sys
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datacurate import storage
from datacurate.engine import faults
from datacurate.engine.context import WPART, GlobalContext, _join_group


class LocalData:
    """:class:`datacurate.engine.context.Data` over in-memory blocks (a list of tables)."""

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
            left.append_column("_side", pa.array(np.zeros(left.num_rows, np.int8))),
            right.append_column("_side", pa.array(np.ones(right.num_rows, np.int8)))], promote_options="permissive")
        return self._wrap([_join_group(tagged, on, left.column_names, [n for n in right.column_names if n != on])])

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

    def sorted_head(self, keys: list[str], descending: list[bool], k: int,
                    batch_size: int = 65_536) -> Iterator[pa.Table]:
        t = self._concat()
        if t is None:
            return
        order = [(name, "descending" if d else "ascending") for name, d in zip(keys, descending)]
        yield from t.sort_by(order).slice(0, k).to_batches(max_chunksize=batch_size)


class LocalActorRef:
    """A stateful worker object in this process (the local stand-in for an actor)."""

    def __init__(self, obj):
        self.obj = obj

    def call(self, method: str, *args):
        return getattr(self.obj, method)(*args)


class LocalContext(GlobalContext):
    """A :class:`GlobalContext` whose primitives run in this process."""

    def read(self, files: Sequence[str], columns: Sequence[str]) -> LocalData:
        blocks = []
        for f in files:
            t = storage.read_parquet(f, columns=list(columns))
            blocks.append(t.append_column(WPART, pa.array([posixpath.basename(f)] * t.num_rows, pa.string())))
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


def run_stage(spec, cfg, seg_index: int, journal, final_out: str, outputs, run_config, spec_index: int,
              log=None) -> dict:
    """All of a global stage's phases in this process (see the module docstring); its metrics."""
    ctx = LocalContext(cfg, seg_index, spec.name, journal, final_out, outputs, run_config=run_config,
                       spec_index=spec_index, log=log or (lambda m: print(m, file=sys.stderr, flush=True)))
    metrics = spec.cls(spec.config).run_global(ctx)
    return {"metrics": metrics, "skipped": ctx.skipped}


def input_docs(files: Sequence[str]) -> int:
    """Rows in some Parquet files, from their footers."""
    return sum(storage.parquet_file(f).metadata.num_rows for f in files)
