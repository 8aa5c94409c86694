"""``datacurate run`` in a subprocess, as the fault tests start it: its own Ray, no
inherited cluster address or armed fault, this checkout on the path."""

from __future__ import annotations

import os
import subprocess
import sys
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
