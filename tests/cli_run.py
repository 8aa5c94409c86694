"""``datacurate run`` in a subprocess, as the fault tests start it: its own Ray, no
inherited cluster address or armed fault, this checkout on the path."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def clean_env(**extra) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "DATACURATE_FAULT"))}
    out.update(RAY_AUTH_MODE="disabled", PYTHONPATH=str(REPO), **extra)
    return out


def cmd(pipeline: Path, out: Path, *args) -> list:
    return [sys.executable, "-m", "datacurate.cli", "run", str(pipeline), "--output", str(out), "--no-report", *args]


def run(pipeline: Path, out: Path, *args, env=None, timeout=600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd(pipeline, out, *args), env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"ray start exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection((socket.gethostbyname(socket.gethostname()), port), timeout=1).close()
            return
        except OSError:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.5)
    raise TimeoutError(f"nothing listens on {port}: {log.read_text()[-2000:]}")
