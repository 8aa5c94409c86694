"""The driver's RSS at each segment and global-phase boundary of a bench_pipeline_scale run (issue 18).

    .venv/bin/python benchmarks/profile_driver_memory.py 300000

Runs the same curation as ``bench_pipeline_scale.py`` (same cached input, same config)
with the engine's segment runner and the global-stage primitives wrapped so that each
boundary prints the driver's RSS; at the end, the driver's largest memory mappings
(``[heap]`` and anonymous mappings are native allocations: Ray core, Arrow). Used to find
which phases make the driver grow with the corpus.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import ctypes

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_pipeline_scale as bench  # noqa: E402
from datacurate.configs.pipeline import load_config  # noqa: E402
from datacurate.engine import run_pipeline  # noqa: E402
from datacurate.engine.ray import context, data, segments  # noqa: E402

ME = psutil.Process()
T0 = time.time()


CURRENT = {"tag": "start"}


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo():
    """glibc's heap (all arenas): (bytes in use, bytes free but kept by malloc); None off glibc."""
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _Mallinfo2
    m = fn()
    return m.uordblks + m.hblkhd, m.fordblks


def heap() -> str:
    """malloc's bytes in use and free-but-kept, and Arrow's pool: what the RSS is made of."""
    import pyarrow as pa

    m = _mallinfo()
    parts = [f"malloc used {m[0] / 2**30:.3f} free {m[1] / 2**30:.3f}"] if m else []
    parts.append(f"arrow {pa.total_allocated_bytes() / 2**20:.0f} MB")
    return ", ".join(parts)


def rss(tag: str) -> None:
    CURRENT["tag"] = tag
    print(f"{time.time() - T0:7.1f}s {tag:40s} driver rss {ME.memory_info().rss / 2**30:.3f} GB ({heap()})", flush=True)


def instrument() -> None:
    run_segment = segments.run_segment

    def segment(cfg, seg_index, items, on_stats, journal=None):
        rss(f"segment {seg_index} start ({len(items)} items)")
        run_segment(cfg, seg_index, items, on_stats, journal)
        rss(f"segment {seg_index} end")

    segments.run_segment = segment
    run_items = context.RayContext._run_items

    def items(self, phase, *a, **k):
        out = run_items(self, phase, *a, **k)
        rss(f"  {self.stage} {phase} end")
        return out

    context.RayContext._run_items = items
    for name in ("count", "rows", "materialize"):
        fn = getattr(data.Data, name)

        def wrapped(self, *a, _fn=fn, _name=name, **k):
            out = _fn(self, *a, **k)
            rss(f"  Data.{_name}")
            return out

        setattr(data.Data, name, wrapped)


class PeakWatch(threading.Thread):
    """Samples the driver's RSS every second; at each new peak, remembers the phase it
    was in and the largest mappings (printed at the end): where the driver's peak is."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.at, self.maps = 0, "", []

    def run(self):
        while True:
            r = ME.memory_info().rss
            if r > self.peak * 1.02:
                self.peak, self.at = r, f"{time.time() - T0:.0f}s after {CURRENT['tag']}"
                self.maps = mappings(6)
            time.sleep(1.0)


class TreePeak(threading.Thread):
    """The summed PSS of the driver and every Ray process (bench_pipeline_scale's sampler),
    and the phase the driver was in at its peak."""

    def __init__(self):
        super().__init__(daemon=True)
        self.tree, self.at = bench.TreeMemory(every=0.5), ""

    def run(self):
        self.tree.start()
        peak = 0
        while True:
            time.sleep(0.5)
            if self.tree.peak_pss > peak:
                peak, self.at = self.tree.peak_pss, f"{time.time() - T0:.0f}s after {CURRENT['tag']}"


def mappings(top: int) -> list:
    sizes: dict[str, int] = {}
    name = None
    with open(f"/proc/{os.getpid()}/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else "[anon]"
            elif parts and parts[0] == "Rss:" and name is not None:
                sizes[name] = sizes.get(name, 0) + int(parts[1])
    return sorted(sizes.items(), key=lambda x: -x[1])[:top]


def largest_mappings(top: int = 8) -> None:
    for n, kb in mappings(top):
        print(f"{kb / 1024:9.1f} MB  {n}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    inp = ROOT / "benchmarks" / ".cache" / f"pipeline_docs_{n}_s0.jsonl"
    if not inp.exists():
        bench.generate(inp, n, 0)
    instrument()
    cfg = load_config(bench.curation_config(inp, Path(tempfile.mkdtemp(prefix="dc-drvmem-")), n, 2))
    rss("start")
    watch = PeakWatch()
    watch.start()
    tree = TreePeak()
    tree.start()
    run_pipeline(cfg, progress=False, report=False)
    rss("end")
    largest_mappings()
    if _mallinfo() is not None:  # how much of the RSS was free memory malloc kept
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        rss("after malloc_trim(0)")
    print(f"peak PSS of all processes {tree.tree.peak_pss / 2**30:.3f} GB at {tree.at}: {tree.tree.breakdown}")
    print(f"peak driver rss {watch.peak / 2**30:.3f} GB at {watch.at}; largest mappings then:")
    for n, kb in watch.maps:
        print(f"{kb / 1024:9.1f} MB  {n}")


if __name__ == "__main__":
    main()
