"""Handing freed memory back to the OS at the end of a task, in long-lived worker processes.

A Ray worker runs many tasks one after another and idles between phases. Memory a task
freed stays in the process (glibc's arenas, Arrow's allocator pool) and counts against
the machine as long as the worker lives: idle workers holding 0.7-1.5 GB each were part
of the memory peak of a 1M-document run (issue 18). :func:`give_back` returns it when the
process has grown by more than ``slack`` since it last did, so a worker that only holds
its models pays nothing.
"""

from __future__ import annotations

import ctypes
import os

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATE = {"floor": 0}
_LIBC: list = []


def rss_bytes() -> int:
    """This process's resident set, from /proc (0 where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _libc():
    if not _LIBC:
        try:
            lib = ctypes.CDLL("libc.so.6")
            lib.malloc_trim  # glibc only
            _LIBC.append(lib)
        except (OSError, AttributeError):
            _LIBC.append(None)
    return _LIBC[0]


M_ARENA_MAX = -8  # mallopt's parameter (glibc malloc.h)
ARENAS = 2


def cap_arenas(n: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``n`` in this process (``mallopt(M_ARENA_MAX)``) and, by
    ``MALLOC_ARENA_MAX``, in the processes it starts (an embedded Ray's raylet and workers);
    a ``MALLOC_ARENA_MAX`` the user set wins. glibc gives each thread that allocates its own
    arena (up to 8 per core) and keeps their free memory: the driver, a handful of Python
    threads beside Ray's and gRPC's, grew ~0.05 GB per million documents that way (0.331 GB
    at 100k, 0.386 at 1M, 0.481 at 3M over the global stages; with 2 arenas 0.348 at 1M, as
    fast; ``tracemalloc`` found the Python heap flat: benchmarks/README.md, driver benchmark).
    True when the cap was set in this process."""
    try:
        n = int(os.environ.setdefault("MALLOC_ARENA_MAX", str(n)))
    except ValueError:  # the user's own value, not a number: glibc ignores it, so do we
        return False
    lib = _libc()
    if lib is None or n <= 0:
        return False
    return bool(lib.mallopt(M_ARENA_MAX, n))


def give_back(slack: int = 256 << 20) -> bool:
    """Release free memory (Arrow's pool, then glibc's ``malloc_trim``) when the resident
    set grew by more than ``slack`` bytes since the last release; True when it ran."""
    rss = rss_bytes()
    _STATE["floor"] = min(_STATE["floor"], rss)  # memory freed to the OS since: measure growth from there
    if not rss or rss - _STATE["floor"] < slack:
        return False
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)
    _STATE["floor"] = rss_bytes()
    return True
