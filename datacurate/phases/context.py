"""What a global stage gets from the engine: its inputs, where to write, and the
all-to-all primitives, with no Ray here.

A :class:`datacurate.stages.base.GlobalStage` implements ``run_global(ctx)``. Through
``ctx`` it reads the kept rows of the stages before it (``ctx.read``, a table of
blocks), runs per-file tasks (:meth:`Context.map_files`, journaled for ``--resume``),
groupbys / joins / sorts on what it read, and stateful workers (``ctx.actors``); it
writes one decisions table per part file (:meth:`Context.decisions_path`) and returns
its metrics. Every function a stage hands to these primitives is plain code on pyarrow
Tables; every task passes a fault point (:mod:`datacurate.phases.faults`) named
``<stage>:<phase>`` when it is done.

:class:`Context` holds what does not depend on where the work runs; two siblings run
the primitives (``read``, ``_run_items``, ``actors``, ``release``): ``RayContext``
(:mod:`datacurate.engine.ray.context`, Ray Data and actors) and ``LocalContext``
(:mod:`datacurate.phases.local`, this process: the small-input path and ``stage(table)``).
What a ``read`` returns is a :class:`Blocks` (``Data`` on Ray, ``LocalData`` here), what
``actors`` returns are :class:`Worker` s: both declared below, so a stage written against
them runs on either.
"""

from __future__ import annotations

import fnmatch
import posixpath
import sys
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import storage
from datacurate.phases import layout
from datacurate.phases.journal import Journal
from datacurate.core.schema import WPART


class Blocks(ABC):
    """A table of blocks a global stage reads and reshapes, lazily evaluated where it can
    be. Every function given to it takes and returns ``pyarrow.Table``; ``phase`` names
    its tasks (``<stage>:<phase>`` fault points). Implemented by
    :class:`datacurate.engine.ray.data.Data` (Ray Data) and
    :class:`datacurate.phases.local.LocalData` (in this process)."""

    @abstractmethod
    def map(self, phase: str, fn: Callable, whole: bool = False, **kw) -> "Blocks":
        """``fn(batch, **kw)`` on every block, batch by batch (``whole``: the block at once)."""

    @abstractmethod
    def map_pool(self, phase: str, cls: type, args: tuple, batch_rows: int, gpus: int = 0, cpus: int = 1,
                 concurrency: int = 1) -> "Blocks":
        """``cls(*args)`` built once per worker of a pool (``concurrency`` workers of ``gpus``
        GPUs and ``cpus`` CPUs each: a model loads once, not per batch), called on batches of
        about ``batch_rows`` rows."""

    @abstractmethod
    def groupby(self, phase: str, key: str, parts: int, fn: Callable, concurrency: int | None = None,
                **kw) -> "Blocks":
        """``fn(group, **kw)`` once per distinct ``key`` (hash-partitioned into ``parts``)."""

    @abstractmethod
    def join(self, other: "Blocks", on: str, parts: int) -> "Blocks":
        """Inner join on the integer column ``on``, where each key occurs at most once in
        ``other`` (a lookup: edges -> signatures, members -> attributes)."""

    @abstractmethod
    def single(self, phase: str, fn: Callable, **kw) -> "Blocks":
        """``fn(everything)`` in one task (not the driver): for data known to be small."""

    @abstractmethod
    def select(self, columns: Sequence[str]) -> "Blocks":
        ...

    @abstractmethod
    def rename(self, mapping: dict) -> "Blocks":
        ...

    @abstractmethod
    def materialize(self) -> "Blocks":
        """Computed now, once, however often it is read after."""

    @abstractmethod
    def count(self) -> int:
        ...

    @abstractmethod
    def rows(self) -> list[dict]:
        """Every row, on the driver: for small results."""


class Worker(ABC):
    """A stateful worker a global stage created (``ctx.actors``)."""

    @abstractmethod
    def call(self, method: str, *args) -> Any:
        """``method(*args)`` on the worker's object; its result."""


class Context(ABC):
    """One global stage's view of the run: ``out`` where it writes (staged), ``files`` the
    parts it decides on, ``final_out`` where the outputs go once the run completes, the stage
    specs before it, the configuration as given (plain data), ``progress(stage, phase, done,
    total, started)`` as per-file tasks end."""

    def __init__(self, out: str, stage: str, journal: Journal, files: Sequence[str], final_out: str, outputs,
                 seg_index: int = 1, compression: str = "zstd", stages_before: Sequence = (),
                 run_config_dict: dict | None = None, log: Callable[[str], None] | None = None,
                 progress: Callable | None = None):
        self.out, self.stage, self.journal, self.files = out, stage, journal, list(files)
        self.final_out = storage.abspath(final_out)
        self.outputs, self.seg_index, self.compression = outputs, seg_index, compression
        self.stages_before, self.run_config_dict = list(stages_before), run_config_dict or {}
        self.decisions_dir = layout.decisions(out, seg_index)
        self.log = log or (lambda m: print(m, file=sys.stderr, flush=True))
        self.progress = progress
        self.skipped = 0  # per-file tasks found done in the journal

    # ---- where things go
    def decisions_path(self, part_file: str) -> str:
        return storage.join(self.decisions_dir, posixpath.basename(part_file))

    def scratch(self, name: str) -> str:
        d = layout.scratch(self.out, name, self.seg_index)
        storage.makedirs(d)
        return d

    def stage_output(self, final: str, owns: Sequence[str] = ("*",)) -> str:
        """A directory the stage fills; it replaces ``final`` (the entries matching
        ``owns``) only when the whole run has completed."""
        return self.outputs.stage(final, owns)

    # ---- per-file tasks
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

    # ---- what a sibling implements (where the work runs)
    @abstractmethod
    def read(self, files: Sequence[str], columns: Sequence[str]) -> Blocks:
        """``columns`` of Parquet ``files``, plus ``_wpart`` (each row's file name)."""

    @abstractmethod
    def _run_items(self, phase: str, fn: Callable, todo: list, kwargs: dict, journal: Journal | None,
                   kind: str) -> dict:
        """``fn(item, **kwargs)`` for the (key, item) pairs of ``todo``, one task each, each
        result recorded in ``journal`` (under ``kind``, unless None) as its task ends; {key: result}."""

    def accelerators(self) -> int:
        """GPUs the primitives can give a pool (0: none, the work runs on CPUs)."""
        return 0

    def cpus(self) -> int:
        """CPUs the primitives can give a pool."""
        return 1

    @abstractmethod
    def actors(self, cls: type, args: Sequence[tuple]) -> list[Worker]:
        """One worker holding ``cls(*a)`` per entry of ``args``."""

    @abstractmethod
    def release(self, actors: Sequence[Worker]) -> None:
        """The workers are no longer needed."""


def read_part(path: str, columns: Sequence[str]) -> pa.Table:
    """``columns`` of one part file, plus ``_wpart`` (its name). A column the part lacks
    is all null: an extra input field that no record of the part's batch held (JSONL
    records with a ``url`` in some batches and not in others), not an ``ArrowInvalid``."""
    try:
        t = storage.read_parquet(path, columns=list(columns))
    except pa.ArrowInvalid:
        have = set(storage.parquet_file(path).schema_arrow.names)
        t = storage.read_parquet(path, columns=[c for c in columns if c in have])
        for c in columns:
            if c not in have:
                t = t.append_column(c, pa.nulls(t.num_rows))
        t = t.select(list(columns))
    return t.append_column(WPART, pa.array([posixpath.basename(path)] * t.num_rows, pa.string()))


JP, SIDE = "_jp", "_side"  # a join's partition and side (0: left, 1: right) columns


def join_group(group: pa.Table, on: str, left: list, right: list) -> pa.Table:
    """One partition of an inner join (both sides tagged in ``SIDE``): each left row with
    the ``right`` columns of the right row of the same ``on`` key, if any."""
    is_left = pc.equal(group[SIDE], 0)
    lt, rt = group.filter(is_left), group.filter(pc.invert(is_left))
    pos = pc.index_in(lt[on], value_set=rt[on])
    hit = pc.is_valid(pos)
    lt, pos = lt.filter(hit), pos.filter(hit)
    out = lt.select(left)
    for name in right:
        out = out.append_column(name, rt[name].take(pos))
    return out


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


class DirectOutputs:
    """Stage outputs written in place, for a stage run on one table (no run swaps them in
    at its end): the entries of ``final`` the stage owns go first, as a run's swap does."""

    def stage(self, final: str, owns: Sequence[str]) -> str:
        final = storage.abspath(final)
        for name in storage.listdir(final) if storage.isdir(final) else []:
            if any(fnmatch.fnmatch(name, pat) for pat in owns):
                storage.delete(storage.join(final, name))
        storage.makedirs(final)
        return final
