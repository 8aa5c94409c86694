"""A parent process that watches a run joined to a Ray cluster and says why it ended.

A driver joined to a cluster (``--ray-address``, ``RAY_ADDRESS``, ``ray job submit``)
cannot reliably report the cluster's death itself: when the cluster goes away, Ray's
core worker ends the driver from native code (exit status 1, no message) or retries for
minutes, and a watchdog thread inside the driver races that exit and loses about every
other time. So the CLI runs such a command in a child process and stays as its
supervisor, outside every race:

* the child announces, before ``ray.init`` and once it is connected, the addresses it
  depends on: the cluster's control store (GCS) and its node's raylet, both gRPC
  servers (:func:`announce`, over a pipe);
* the supervisor probes them once a second (:func:`answers`); a probe succeeds only when
  the server's own code answers, so a process that is dead, dying or stopped never
  passes for alive (the kernel accepts a TCP connection on a dying server's socket; it
  cannot send the HTTP/2 SETTINGS frame a gRPC server sends);
* a server that does not answer ends the run: the child's process group is killed and
  the one line ``datacurate: lost the Ray cluster at ADDR ...; run again with --resume``
  is printed, exit status 3 (runs are safe to kill at any moment: ``--resume`` continues);
* a child that ends on its own with a failure is judged after the fact: if a server it
  depended on no longer answers, the ending is the lost cluster (the same line, exit 3),
  whatever the child printed and however it died; else the child's own status stands.

Only a refused or reset connection, or no answer for :data:`PROBE_TIMEOUT_S` twice in a
row (a stopped or hung server), counts as lost: the verdict follows the servers' state,
not the timing of the child's exit.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys

FD_ENV = "DATACURATE_SUPERVISOR_FD"  # the pipe the child announces its addresses on
PROBE_TIMEOUT_S = 10.0
EXIT_LOST = 3

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS


def answers(address: str, timeout: float = PROBE_TIMEOUT_S) -> bool | None:
    """True when the gRPC server at ``host:port`` answers the HTTP/2 preface with a frame;
    False when the connection is refused or reset or closed without one; None when it
    did not answer within ``timeout`` (stopped, hung, or unreachable host)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(_PREFACE)
            head = b""
            while len(head) < 9:
                chunk = s.recv(9 - len(head))
                if not chunk:
                    return False
                head += chunk
            return head[3] == 0x04  # a SETTINGS frame: the server's code is running
    except (socket.timeout, TimeoutError):
        return None
    except (ConnectionError, OSError):
        return False


def announce(*addresses: str) -> bool:
    """In the child: tell the supervisor which servers this run depends on. False when
    there is no supervisor (library use): the caller then watches by itself."""
    fd = os.environ.get(FD_ENV)
    if not fd:
        return False
    line = " ".join(a for a in addresses if a and ":" in a and "://" not in a) + "\n"
    try:
        os.write(int(fd), line.encode())
    except OSError:  # the supervisor is gone: nobody to tell
        return False
    return True


def may_join(command: str) -> bool:
    """A command that may join a cluster, in a process no supervisor watches yet."""
    return not os.environ.get(FD_ENV) and command in ("run", "train", "doremi")


def _lost_line(address: str, why: str) -> str:
    return (f"datacurate: lost the Ray cluster at {address} ({why}); the run stopped: "
            "run again with --resume to continue")


class _Watch:
    """The servers announced so far and the verdict on them."""

    def __init__(self, address: str):
        self.address = address  # as the user gave it: the name in the message
        self.servers: list[str] = []
        self.silent: dict[str, int] = {}

    def read(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        for line in data.decode(errors="replace").splitlines():
            if line.strip():
                self.servers = line.split()
                self.silent.clear()

    def lost(self) -> str | None:
        """Why the cluster counts as lost now, or None."""
        for server in self.servers:
            ok = answers(server)
            if ok:
                self.silent.pop(server, None)
                continue
            if ok is False:
                return f"{server} refused the connection"
            self.silent[server] = self.silent.get(server, 0) + 1
            if self.silent[server] >= 2:
                return f"{server} did not answer for {2 * PROBE_TIMEOUT_S:.0f} s"
        return None


def supervise(argv: list[str], address: str) -> int:
    """Run ``datacurate ARGV`` in a child process and watch the cluster it joins (module doc)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    env = dict(os.environ, **{FD_ENV: str(write_fd)})
    child = subprocess.Popen([sys.executable, "-m", "datacurate.cli", *argv], env=env, pass_fds=(write_fd,),
                             start_new_session=False, preexec_fn=_die_with_parent)
    os.close(write_fd)
    # a terminal's Ctrl-C reaches the child too; it says one line and ignores a second SIGINT
    forwarded = {s: signal.signal(s, lambda sig, _f: _forward(child, sig))
                 for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1) if hasattr(signal, s.name)}
    watch = _Watch(address)
    try:
        while True:
            ready, _, _ = select.select([read_fd], [], [], 1.0)
            if ready:
                watch.read(read_fd)
            rc = child.poll()
            if rc is not None:
                break
            why = watch.lost()
            if why is not None:
                _kill(child)
                print(_lost_line(address, why), file=sys.stderr, flush=True)
                return EXIT_LOST
        watch.read(read_fd)
        if rc != 0:
            why = watch.lost()
            if why is not None:
                print(_lost_line(address, why), file=sys.stderr, flush=True)
                return EXIT_LOST
        if rc < 0:  # killed by a signal: end the same way
            for s in forwarded:
                signal.signal(s, signal.SIG_DFL)
            signal.signal(-rc, signal.SIG_DFL)
            os.kill(os.getpid(), -rc)
            return 128 - rc
        return rc
    finally:
        os.close(read_fd)
        for s, handler in forwarded.items():
            signal.signal(s, handler)
        if child.poll() is None:
            _kill(child)


def _forward(child: subprocess.Popen, sig: int) -> None:
    if child.poll() is None:
        child.send_signal(sig)


def _kill(child: subprocess.Popen) -> None:
    """The child and what it started in its own process group (it runs in ours: only it)."""
    try:
        child.kill()
    except ProcessLookupError:
        pass
    child.wait()


def _die_with_parent() -> None:
    """In the child before exec: a SIGTERM when the supervisor dies (Linux), so a killed
    supervisor never leaves a driver running unwatched."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
