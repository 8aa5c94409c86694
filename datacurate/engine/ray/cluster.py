"""Start or join Ray: with no address an embedded local Ray starts with the configured
resources; with an address (``--ray-address``, ``RAY_ADDRESS``, or the environment ``ray
job submit`` sets up) the same code runs on a cluster. A run joined to a cluster is
watched: by the CLI's supervisor (:mod:`datacurate.engine.ray.supervise`), or in library
use by a thread here (:func:`_watch`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time

from datacurate.configs.pipeline import ConfigError, RayConfig
from datacurate.engine import memory
from datacurate.engine.ray import supervise

LOST_AFTER_S = 5.0  # the cluster's control store unreachable this long: the run stops
JOB_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # Ray's job supervisor sets it for a job's entrypoint


def job_working_dir() -> str | None:
    """This process's working directory when it is a Ray job's entrypoint (``ray job
    submit``): the job's temporary copy of ``--working-dir``, which Ray deletes with the
    job's session (or, without one, a directory of Ray's own); None outside a job."""
    return os.getcwd() if JOB_ENV in os.environ else None


def refuse_relative_in_job(paths: dict[str, str]) -> None:
    """Inside a Ray job a relative path datacurate writes to would land in the job's
    temporary working directory and vanish with it, while the job reports it as written:
    one line naming the fix instead (``paths``: the option or key naming each place)."""
    where = job_working_dir()
    if where is None:
        return
    for key, path in paths.items():
        if path and "://" not in path and not os.path.isabs(path):
            raise ConfigError(f"{key}: {path} is a relative path, and this runs inside a Ray job whose working "
                              f"directory ({where}) is a temporary copy that Ray deletes with the job: give an "
                              "absolute path on storage every node shares (e.g. --output /shared/curated/x), "
                              "or s3://bucket/prefix")


def _watch(gcs_address: str, stop: threading.Event, lost_after: float = LOST_AFTER_S) -> None:
    """Library use (no CLI supervisor): stop the process with one line when the cluster's
    GCS stops answering, instead of Ray's minutes of reconnect attempts (or a hang) when a
    cluster goes away mid-run. Best effort: Ray's own exit of the driver can come first;
    the CLI's supervisor (:mod:`datacurate.engine.ray.supervise`) has no such race."""
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
    with _keeping_sigterm():
        return _init(ray, cfg)


@contextlib.contextmanager
def _keeping_sigterm():
    """``ray.init`` replaces the SIGTERM handler (Python's, then its core worker's native
    one, which aborts with a stack dump) and ``ray.shutdown`` leaves the default action (the
    process dies silently): a Python handler set before (the CLI's one-line interrupt) is
    put back."""
    import signal

    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if callable(before) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, before)


def _init(ray, cfg: RayConfig) -> bool:
    kwargs = dict(logging_level=logging.WARNING, log_to_driver=True)
    memory.cap_arenas()  # before Ray's threads: the driver's memory stays flat with the corpus
    if cfg.address:
        if supervise.announce(cfg.address):  # the CLI's supervisor watches (supervise.py)
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
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a private cluster: nothing to report, no reporter
    ray.init(
        address="local",  # always a private instance: never join a cluster that happens to run here
        num_cpus=cfg.num_cpus,
        object_store_memory=object_store_bytes(cfg),
        # processes that spill and restore objects: Ray's default of 4 costs 0.1-0.3 GB
        # each; one spilled 2.2 GB at 474 MiB/s in the 1M-document run (4: 313 MiB/s)
        _system_config={"max_io_workers": max(1, (cfg.num_cpus or os.cpu_count() or 1) // 4)},
        # off unless asked for (ray.dashboard): the web UI's head modules, a process each,
        # cost a run ~4 CPU-s; Ray still starts its minimal head process and node agents
        include_dashboard=cfg.dashboard,
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


def shutdown() -> None:
    import ray

    stop = _WATCH.pop("stop", None)
    if stop is not None:
        stop.set()
    with _keeping_sigterm():
        ray.shutdown()
