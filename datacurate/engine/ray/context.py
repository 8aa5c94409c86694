"""``RayContext``: the :class:`datacurate.phases.context.Context` of a global stage run on
Ray: per-file tasks as plain Ray tasks (:mod:`datacurate.engine.ray.tasks`), reads as Ray
Data tasks (they feed its groupbys), groupbys / joins / sorts as
:class:`datacurate.engine.ray.data.Data`, stateful workers as Ray actors."""

from __future__ import annotations

import json
import time
from typing import Callable, Sequence

import pyarrow as pa
import ray

from datacurate.phases import faults
from datacurate.phases.context import Context, read_part
from datacurate.phases.journal import Journal
from datacurate.engine.memory import give_back
from datacurate.engine.ray.data import ActorRef, Data, map_items, shuffle_blocks
from datacurate.engine.ray.tasks import run_items


def _read_files(batch: pa.Table, columns: list) -> pa.Table:
    tables = [read_part(f, columns) for f in batch.column("item").to_pylist()]
    return pa.concat_tables(tables, promote_options="permissive")  # a column absent from a part: null there


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


class RayContext(Context):
    """A :class:`Context` whose primitives run on Ray (see the module docstring)."""

    def read(self, files: Sequence[str], columns: Sequence[str]) -> Data:
        """Columns of Parquet files as a :class:`Data`, plus ``_wpart`` (each row's file name).

        Tasks of one CPU each read consecutive runs of the files through the storage seam
        (local or S3), as many runs as a shuffle of them may take blocks
        (:func:`~datacurate.engine.ray.data.shuffle_blocks`: one per 64 MiB of Parquet, at
        most 256), never one block per file: Ray Data keeps per-block state on the driver,
        which then grew with the corpus. Not ``ray.data.read_parquet``: its footer and listing
        tasks ask for no CPU, so Ray starts a worker process for each one running at once
        (10-20 extra processes of 100-700 MB each were measured at the memory peak of a
        100k-document run)."""
        files = list(files)
        most = shuffle_blocks(files)  # what a shuffle takes anyway: read into that many blocks
        blocks = min(len(files), most)
        return Data(map_items(files, _read_files, {"columns": list(columns)}, blocks=blocks), self.stage,
                    blocks=blocks, max_blocks=most)

    def _run_items(self, phase: str, fn: Callable, todo: list, kwargs: dict, journal: Journal | None,
                   kind: str) -> dict:
        """Run ``fn`` on the (key, item) pairs of ``todo``, one Ray task each (plain tasks:
        :mod:`datacurate.engine.ray.tasks`); {key: result}."""
        started, out = time.perf_counter(), {}
        tables = run_items([json.dumps(list(t)) for t in todo], _per_file,
                           {"fn": fn, "kwargs": kwargs, "stage": self.stage, "phase": phase, "journal": journal,
                            "kind": kind})
        for table in tables:
            for key, res in zip(table.column("key").to_pylist(), table.column("out").to_pylist()):
                out[key] = json.loads(res)
                if self.progress is not None:
                    self.progress(self.stage, phase, len(out), len(todo), started)
        return out

    def accelerators(self) -> int:
        return int(ray.cluster_resources().get("GPU", 0))

    def cpus(self) -> int:
        return int(ray.cluster_resources().get("CPU", 1))

    def actors(self, cls: type, args: Sequence[tuple]) -> list[ActorRef]:
        """One actor of ``cls(*a)`` per entry of ``args`` (no CPU reserved: they hold state),
        placed round-robin over the nodes that run tasks (those with CPUs), not on a head
        started with none for the driver: a Bloom filter's memory goes where the work is, and
        with one actor per node a lost node takes a known share of them. ``soft``: a node
        gone by then leaves the actor to any other."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0)
        remote = ray.remote(num_cpus=0)(cls)
        refs = []
        for i, a in enumerate(args):
            opts = {"scheduling_strategy": NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=True)} if nodes else {}
            refs.append(ActorRef(remote.options(**opts).remote(*a), f"{self.stage}'s {cls.__name__} actor {i}"))
        return refs

    def release(self, actors: Sequence[ActorRef]) -> None:
        for a in actors:
            ray.kill(a.handle)
