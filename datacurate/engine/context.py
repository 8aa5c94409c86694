"""What a global stage gets from the engine: its inputs, where to write, and the
all-to-all primitives, with Ray kept behind them.

A :class:`datacurate.stages.base.GlobalStage` implements ``run_global(ctx)``. Through
``ctx`` it reads the kept rows of the stages before it (:meth:`GlobalContext.read`, a
:class:`Data`), runs per-file tasks (:meth:`GlobalContext.map_files`, journaled for
``--resume``), groupbys / joins / sorts (:class:`Data`), and stateful actors
(:meth:`GlobalContext.actors`); it writes one decisions table per part file
(:meth:`GlobalContext.decisions_path`) and returns its metrics. Every function a stage
hands to these primitives is plain code on pyarrow Tables; every task passes a fault
point (:mod:`datacurate.engine.faults`) named ``<stage>:<phase>`` when it is done.
"""

from __future__ import annotations

import functools
import json
import posixpath
from typing import Callable, Iterator, Sequence

import pyarrow as pa

from datacurate import errors, storage
from datacurate.engine import faults
from datacurate.engine.journal import Journal
from datacurate.engine.memory import give_back
from datacurate.schema import WPART



def _task(fn: Callable, stage: str, phase: str, batch, **kw):
    out = errors.guarded(fn, batch, **kw)
    faults.point(stage, phase)
    give_back()
    return out


class Data:
    """A distributed table (a Ray Data dataset, lazily evaluated). Every function given
    to it takes and returns ``pyarrow.Table``; ``phase`` names its tasks for fault points."""

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
        """``fn(batch, **kw)`` on every block, batch by batch (``whole``: the block at once)."""
        size = {"batch_size": None} if whole else {}
        return self._wrap(self._ds.map_batches(self._fn(fn, phase), batch_format="pyarrow", fn_kwargs=kw, **size))

    def groupby(self, phase: str, key: str, parts: int, fn: Callable, concurrency: int | None = None, **kw) -> "Data":
        """``fn(group, **kw)`` once per distinct ``key`` (hash-partitioned into ``parts``)."""
        extra = {"concurrency": concurrency} if concurrency else {}
        ds = self._bounded(self._ds, self._blocks)
        return self._wrap(ds.groupby(key, num_partitions=parts).map_groups(
            self._fn(fn, phase), batch_format="pyarrow", fn_kwargs=kw, **extra), blocks=parts)

    def join(self, other: "Data", on: str, parts: int) -> "Data":
        """Inner join on the integer column ``on``, where each key occurs at most once in
        ``other`` (a lookup: edges -> signatures, members -> attributes).

        Built from one sort-based groupby of both sides tagged and partitioned by key, and
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
        joined = both.groupby(_JP, num_partitions=parts).map_groups(
            _join_group, batch_format="pyarrow",
            fn_kwargs={"on": on, "left": list(left_schema.names), "right": [n for n in right_schema.names if n != on]})
        return self._wrap(joined, blocks=parts)

    def single(self, phase: str, fn: Callable, **kw) -> "Data":
        """``fn(everything)`` in one task (not the driver): for data known to be small."""
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

    def sorted_head(self, keys: list[str], descending: list[bool], k: int,
                    batch_size: int = 65_536) -> Iterator[pa.Table]:
        """The first ``k`` rows in sort order, by a distributed (range-partitioned) sort,
        streamed past the driver batch by batch."""
        ds = self._bounded(self._ds, self._blocks).sort(keys, descending=descending).limit(k)
        yield from ds.iter_batches(batch_size=batch_size, batch_format="pyarrow")


_JP, _SIDE = "_jp", "_side"


def _join_side(batch: pa.Table, side: int, on: str, parts: int, schema: pa.Schema) -> pa.Table:
    import numpy as np

    cols = [batch[f.name] if f.name in batch.column_names else pa.nulls(batch.num_rows, f.type) for f in schema]
    key = batch[on].to_numpy()
    cols += [pa.array(np.full(batch.num_rows, side, np.int8)), pa.array((key % parts).astype(np.int32))]
    return pa.Table.from_arrays(cols, names=schema.names + [_SIDE, _JP])


def _join_group(group: pa.Table, on: str, left: list, right: list) -> pa.Table:
    import pyarrow.compute as pc

    is_left = pc.equal(group[_SIDE], 0)
    lt, rt = group.filter(is_left), group.filter(pc.invert(is_left))
    pos = pc.index_in(lt[on], value_set=rt[on])
    hit = pc.is_valid(pos)
    lt, pos = lt.filter(hit), pos.filter(hit)
    out = lt.select(left)
    for name in right:
        out = out.append_column(name, rt[name].take(pos))
    return out


class ActorRef:
    """A stateful worker a global stage created; :meth:`call` runs one method on it."""

    def __init__(self, handle):
        self.handle = handle

    def call(self, method: str, *args):
        import ray

        return ray.get(getattr(self.handle, method).remote(*args))


SHUFFLE_BLOCK_BYTES = 64 << 20  # Parquet bytes read per block fed to a shuffle
MAX_SHUFFLE_BLOCKS = 256


def shuffle_blocks(files: Sequence[str]) -> int:
    """How many blocks a shuffle of data read from ``files`` may take: one per 64 MiB of
    Parquet (at least two per CPU of the cluster, at most 256)."""
    import math

    import ray

    listed: dict = {}
    for d in {posixpath.dirname(f) for f in files}:  # one listing per directory, not a request per file
        listed.update(storage.sizes(d))
    total = sum(listed.get(f, 0) for f in files)
    cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
    return int(min(MAX_SHUFFLE_BLOCKS, max(2 * cpus, math.ceil(total / SHUFFLE_BLOCK_BYTES))))


def _read_files(batch: pa.Table, columns: list) -> pa.Table:
    tables = []
    for f in batch.column("item").to_pylist():
        t = storage.read_parquet(f, columns=columns)
        tables.append(t.append_column(WPART, pa.array([posixpath.basename(f)] * t.num_rows, pa.string())))
    return pa.concat_tables(tables)


def _per_file(batch: pa.Table, fn: Callable, kwargs: dict, stage: str, phase: str,
              journal: Journal | None, kind: str) -> pa.Table:
    keys, outs = [], []
    for entry in batch.column("item").to_pylist():
        key, item = json.loads(entry)
        res = fn(item, **kwargs)
        if journal is not None:
            journal.record(kind, key, res)
        faults.point(stage, phase)
        give_back()
        keys.append(key)
        outs.append(json.dumps(res))
    return pa.table({"key": keys, "out": outs})


class GlobalContext:
    """One global stage's view of the run (see the module docstring)."""

    def __init__(self, cfg, seg_index: int, stage: str, journal: Journal, final_out: str, outputs: "StagedOutputs",
                 run_config=None, spec_index: int = 0, log: Callable[[str], None] | None = None,
                 progress: Callable | None = None):
        from datacurate.config import to_dict
        from datacurate.engine.process import work_dir

        self.cfg, self.seg_index, self.stage, self.journal = cfg, seg_index, stage, journal
        self.run_config = run_config if run_config is not None else cfg  # the configuration as the user gave it
        self.run_config_dict = to_dict(self.run_config)
        self.spec_index = spec_index  # this stage's place in run_config.stages
        self.out = cfg.output.path  # where this run writes (staged; see runner)
        self.final_out = storage.abspath(final_out)  # where its outputs will be once the run completes
        self.compression = cfg.output.compression
        self.decisions_dir = storage.join(self.out, "_work", f"d{seg_index}")
        self.files = storage.list_files(work_dir(self.out, seg_index - 1), ".parquet")
        self.outputs = outputs
        self.log = log or (lambda m: None)
        self.progress = progress  # progress(stage, phase, done, total, started) as per-file tasks end
        self.skipped = 0  # per-file tasks found done in the journal

    # ---- where things go
    def decisions_path(self, part_file: str) -> str:
        return storage.join(self.decisions_dir, posixpath.basename(part_file))

    def scratch(self, name: str) -> str:
        d = storage.join(self.out, "_work", f"{name}{self.seg_index}")
        storage.makedirs(d)
        return d

    def stage_output(self, final: str, owns: Sequence[str] = ("*",)) -> str:
        """A directory the stage fills; it replaces ``final`` (the entries matching
        ``owns``) only when the whole run has completed."""
        return self.outputs.stage(final, owns)

    # ---- primitives
    def read(self, files: Sequence[str], columns: Sequence[str]) -> Data:
        """Columns of Parquet files as a :class:`Data`, plus ``_wpart`` (each row's file name).

        One task per file (one CPU each, like every per-file phase) reads it through the
        storage seam (local or S3). Not ``ray.data.read_parquet``: its footer and listing
        tasks ask for no CPU, so Ray starts a worker process for each one running at once
        (10-20 extra processes of 100-700 MB each were measured at the memory peak of a
        100k-document run)."""
        from datacurate.engine.ray_backend import map_items

        files = list(files)
        return Data(map_items(files, _read_files, {"columns": list(columns)}), self.stage, blocks=len(files),
                    max_blocks=shuffle_blocks(files))

    def map_files(self, phase: str, fn: Callable, files: Sequence[str] | None = None, journal: bool = True,
                  keys: Sequence[str] | None = None, **kwargs) -> list:
        """``fn(item, **kwargs)`` once per item (a file path, by default the previous
        segment's part files), one task each; the JSON-able results in item order. With
        ``journal`` an item's result is recorded when its task ends and a resumed run does
        not run it again (items are known by ``keys``, by default their file names)."""
        files = list(self.files if files is None else files)
        keys = list(keys) if keys is not None else [posixpath.basename(f) for f in files]
        kind = f"g{self.seg_index}-{phase}"
        done = self.journal.entries(kind) if journal else {}
        todo = [(k, f) for k, f in zip(keys, files) if k not in done]
        if len(todo) < len(files):
            self.log(f"[datacurate] resume: {self.stage} {phase}: skipped {len(files) - len(todo)} of {len(files)} "
                     "tasks done before")
        self.skipped += len(files) - len(todo)
        results = dict(done)
        if todo:
            results.update(self._run_items(phase, fn, todo, kwargs, self.journal if journal else None, kind))
        return [results[k] for k in keys]

    def _run_items(self, phase: str, fn: Callable, todo: list, kwargs: dict, journal: Journal | None,
                   kind: str) -> dict:
        """Run ``fn`` on the (key, item) pairs of ``todo``, one Ray task each; {key: result}."""
        import time

        from datacurate.engine.ray_backend import map_items

        started, out = time.perf_counter(), {}
        ds = map_items([json.dumps(list(t)) for t in todo], _per_file,
                       {"fn": fn, "kwargs": kwargs, "stage": self.stage, "phase": phase, "journal": journal,
                        "kind": kind})
        for i, row in enumerate(ds.iter_rows(), start=1):
            out[row["key"]] = json.loads(row["out"])
            if self.progress is not None:
                self.progress(self.stage, phase, i, len(todo), started)
        return out

    def actors(self, cls: type, args: Sequence[tuple]) -> list[ActorRef]:
        """One actor of ``cls(*a)`` per entry of ``args`` (no CPU reserved: they hold state)."""
        import ray

        remote = ray.remote(num_cpus=0)(cls)
        return [ActorRef(remote.remote(*a)) for a in args]

    def release(self, actors: Sequence[ActorRef]) -> None:
        import ray

        for a in actors:
            ray.kill(a.handle)


class StagedOutputs:
    """Output directories of global stages that live outside the run's staging root,
    staged beside their final place (``<final>.staging``) and swapped in at the end."""

    def __init__(self, journal: Journal, staging_root: str, final_root: str):
        self.journal, self.staging_root, self.final_root = journal, staging_root, final_root

    def stage(self, final: str, owns: Sequence[str]) -> str:
        final = storage.abspath(final)
        rel = storage.relative_to(final, self.final_root)
        if rel is not None:  # under OUT: inside the staging root, swapped with it
            staged = storage.join(self.staging_root, *rel.split("/")) if rel != "." else self.staging_root
        else:
            staged = final.rstrip("/") + ".staging"
            entries = self.journal.get("run", "outputs", {})
            entries[staged] = {"final": final, "owns": list(owns)}
            self.journal.record("run", "outputs", entries)
        storage.makedirs(staged)
        return staged
