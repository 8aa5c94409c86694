"""The sample pipeline's curation (pipelines/sample.yaml without its train: section) as a
user runs it: wall time with every global stage on the distributed phases
(``ray.small_input_docs=0``: Ray Data groupbys, joins, actors) and with the small-input
path (each global stage's phases in one task), same outputs.

Each run is a fresh ``datacurate run`` process with its own embedded Ray on 2 cores, so
Ray's start-up is in the figure, as a user sees it. The two modes alternate, ``--repeats``
times; the outputs (kept and rejected rows, shard bytes) of every run are compared.

    python benchmarks/bench_sample_wall.py --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parent.parent


def digest(out: Path) -> str:
    """One hash over the kept and rejected rows (per part file) and every shard file."""
    h = hashlib.sha256()
    for kind in ("kept", "rejected"):
        for p in sorted((out / kind).glob("*.parquet")):
            h.update(p.name.encode())
            h.update(json.dumps(pq.read_table(p).to_pylist(), sort_keys=True, default=str).encode())
    shards = out / "shards"
    for p in sorted(shards.rglob("*.bin")):
        h.update(str(p.relative_to(shards)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def run(pipeline: Path, out: Path, small_input_docs: int | None) -> dict:
    cmd = [sys.executable, "-m", "datacurate.cli", "run", str(pipeline), "--output", str(out), "--quiet",
           "--no-report", "--set", "ray.num_cpus=2"]
    if small_input_docs is not None:
        cmd += ["--set", f"ray.small_input_docs={small_input_docs}"]
    env = dict(os.environ, RAY_AUTH_MODE="disabled", PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    stats = json.loads((out / "stats.json").read_text())
    return {"wall_s": round(wall, 2), "engine_wall_s": stats["totals"]["wall_seconds"],
            "global_stage_s": {k: v["seconds"] for k, v in stats["stages"].items()
                               if k in ("exact_dedup", "near_dedup", "dsir", "decompose")},
            "kept": stats["totals"]["kept"], "digest": digest(out)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sample_wall.json"))
    args = ap.parse_args()
    raw = yaml.safe_load((ROOT / "pipelines" / "sample.yaml").read_text())
    raw.pop("train", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench_sample_"))
    pipeline = tmp / "curation.yaml"
    pipeline.write_text(yaml.safe_dump(raw))
    modes = {"distributed": 0, "small_input_path": None}
    runs: dict = {m: [] for m in modes}
    for r in range(args.repeats):
        for mode, n in modes.items():
            res = run(pipeline, tmp / f"{mode}-{r}", n)
            runs[mode].append(res)
            print(f"{mode:<18} run {r}: {res['wall_s']:6.1f} s wall (engine {res['engine_wall_s']:.1f} s)", flush=True)
    digests = {res["digest"] for rs in runs.values() for res in rs}
    summary = {m: {"median_wall_s": statistics.median(r["wall_s"] for r in rs),
                   "median_engine_wall_s": statistics.median(r["engine_wall_s"] for r in rs),
                   "global_stage_s": rs[len(rs) // 2]["global_stage_s"]} for m, rs in runs.items()}
    result = {"benchmark": "sample pipeline curation, wall time per `datacurate run` (2 cores)",
              "cpus": os.cpu_count(), "repeats": args.repeats, "identical_outputs": len(digests) == 1,
              "summary": summary, "speedup": round(summary["distributed"]["median_wall_s"] /
                                                   summary["small_input_path"]["median_wall_s"], 2),
              "runs": runs}
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("identical_outputs", "summary", "speedup")}, indent=2))


if __name__ == "__main__":
    main()
