"""One Ray task per item (a read task, a part file): the shape of a segment's map work and
of every per-file phase, in plain Ray tasks.

Not Ray Data (``from_items(...).map_batches(...)``), which ran these before: for a list of
items run once each it adds a fixed cost and nothing else. Measured here (Ray 2.60, one
CPU, one item, CPU seconds of every process): 9.3 with Ray Data against 5.7 with a task —
Ray Data's ``_StatsActor`` and ``_AutoscalingCoordinatorActor`` (a worker process each,
~1.1 CPU-s apiece), ``import ray.data`` in the driver and in every worker, and its
streaming executor's loop on the driver. Tasks run as Ray Data ran them: one CPU each,
spread over the nodes, retried without limit when their worker or node dies
(``max_retries=-1``, Ray's system errors retried too), never on an exception of the code
itself, which stops the run (the other tasks are cancelled).
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator, Sequence

import pyarrow as pa
import ray

from datacurate.core import errors

IN_FLIGHT_PER_CPU = 2  # tasks submitted ahead per CPU of the cluster (the rest wait on the driver)


def _run_item(fn: Callable, item: str, kwargs: dict) -> list[pa.Table]:
    out = errors.guarded(fn, pa.table({"item": [item]}), **kwargs)
    return [out] if isinstance(out, pa.Table) else list(out)


_REMOTE: dict = {}


def _remote():
    if not _REMOTE:  # as Ray Data submits its tasks (ray/data/_internal/remote_fn.py)
        _REMOTE["fn"] = ray.remote(num_cpus=1, max_retries=-1, retry_exceptions=[ray.exceptions.RaySystemError],
                                   scheduling_strategy="SPREAD")(_run_item)
    return _REMOTE["fn"]


def run_items(items: Sequence[str], fn: Callable, fn_kwargs: dict) -> Iterator[pa.Table]:
    """``fn(a one-row table {"item": [item]}, **fn_kwargs)`` (a table, or a generator of
    tables) once per item, one Ray task (one CPU) each; yields the tables each task returned,
    in the order the tasks finish. ``fn`` must be importable by name (a module's function):
    workers import it; ``fn_kwargs`` goes to the object store once, not once per task."""
    if not items:
        return
    remote, kwargs = _remote(), ray.put(fn_kwargs)
    ahead = max(16, IN_FLIGHT_PER_CPU * int(ray.cluster_resources().get("CPU", 1)))
    todo, running = iter(items), []
    try:
        while True:
            running += [remote.remote(fn, item, kwargs) for item in itertools.islice(todo, ahead - len(running))]
            if not running:
                return
            try:
                done, running = ray.wait(running, num_returns=1)
                results = ray.get(done)
            except KeyboardInterrupt as e:  # Ray's own, in place of the CLI's Interrupted
                raise errors.as_interrupted(e) from None
            for tables in results:
                yield from tables
    finally:  # an error, Ctrl-C, or a consumer that stopped early: what still runs is cancelled
        for ref in running:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - best effort: Ray may be shutting down
                pass
