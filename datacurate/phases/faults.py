"""Fault injection for tests: make the n-th task of a phase die for real, once.

``DATACURATE_FAULT=<stage>:<phase>:<n>[:<action>][,...]`` arms fault points; every task
function of the engine calls :func:`point` when it has done its work (its side effects
are on disk or in an actor, the worst moment to die). Tasks of a phase are numbered in
the order they reach the point, across processes, by creating files ``<stage>.<phase>.<i>``
with ``O_EXCL`` in ``DATACURATE_FAULT_DIR``; the task that draws number ``n`` acts, once
(a ``fired`` marker), so the task Ray retries runs clean. Actions:

* ``exit`` (default): ``os._exit(1)`` of the worker process: Ray's retry path, for real.
* ``kill-driver``: ``SIGKILL`` of the driver process (its pid is in
  ``DATACURATE_DRIVER_PID``), as a crash of the whole run; then ``--resume``.
* ``stop``: :func:`point` returns True, once; a reader's caller then stops reading
  (``input:read:<n>:stop``: read task ``n`` consumes less than its file, as a reader bug
  would; the run's per-file check must fail it).
* ``wait``: the task stops there until the file ``<stage>.<phase>.<n>.go`` appears in the
  directory: a test breaks something for real meanwhile (deletes an input, stops an S3
  endpoint), at a known point of the run, with no timing involved.

Phases of map segments are ``<map stage>:map``; a global stage names its own phases
where it hands them to the engine (``ctx.map_files("fit", ...)``, ``data.groupby("decide", ...)``).
With the variable unset a fault point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import time

ENV = "DATACURATE_FAULT"
DIR_ENV = "DATACURATE_FAULT_DIR"
DRIVER_ENV = "DATACURATE_DRIVER_PID"


def _armed(stage: str, phase: str) -> list[tuple[int, str]]:
    out = []
    for item in filter(None, os.environ.get(ENV, "").split(",")):
        parts = item.strip().split(":")
        if len(parts) < 3:
            raise ValueError(f"{ENV}: expected <stage>:<phase>:<n>[:<action>], got {item!r}")
        if parts[0] == stage and parts[1] == phase:
            out.append((int(parts[2]), parts[3] if len(parts) > 3 else "exit"))
    return out


def _claim(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def point(stage: str, phase: str) -> bool:
    """A fault point: act if this call is the armed n-th of ``stage:phase`` (see module doc);
    True for a ``stop``."""
    if ENV not in os.environ:
        return False
    armed = _armed(stage, phase)
    if not armed:
        return False
    d = os.environ.get(DIR_ENV) or "/tmp/datacurate-faults"
    os.makedirs(d, exist_ok=True)
    i = 0
    while not _claim(os.path.join(d, f"{stage}.{phase}.{i}")):
        i += 1
    for n, action in armed:
        if i == n and _claim(os.path.join(d, f"{stage}.{phase}.{n}.fired")):
            with open(os.path.join(d, f"{stage}.{phase}.{n}.fired"), "w") as f:
                f.write(str(os.getpid()))  # which process (so a test can find its node) acts
            if action == "kill-driver":
                os.kill(int(os.environ[DRIVER_ENV]), signal.SIGKILL)
                os._exit(1)
            if action == "wait":
                go = os.path.join(d, f"{stage}.{phase}.{n}.go")
                while not os.path.exists(go):
                    time.sleep(0.05)
                return False
            if action == "stop":
                return True
            if action != "exit":
                raise ValueError(f"{ENV}: unknown action {action!r}")
            os._exit(1)
    return False


def fired_pid(stage: str, phase: str, n: int, directory: str) -> int | None:
    """The process that acted on the armed fault ``stage:phase:n`` (None until one did)."""
    try:
        with open(os.path.join(directory, f"{stage}.{phase}.{n}.fired")) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return int(text) if text.strip() else None


def fired(stage: str, phase: str, n: int, directory: str) -> bool:
    """Whether the armed fault ``stage:phase:n`` acted (for tests)."""
    return os.path.exists(os.path.join(directory, f"{stage}.{phase}.{n}.fired"))
