"""The extraction sandbox bounded, with real processes: a child that dies before it takes
its batch is restarted a few times, then the batch is given up (one warning, each item an
ERROR); a child dies with its parent (``PR_SET_PDEATHSIG``)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from datacurate.core.sandbox import ERROR, MAX_FUTILE, OK, Sandbox

ROOT = Path(__file__).resolve().parents[2]
BIG = "x" * 100_000  # over the 64 KB pipe buffer: the send blocks until the child reads


class ExitWhenLoaded:
    """Unpickling it ends the process that unpickles it (the child), before any answer."""

    def __reduce__(self):
        return (os._exit, (7,))


def double(x):
    return 2 * x


def _map(box: Sandbox, items, limit: float = 120.0):
    """``box.map(items)`` in a thread, so that a hang fails the test instead of freezing it."""
    res = {}
    t = threading.Thread(target=lambda: res.update(out=box.map(items)), daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"map did not return in {limit} s (restarts so far: {box.restarts})"
    return res["out"]


def test_child_dying_before_it_takes_a_big_batch_is_given_up():
    """The case that restarted without limit: the child dies reading a batch over 64 KB."""
    box = Sandbox(double, timeout=30)
    with pytest.warns(RuntimeWarning, match="died or hung before taking their batch") as caught:
        out = _map(box, [BIG, ExitWhenLoaded(), BIG])
    assert len(caught) == 1
    assert [s for s, _ in out] == [ERROR] * 3 and "exit code: 7" in out[0][1]
    assert box.restarts == MAX_FUTILE and box.given_up == 3
    with warnings.catch_warnings(record=True) as again:  # one warning per sandbox, not per batch
        warnings.simplefilter("always")
        assert [s for s, _ in _map(box, [ExitWhenLoaded()])] == [ERROR]
    assert not again
    assert _map(box, [1, 2]) == [(OK, 2), (OK, 4)]  # a good batch after that works as before
    box.close()


def test_child_that_cannot_start_is_given_up():
    box = Sandbox(ExitWhenLoaded(), timeout=30)
    with pytest.warns(RuntimeWarning):
        out = _map(box, [BIG] * 4)
    assert [s for s, _ in out] == [ERROR] * 4 and box.restarts == MAX_FUTILE
    box.close()


def sleep_marked(path: str) -> None:
    open(path, "w").close()
    time.sleep(600)


PARENT = textwrap.dedent("""
    import sys
    from datacurate.core.sandbox import Sandbox
    from tests.stages.test_sandbox import sleep_marked
    box = Sandbox(sleep_marked, timeout=600)
    box._start()
    print(box._proc.pid, flush=True)
    box.map([sys.argv[1]])
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_child_dies_with_its_parent(tmp_path):
    """SIGKILL the parent while its child sleeps in an item (600 s): the child goes too."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    marker = tmp_path / "in_item"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(marker)], stdout=subprocess.PIPE, text=True,
                              env=env, cwd=ROOT)
    child = int(parent.stdout.readline())
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists() and _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the sandbox's child outlived its parent"
