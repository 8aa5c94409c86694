"""Shared set-up of the benchmark scripts: one core, one thread, same corpus reader.

Import it first (``from _common import ...``): it pins the process to one core and sets
the thread-count variables before NumPy, fastText or Arrow start their thread pools.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
N_CPUS_VISIBLE = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import gzip  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "sample_data" / "corpus"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def read_jsonl(path: Path) -> list[dict]:
    """All records of a sample_data JSONL file (.jsonl, .jsonl.gz or .jsonl.zst)."""
    path = Path(path)
    if path.suffix == ".gz":
        raw = gzip.decompress(path.read_bytes())
    elif path.suffix == ".zst":
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(path.read_bytes()).read()
    else:
        raw = path.read_bytes()
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


CLOCKS = {"wall": "perf_counter", "cpu": "process_time"}


def clock(name: str):
    """The timer of the timed sections: ``wall`` (time.perf_counter) or ``cpu``
    (time.process_time: this process's CPU seconds). Every run is one thread pinned to one
    core, so on a machine shared with other jobs its CPU time moves far less than its
    wall time (other processes take turns on the core; they do not add CPU time here)."""
    import time

    return getattr(time, CLOCKS[name])


def machine_info(packages: list[str]) -> dict:
    """CPU model, visible cores, the core the run is pinned to, Python and package versions."""
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    pkgs = {}
    for p in packages:
        try:
            pkgs[p] = version(p)
        except Exception:  # noqa: BLE001 - a package that is not installed
            pkgs[p] = None
    return {"nproc": N_CPUS_VISIBLE, "cpu_model": model, "pinned_to": sorted(os.sched_getaffinity(0)),
            "python": platform.python_version(), "versions": pkgs}


def bench_parser(doc: str, result_file: str, repeats: int = 3, batch_size: int = 1024):
    """The options every side-by-side benchmark takes: repeats, batch size, result JSON, README."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--batch-size", type=int, default=batch_size)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / result_file))
    ap.add_argument("--readme", default=str(ROOT / "benchmarks" / "README.md"))
    return ap


def replace_block(path: Path, begin: str, end: str, body: str) -> None:
    """Put ``body`` (which starts with ``begin`` and ends with ``end``) in place of the
    README block between those markers, or append it."""
    text = path.read_text() if path.exists() else ""
    if begin in text:
        text = text[: text.index(begin)] + body + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + body + "\n"
    path.write_text(text)


def loadavg() -> list[str]:
    return open("/proc/loadavg").read().split()[:3]


def emit(res: dict, out: str | None) -> dict:
    """Print a result as JSON, and write it to ``out`` too when given."""
    text = json.dumps(res, indent=2, ensure_ascii=False)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return res
