"""End-to-end dedup at scale: N generated ~2 KB documents through exact + near dedup on Ray.

Documents are built from real sample_data sentences (random sentence sequences, so
originals are distinct), with a share of exact copies and near copies at 2-10 % word
edits. The run is the real CLI engine (``run_pipeline``) with an embedded local Ray on
this machine's cores; a sampler thread sums the PSS of the driver and every Ray
process (raylet, GCS, workers, object store) every 0.5 s and records the peak.

    .venv/bin/python benchmarks/bench_dedup_scale.py --docs 1000000

Writes benchmarks/results/dedup_scale_<N>_<stages>.json and prints a summary. The generated
input (~2 GB for 1M docs) goes to benchmarks/.cache/ and is reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import threading
import time
from pathlib import Path

import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sentences() -> list[str]:
    out = []
    for name in ("news.jsonl", "learned.jsonl", "legal.jsonl", "conversational.jsonl"):
        with open(ROOT / "sample_data" / "corpus" / name, "rb") as f:
            for line in f:
                text = orjson.loads(line)["text"]
                out += [s for s in re.split(r"(?<=[.!?])\s+", text) if 40 <= len(s) <= 400]
    return out


def generate(path: Path, n: int, seed: int, dup_frac: float = 0.1) -> dict:
    """Write n JSONL docs of ~2 KB; dup_frac of them are exact (1/3) or near (2/3) copies."""
    rng = random.Random(seed)
    pool = sentences()
    words = [w for s in pool[:5000] for w in s.split()]
    n_copies = int(n * dup_frac)
    originals, made = [], {"exact": 0, "near": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for i in range(n):
            if i >= 1000 and rng.random() < dup_frac and made["exact"] + made["near"] < n_copies:
                src = originals[rng.randrange(len(originals))]
                if rng.random() < 1 / 3:
                    text = src
                    made["exact"] += 1
                else:
                    ws = src.split()
                    rate = rng.uniform(0.02, 0.10)
                    for _ in range(max(1, int(rate * len(ws)))):
                        ws[rng.randrange(len(ws))] = rng.choice(words)
                    text = " ".join(ws)
                    made["near"] += 1
            else:
                parts, size = [], 0
                while size < 2000:
                    s = pool[rng.randrange(len(pool))]
                    parts.append(s)
                    size += len(s) + 1
                text = " ".join(parts)
                if len(originals) < 200_000:
                    originals.append(text)
                elif rng.random() < 0.01:
                    originals[rng.randrange(len(originals))] = text
            f.write(orjson.dumps({"id": f"d{i:08d}", "text": text}) + b"\n")
    return made


class PeakRSS(threading.Thread):
    """Peak of the summed PSS of this process and all Ray processes on the machine.

    PSS (proportional set size) splits shared pages between the processes mapping them,
    so the object store's shared memory is counted once, not once per worker (RSS would)."""

    def __init__(self, every: float = 1.0):
        super().__init__(daemon=True)
        self.every, self.peak, self.stop = every, 0, False

    def run(self):
        me = psutil.Process()
        while not self.stop:
            total = me.memory_full_info().pss
            for p in psutil.process_iter(["name", "cmdline"]):
                try:
                    cmd = " ".join(p.info["cmdline"] or [])
                    if p.pid != me.pid and ("ray" in (p.info["name"] or "") or "ray/" in cmd or "raylet" in cmd
                                            or "gcs_server" in cmd or "default_worker" in cmd):
                        total += p.memory_full_info().pss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            self.peak = max(self.peak, total)
            time.sleep(self.every)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--object-store-mb", type=int, default=2048)
    ap.add_argument("--stages", default="exact,near", help="exact, near or exact,near")
    args = ap.parse_args()

    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    cache = ROOT / "benchmarks" / ".cache"
    inp = cache / f"docs_{args.docs}.jsonl"
    t0 = time.perf_counter()
    made = None
    if not inp.exists():
        made = generate(inp, args.docs, args.seed)
    gen_s = time.perf_counter() - t0
    stages = []
    if "exact" in args.stages:
        stages.append({"exact_dedup": {"expected_items": max(args.docs, 1000), "num_shards": 4}})
    if "near" in args.stages:
        stages.append({"near_dedup": {"threshold": 0.8, "num_partitions": 8}})
    out = cache / f"out_{args.docs}_{args.stages.replace(',', '+')}"
    cfg = load_config({"input": {"path": str(inp), "chunk_bytes": 32 << 20},
                       "output": str(out),
                       "ray": {"object_store_memory_mb": args.object_store_mb},
                       "stages": stages})
    sampler = PeakRSS()
    sampler.start()
    t1 = time.perf_counter()
    report = run_pipeline(cfg)
    wall = time.perf_counter() - t1
    sampler.stop = True
    sampler.join()
    res = {
        "docs": args.docs, "input_bytes": inp.stat().st_size, "generated": made, "generate_seconds": round(gen_s, 1),
        "wall_seconds": round(wall, 1), "docs_per_second": round(args.docs / wall, 1),
        "peak_pss_gb": round(sampler.peak / 2**30, 2), "object_store_mb": args.object_store_mb,
        "cores": os.cpu_count(), "load_at_end": open("/proc/loadavg").read().split()[:3],
        "totals": report["totals"],
        "stages": {k: {kk: v for kk, v in st.items() if kk in ("in", "kept", "rejected_total", "seconds", "metrics")}
                   for k, st in report["stages"].items()},
    }
    (ROOT / "benchmarks" / "results").mkdir(exist_ok=True)
    tag = args.stages.replace(",", "+")
    with open(ROOT / "benchmarks" / "results" / f"dedup_scale_{args.docs}_{tag}.json", "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps({k: res[k] for k in ("docs", "wall_seconds", "docs_per_second", "peak_pss_gb", "totals")}, indent=2))


if __name__ == "__main__":
    main()
