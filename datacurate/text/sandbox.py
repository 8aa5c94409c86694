"""Run a function over many items in a child process, with a time limit per item.

HTML extraction runs away on pathological pages: trafilatura takes ~30 s on a 3.5 MB
single-line page of 50k paragraphs, resiliparse ~45 s on 20k nested ``<div>`` and ~500 s
on 5k nested ones plus 50k paragraphs (measured here, one core). Neither can be stopped
from inside: they spend that time in C (lxml, lexbor), where no Python signal handler runs
(and a Ray task is not the main thread, where ``signal.alarm`` would be allowed anyway).
So the work runs in a child process that the parent kills when an item overruns.

The child is a fresh interpreter (``python -m datacurate.text.sandbox``), not a fork: a
Ray worker is multithreaded (gRPC), where ``fork`` may copy a held lock, and
multiprocessing's ``spawn`` / ``forkserver`` import the parent's ``__main__`` (Ray's worker
script, pytest). It inherits the parent's ``sys.path``. The parent sends a whole batch at
once; the child answers item by item; each answer must come within ``timeout`` seconds of
the previous one, else the child is killed, the item gets ``TIMEOUT`` and a new child
takes the rest of the batch. A child that dies on an item (a crash in C) gives it
``CRASH``. Overhead: one pickle of the batch plus one per answer (tens of microseconds
an item) and a child start (~1 s: the imports) at first use and after each kill.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import weakref
from multiprocessing.connection import Connection
from typing import Any, Callable, Sequence

TIMEOUT = "timeout"
CRASH = "crash"
ERROR = "error"
OK = "ok"


class Sandbox:
    """``fn`` (a picklable callable: a module-level function or a partial of one) applied
    to items in a child process; :meth:`map` returns one ``(status, value)`` per item:
    ``(OK, result)``, ``(ERROR, "Type: message")``, ``(TIMEOUT, None)`` or ``(CRASH, None)``."""

    def __init__(self, fn: Callable[[Any], Any], timeout: float):
        self.fn, self.timeout = fn, float(timeout)
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self.restarts = 0  # children started after the first (after a timeout or a crash)
        self._finalizer = None

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen([sys.executable, "-m", "datacurate.text.sandbox", str(to_child_r),
                                       str(from_child_w)], pass_fds=(to_child_r, from_child_w), env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
        self._send.send_bytes(pickle.dumps(self.fn))
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._send, self._recv)

    def close(self) -> None:
        """Stop the child (a later :meth:`map` starts a new one)."""
        if self._finalizer is not None:
            self._finalizer()
        self._proc = self._send = self._recv = self._finalizer = None

    def map(self, items: Sequence[Any]) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        while len(out) < len(items):
            if self._proc is None:
                self._start()
            try:
                self._send.send_bytes(pickle.dumps(list(items[len(out):]), protocol=pickle.HIGHEST_PROTOCOL))
            except (BrokenPipeError, OSError):  # the child died between batches: start another
                self.close()
                self.restarts += 1
                self._start()
                continue
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


def _stop(proc: subprocess.Popen, send: Connection, recv: Connection) -> None:
    for c in (send, recv):
        try:
            c.close()
        except OSError:
            pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _serve(read_fd: int, write_fd: int) -> None:
    recv, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    fn = pickle.loads(recv.recv_bytes())
    while True:
        try:
            items = pickle.loads(recv.recv_bytes())
        except EOFError:  # the parent closed the pipe (or died): done
            return
        for item in items:
            try:
                answer = (OK, fn(item))
            except Exception as e:  # one item's failure is that item's answer
                answer = (ERROR, f"{type(e).__name__}: {e}"[:500])
            send.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
