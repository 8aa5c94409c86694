"""Freed memory goes back to the OS at the end of a task (datacurate.engine.memory)."""

import sys

import pytest

from datacurate.engine import memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc only")
def test_give_back_returns_freed_heap_to_the_os():
    memory.give_back(slack=0)  # start from a trimmed process
    # ~400 MB of malloc'd objects (over Python's small-object limit), every 16th kept alive:
    # glibc cannot shrink its heap past the survivors, so the freed pages stay resident
    blobs = [bytes(2000) + i.to_bytes(4, "little") for i in range(200_000)]
    keep = blobs[::16]
    del blobs
    before = memory.rss_bytes()
    assert memory.give_back(slack=64 << 20)
    after = memory.rss_bytes()
    assert before - after > 200 << 20, (before, after)
    assert len(keep) == 12_500
    # nothing grew since: the next call does not run again
    assert not memory.give_back(slack=64 << 20)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_cap_arenas_sets_the_cap_for_the_driver_and_what_it_starts():
    """The driver caps glibc's arenas (the cause of its slow growth with the corpus) and
    exports MALLOC_ARENA_MAX to the Ray it starts; a value the user set is kept, and one
    glibc would ignore is ignored here too. In a child process: it changes the environment."""
    import os
    import subprocess

    code = ("import os; from datacurate.engine import memory; "
            "print(memory.cap_arenas(), os.environ['MALLOC_ARENA_MAX'])")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}

    def run(**extra):
        return subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True,
                              text=True, check=True).stdout.split()

    assert run() == ["True", "2"]
    assert run(MALLOC_ARENA_MAX="4") == ["True", "4"]
    assert run(MALLOC_ARENA_MAX="many") == ["False", "many"]
