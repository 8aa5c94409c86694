"""Run a function over many items in a child process, with a time limit per item.

HTML extraction runs away on pathological pages: trafilatura takes ~30 s on a 3.5 MB
single-line page of 50k paragraphs, resiliparse ~45 s on 20k nested ``<div>`` and ~500 s
on 5k nested ones plus 50k paragraphs (measured here, one core). Neither can be stopped
from inside: they spend that time in C (lxml, lexbor), where no Python signal handler runs
(and a Ray task is not the main thread, where ``signal.alarm`` would be allowed anyway).
So the work runs in a child process that the parent kills when an item overruns.

The child is a fresh interpreter (``python -m datacurate.core.sandbox``), not a fork: a
Ray worker is multithreaded (gRPC), where ``fork`` may copy a held lock, and
multiprocessing's ``spawn`` / ``forkserver`` import the parent's ``__main__`` (Ray's worker
script, pytest). It inherits the parent's ``sys.path``. The parent sends a whole batch at
once; the child answers item by item; each answer must come within ``timeout`` seconds of
the previous one, else the child is killed, the item gets ``TIMEOUT`` and a new child
takes the rest of the batch. A child that dies on an item (a crash in C) gives it
``CRASH``. Overhead: one pickle of the batch plus one per answer (tens of microseconds
an item) and a child start (~1 s: the imports) at first use and after each kill.

Bounded both ways. The child says ``READY`` before it reads a batch and ``TAKEN`` once it
holds it, so a child that dies or hangs before taking its batch (a broken start, a batch
it cannot read) is told apart from one that dies on an item: after :data:`MAX_FUTILE`
such children in a row the rest of the batch gets ``ERROR`` and one warning, instead of
restarting forever (before the handshake, a child dying before it read a batch over the
64 KB pipe buffer made the parent restart without limit: 129 restarts in 6 s). And the
child dies with its parent: on Linux it asks the kernel for ``SIGKILL`` when the thread
that started it ends (``prctl(PR_SET_PDEATHSIG)``), so a killed Ray worker does not
leave its child extracting a page for up to ``timeout`` seconds, or forever with no
limit; a child whose parent is already gone when it starts exits at once.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import warnings
import weakref
from multiprocessing.connection import Connection
from typing import Any, Callable, Sequence

TIMEOUT = "timeout"
CRASH = "crash"
ERROR = "error"
OK = "ok"
READY, TAKEN = b"ready", b"taken"  # the child's handshake around each batch (never a pickle's first bytes)
MAX_FUTILE = 3  # children in a row that die or hang before taking their batch: then the batch is given up
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Sandbox:
    """``fn`` (a picklable callable: a module-level function or a partial of one) applied
    to items in a child process; :meth:`map` returns one ``(status, value)`` per item:
    ``(OK, result)``, ``(ERROR, "Type: message")``, ``(TIMEOUT, None)`` or ``(CRASH, None)``."""

    def __init__(self, fn: Callable[[Any], Any], timeout: float, startup: float = 60.0, warm: Any = None):
        self.fn, self.timeout, self.warm = fn, float(timeout), warm  # warm: an item the child runs before it is ready
        self.startup = max(float(startup), self.timeout)  # a child's start and its taking of a batch
        self.given_up = 0  # items answered ERROR because no child would take them
        self.last_exit: int | None = None  # the exit code of the last child stopped
        self._warned = False
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self.restarts = 0  # children started after the first (after a timeout or a crash)
        self._finalizer = None

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen([sys.executable, "-m", "datacurate.core.sandbox", str(to_child_r),
                                       str(from_child_w), str(os.getpid())], pass_fds=(to_child_r, from_child_w), env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
        self._send.send_bytes(pickle.dumps((self.fn, self.warm)))
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._send, self._recv)

    def close(self) -> None:
        """Stop the child (a later :meth:`map` starts a new one)."""
        if self._finalizer is not None:
            self._finalizer()
            self.last_exit = self._proc.returncode
        self._proc = self._send = self._recv = self._finalizer = None

    def map(self, items: Sequence[Any]) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        futile = 0  # children in a row that did not take the batch
        while len(out) < len(items):
            if futile == MAX_FUTILE:
                out += self._give_up(len(items) - len(out), futile)
                break
            if self._proc is None:
                self._start()
            if not self._hand_over(items[len(out):]):
                self.close()
                self.restarts += 1
                futile += 1
                continue
            futile = 0
            while len(out) < len(items):
                if not self._recv.poll(self.timeout):
                    out.append((TIMEOUT, None))
                    break
                try:
                    out.append(pickle.loads(self._recv.recv_bytes()))
                except (EOFError, OSError):  # the child died on this item
                    out.append((CRASH, None))
                    break
            else:
                return out
            self.close()  # timed out or crashed: the rest of the batch goes to a new child
            self.restarts += 1
        return out

    def _hand_over(self, batch: Sequence[Any]) -> bool:
        """The child says READY, takes ``batch`` and says TAKEN, each within ``startup``
        seconds (the child only reads while it waits for a batch, so the send cannot block
        on a live child for long; a dead one fails it)."""
        try:
            if not self._recv.poll(self.startup) or self._recv.recv_bytes() != READY:
                return False
            self._send.send_bytes(pickle.dumps(list(batch), protocol=pickle.HIGHEST_PROTOCOL))
            return self._recv.poll(self.startup) and self._recv.recv_bytes() == TAKEN
        except (EOFError, OSError):  # BrokenPipeError included: the child is gone
            return False

    def _give_up(self, n: int, futile: int) -> list[tuple[str, Any]]:
        """``n`` items no child would take: each an ERROR; one warning per sandbox."""
        line = (f"{futile} worker processes in a row died or hung before taking their batch (the last one's "
                f"exit code: {self.last_exit}); {n} items not processed")
        if not self._warned:
            warnings.warn(f"sandbox: {line}", RuntimeWarning, stacklevel=3)
            self._warned = True
        self.given_up += n
        return [(ERROR, f"SandboxError: {line}")] * n

def _stop(proc: subprocess.Popen, send: Connection, recv: Connection) -> None:
    for c in (send, recv):
        try:
            c.close()
        except OSError:
            pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent goes (Linux: ``prctl(PR_SET_PDEATHSIG)``); exit now if it
    has gone already (it died before the call: no signal would come). The kernel ties the
    signal to the parent *thread* that started the child: should that thread end while
    the process lives on, the next batch finds the child gone and starts another (one
    restart, not a failure)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def _serve(read_fd: int, write_fd: int, parent: int) -> None:
    _die_with_parent(parent)
    recv, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    fn, warm = pickle.loads(recv.recv_bytes())
    if warm is not None:  # lazy imports (an extraction engine) happen inside the start-up window, not an item's time
        try:
            fn(warm)
        except Exception:
            pass
    while True:
        send.send_bytes(READY)
        try:
            items = pickle.loads(recv.recv_bytes())
        except EOFError:  # the parent closed the pipe (or died): done
            return
        send.send_bytes(TAKEN)
        for item in items:
            try:
                answer = (OK, fn(item))
            except Exception as e:  # one item's failure is that item's answer
                answer = (ERROR, f"{type(e).__name__}: {e}"[:500])
            send.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
