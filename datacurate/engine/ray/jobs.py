"""Independent jobs (a whole curation run, a whole training run) as Ray tasks, as many at
once as asked, each started when the job it waits for has finished.

A job's function runs in a Ray worker process, where a pipeline run joins the same Ray
(its Ray Data work claims CPUs of its own: the job task asks for none) and a training run
trains in the worker (``num_cpus``: its threads) or launches Ray Train from there. Results
come back to the driver as each job ends, in the order they end.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from datacurate.core import errors


@dataclass
class Job:
    key: str
    fn: Callable  # fn(*args) -> a picklable result; runs in a Ray worker
    args: tuple = ()
    after: Optional[str] = None  # the key of a job that must finish first
    num_cpus: float = 0.0  # Ray sets the worker's OMP_NUM_THREADS (torch's threads) to it, at least 1


def _call(fn: Callable, args: tuple) -> dict:
    started = time.time()
    result = fn(*args)
    return {"result": result, "started": started, "ended": time.time(), "host": socket.gethostname(),
            "pid": os.getpid()}


def cluster_cpus() -> int:
    import ray

    return int(ray.cluster_resources().get("CPU", 1))


def run_jobs(jobs: list[Job], limit: int) -> Iterator[tuple[Job, dict]]:
    """Run ``jobs`` (at most ``limit`` at a time; a job after its ``after``); yield
    ``(job, {"result", "started", "ended", "host", "pid"})`` as each ends. A failed job
    cancels the others and its error is raised here."""
    import ray

    remote = ray.remote(max_retries=0)(_call)  # a job resumes itself (--resume), it is not re-run blind
    pending, done, running = list(jobs), set(), {}
    try:
        while pending or running:
            for job in [j for j in pending if j.after is None or j.after in done]:
                if len(running) >= limit:
                    break
                pending.remove(job)
                running[remote.options(num_cpus=job.num_cpus).remote(job.fn, job.args)] = job
            if not running:
                raise RuntimeError(f"jobs wait for jobs that never run: {[j.key for j in pending]}")
            try:
                ready, _ = ray.wait(list(running), num_returns=1)
            except KeyboardInterrupt as e:  # Ray's own, in place of the CLI's Interrupted
                raise errors.as_interrupted(e) from None
            job = running.pop(ready[0])
            try:
                out = ray.get(ready[0])
            except ray.exceptions.RayTaskError as e:  # the unit's own error (one line), not Ray's wrapper
                raise (e.cause if isinstance(e.cause, Exception) else e) from e
            done.add(job.key)
            yield job, out
    finally:
        for ref in running:
            ray.cancel(ref, force=True)
