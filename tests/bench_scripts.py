"""The benchmark scripts that tests exercise, run as a user runs them: ``python
benchmarks/<script>.py ...`` in a subprocess. Tests import nothing from benchmarks/ (a
folder of scripts, not a package), and put nothing of it on ``sys.path``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def run_script(name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python benchmarks/<name> ARGS`` from the repository root; stdout and stderr captured."""
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / name), *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def make_crawl(n: int, out: str | Path, per_file: int = 10_000, workers: int = 1, seed: int = 0) -> dict:
    """benchmarks/make_crawl.py's crawl of ``n`` captures under ``out``; its summary (``crawl.json``)."""
    res = run_script("make_crawl.py", n, out, "--per-file", per_file, "--workers", workers, "--seed", seed)
    if res.returncode:
        raise RuntimeError(f"make_crawl.py failed: {res.stderr.strip()[-2000:]}")
    return json.loads((Path(out) / "crawl.json").read_text())
