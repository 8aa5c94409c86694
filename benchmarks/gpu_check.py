"""The training half on one GPU, in one command (``bash benchmarks/gpu_check.sh``): the
``gpu`` tests, the loop's speed against a plain nanoGPT-shaped step, what DoReMi and RHO-1
cost per step, the grow_p2 curriculum against packing, the fused linear + cross-entropy head
(``train.loss: fused``) against the plain one at 124M and 350M, and a 124M model trained end
to end through ``datacurate train`` then ``datacurate eval``. Writes one JSON and prints a table.

Timed on an NVIDIA H200 (2026-11-28): ``gpu_tests`` 48-76 s, ``bench_train`` 282 s, ``bench_fused``
209 s, ``train_e2e`` ~126 s (an earlier run): ~9-10 minutes in all, more than one 10-minute
device call holds with a machine's start, so run ``--parts bench_train bench_fused gpu_tests``
in one call and ``--parts train_e2e`` in the next. ``--smoke`` runs every part on the CPU at toy sizes (seconds), so
the script is kept working on machines without a GPU; ``tests/test_gpu_check.py`` runs it.

Parts (each recorded with its wall time; a part that fails is recorded with its error and the
rest still run, and the exit status is 1):

1. ``pytest -m gpu tests/train/test_gpu.py`` (skipped on CPU);
2. ``benchmarks/bench_train.py``: throughput at 1024 and 4096 (tokens/s, MFU, peak memory of
   the baseline and of ours with the plain and the fused head, measured in the same process),
   grow_p2 over buckets 256..4096 against every step at 4096 with the faster head; on CPU also
   the DoReMi proxy and RHO-1 step cost over a plain step (left out on the GPU for time);
3. ``benchmarks/bench_train.py --races fused`` (``bench_fused``): the plain and the fused head
   (Liger Kernel's when its wheel is installed, else our chunked one) at 350M and 4096, 48
   sequences a step in micro-batches of 24 or 48 (tokens/s, MFU, peak memory, the largest
   micro-batch that fits), and the correctness check: the same seed's first 8 steps through
   each head within bf16 tolerance (3e-2);
4. ``datacurate train`` of the 124M preset on synthetic order-1 Markov shards (50,304-token
   vocabulary, 4 successors per token: a model can learn it, so the loss must fall far
   below its start), then ``datacurate eval`` of the checkpoint it wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = {  # bench_train arguments and the end-to-end run, per mode
    # GPU: ~8 minutes with compilation. Race 1 races the baseline against ours with the plain head and
    # the fused one (Liger's when installed; our chunked head unrolls 64 chunks into the compiled
    # graph at 65,536 tokens, left out for compile time); grow_p2 runs with whichever head was fastest at 4096. The
    # objectives race (DoReMi / RHO-1 step cost) is left out on the GPU for time (measured before:
    # README). The fused race: 350M at 4096, 48 sequences (196,608 tokens) a step in micro-batches of
    # 24 or 48: about 0.84 MB a token with the logits, 0.64 without (from 124M's 30.9 GiB at 65,536
    # tokens), so 48 should fit an H200 only without them.
    "gpu": {"bench": ["--device", "cuda", "--lengths", "1024", "4096", "--objective-len", "1024", "--repeats", "10",
                      "--warmup", "3", "--grow-steps", "24", "--grow-cycles", "2", "--passes", "2",
                      "--races", "throughput", "grow_p2", "--ours-heads", "plain", "fused",
                      "--grow-head", "best"],
            "fused": ["--device", "cuda", "--races", "fused", "--fused-presets", "350m", "--fused-lengths", "4096",
                      "--tokens-per-step", "196608", "--micro-batch", "24", "48", "--repeats", "3", "--warmup", "1",
                      "--curve-steps", "8"],
            "train": {"preset": "124m", "vocab": 50304, "buckets": {256: 768, 512: 384, 1024: 384}, "steps": 300,
                      "tokens_per_step": 32768, "device": "cuda", "min_drop": 1.0}},
    "smoke": {"bench": ["--device", "cpu", "--preset", "tiny", "--synthetic", "--vocab", "512", "--buckets", "64", "128",
                        "--lengths", "128", "--objective-len", "128", "--tokens-per-step", "1024", "--repeats", "2",
                        "--warmup", "1", "--grow-steps", "4", "--grow-cycles", "1", "--passes", "1", "--threads", "1",
                        "--races", "throughput", "objectives", "grow_p2", "--ours-heads", "plain", "fused",
                        "--grow-head", "best"],
              "fused": ["--device", "cpu", "--races", "fused", "--fused-presets", "tiny", "--vocab", "512",
                        "--tokens-per-step", "1024", "--fused-lengths", "128", "--micro-batch", "2", "8",
                        "--repeats", "1", "--warmup", "0", "--curve-steps", "2", "--threads", "1"],
              "train": {"preset": "tiny", "vocab": 512, "buckets": {64: 96, 128: 48}, "steps": 12,
                        "tokens_per_step": 1024, "device": "cpu", "min_drop": 0.1}},
}


def sh(cmd: list[str], log, **extra_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           **extra_env}
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    log.write(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}\n")
    log.flush()
    return p


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from datacurate.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def gpu_tests(mode: str, tmp: str, log) -> dict:
    p = sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests/train/test_gpu.py",
            f"--junitxml={tmp}/gpu.xml"], log)
    tail = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr.strip()[-300:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", tail)}
    ok = p.returncode == 0 and counts.get("failed", 0) == 0 and (mode == "smoke" or counts.get("passed", 0) > 0)
    return {"ok": ok, "summary": tail, **counts}


def bench(mode: str, tmp: str, log) -> dict:
    out = os.path.join(tmp, "bench_train.json")
    p = sh([sys.executable, "benchmarks/bench_train.py", *SIZES[mode]["bench"], "--out", out], log)
    if p.returncode != 0:
        return {"ok": False, "error": p.stderr.strip()[-2000:]}
    return {"ok": True, **json.loads(Path(out).read_text())}


def bench_fused(mode: str, tmp: str, log) -> dict:
    """Part 3: ok when every head ran at some micro-batch of every (preset, length) and the
    curves of the same seed agree."""
    out = os.path.join(tmp, "bench_fused.json")
    # expandable segments: the sweep runs near the card's memory after an out-of-memory step, and
    # a fragmented cache would stop the head that still fits
    p = sh([sys.executable, "benchmarks/bench_train.py", *SIZES[mode]["fused"], "--out", out], log,
           PYTORCH_CUDA_ALLOC_CONF=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"))
    if p.returncode != 0:
        return {"ok": False, "error": p.stderr.strip()[-2000:]}
    f = json.loads(Path(out).read_text())["fused"]
    ok = f["curves"]["ok"] and all(b for r in f["runs"] for b in r["best"].values())
    return {"ok": ok, **f}


def train_e2e(mode: str, tmp: str, log) -> dict:
    import numpy as np

    from tests.train.synth import markov, write_set

    t = SIZES[mode]["train"]
    rng = np.random.default_rng(0)
    buckets = {L: (markov(n, L, t["vocab"], rng), rng.integers(0, 2, size=n)) for L, n in t["buckets"].items()}
    shards = write_set(os.path.join(tmp, "shards"), buckets, ["a", "b"], t["vocab"])
    out = os.path.join(tmp, "train")
    sets = [f"steps={t['steps']}", f"model.preset={t['preset']}", f"device={t['device']}",
            f"data.tokens_per_step={t['tokens_per_step']}", "eval_every=100", "checkpoint_every=100",
            "log_every=1", "data.eval_fraction=0.02"]
    t0 = time.perf_counter()
    p = sh(cli("train", "--shards", shards, "--output", out, *[a for s in sets for a in ("--set", s)]), log)
    train_s = time.perf_counter() - t0
    if p.returncode != 0:
        return {"ok": False, "error": (p.stderr.strip() or p.stdout.strip())[-2000:]}
    rows = [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl"))]
    steps = [r for r in rows if "loss" in r]
    evals = [r for r in rows if "eval_loss" in r]
    p = sh(cli("eval", os.path.join(out, "checkpoints", "latest"), "--shards", shards, "--output",
               os.path.join(tmp, "eval.json")), log)
    ev = json.loads(Path(tmp, "eval.json").read_text()) if p.returncode == 0 else {"error": p.stderr.strip()[-500:]}
    first, last = steps[0]["loss"], float(np.mean([r["loss"] for r in steps[-10:]]))
    tps = [r["tokens_per_s"] for r in steps[len(steps) // 2:]]
    mfu = [r["mfu"] for r in steps[len(steps) // 2:] if r.get("mfu")]
    ok = (p.returncode == 0 and last < first - t["min_drop"] and os.path.isdir(os.path.join(out, "checkpoints", "latest")))
    return {"ok": ok, "preset": t["preset"], "steps": len(steps), "tokens_per_step": t["tokens_per_step"],
            "vocab": t["vocab"], "buckets": list(t["buckets"]), "wall_s": round(train_s, 1),
            "loss_first": round(first, 4), "loss_last10_mean": round(last, 4),
            "eval_loss": evals[-1]["eval_loss"] if evals else None, "cli_eval": ev.get("eval_loss", ev),
            "median_tokens_per_s_second_half": float(np.median(tps)),
            "median_mfu_second_half": float(np.median(mfu)) if mfu else None}


def table(result: dict) -> str:
    lines = [f"gpu_check on {result['device_name']} (torch {result['torch']}), {result['wall_s']} s"]
    for name, part in result["parts"].items():
        lines.append(f"  {name:<12} {'ok' if part.get('ok') else 'FAILED'}  ({part.get('part_s')} s)"
                     + (f"  {part['summary']}" if "summary" in part else ""))
    b = result["parts"].get("bench_train", {})
    if b.get("ok"):
        lines.append("  | seq len | arm (loss head) | tok/s | / baseline | MFU | peak GiB |")
        mfu = (lambda x: f"{x:.1%}" if x else "-")
        for r in b["throughput"]:
            for k, a in r["arms"].items():
                head = r.get("heads", {}).get(k, "")
                ratio = r.get("ratio_over_baseline", {}).get(k)
                lines.append(f"  | {r['seq_len']} | {k}{f' ({head})' if head else ''} | {a['median_tokens_per_s']:,.0f} | "
                             f"{f'{ratio:.3f}' if ratio else '-'} | {mfu(a['mfu'])} | {a['peak_memory_gib']} |")
        if b.get("objectives"):
            lines.append("  step time / plain: " + ", ".join(f"{k} {v:.3f}" for k, v in
                                                             b["objectives"]["step_time_over_plain"].items()))
        if b.get("grow_p2"):
            g = b["grow_p2"]
            lines.append(f"  grow_p2 / packed at {max(g['buckets'])} ({g.get('loss_head', 'plain')} head): "
                         f"{g['ratio_grow_over_packed']:.3f}")
    f = result["parts"].get("bench_fused", {})
    if f.get("runs"):
        lines.append("  | preset | seq len | head | best micro-batch | tok/s | MFU | peak GiB | largest that fits | / plain |")
        for r in f["runs"]:
            for h, b in r["best"].items():
                if b is None:
                    lines.append(f"  | {r['preset']} | {r['seq_len']} | {h} | none fits | | | | | |")
                    continue
                mfu = f"{b['mfu']:.1%}" if b.get("mfu") else "-"
                ratio = r.get("best_over_plain", {}).get(h)
                lines.append(f"  | {r['preset']} | {r['seq_len']} | {h} | {b['micro_batch']} | {b['tokens_per_s']:,.0f} | "
                             f"{mfu} | {b['peak_memory_gib']} | {r['largest_micro_batch_that_fits'][h]} | "
                             + (f"{ratio:.3f} |" if ratio else "- |"))
        c = f["curves"]
        lines.append(f"  fused vs plain, same seed, {c['steps']} steps: max relative loss difference "
                     + ", ".join(f"{h} {d:.2e}" for h, d in c["max_rel_diff_vs_plain"].items())
                     + f" (tolerance {c['tolerance']}): {'ok' if c['ok'] else 'FAILED'}")
    t = result["parts"].get("train_e2e", {})
    if t.get("ok"):
        lines.append(f"  train {t['preset']}: {t['steps']} steps, loss {t['loss_first']} -> {t['loss_last10_mean']}, "
                     f"eval {t['eval_loss']}, {t['median_tokens_per_s_second_half']:,.0f} tok/s"
                     + (f", MFU {t['median_mfu_second_half']:.1%}" if t["median_mfu_second_half"] else ""))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="every part on the CPU at toy sizes")
    ap.add_argument("--out", default=None, help="the JSON (default benchmarks/results/gpu_check.json)")
    ap.add_argument("--log", default=None, help="every command's output (default: beside the JSON)")
    ap.add_argument("--parts", nargs="+", default=["gpu_tests", "bench_train", "bench_fused", "train_e2e"])
    args = ap.parse_args()
    import torch

    mode = "smoke" if args.smoke else "gpu"
    if mode == "gpu" and not torch.cuda.is_available():
        print("gpu_check: torch sees no GPU; run with --smoke to check the script on the CPU", file=sys.stderr)
        return 2
    out = Path(args.out or ROOT / "benchmarks" / "results" / ("gpu_check_smoke.json" if args.smoke else "gpu_check.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    result = {"mode": mode, "device_name": torch.cuda.get_device_name() if mode == "gpu" else "cpu",
              "torch": torch.__version__, "command": "bash benchmarks/gpu_check.sh" + (" --smoke" if args.smoke else ""),
              "parts": {}}
    parts = {"gpu_tests": gpu_tests, "bench_train": bench, "bench_fused": bench_fused, "train_e2e": train_e2e}
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp, \
            open(args.log or out.with_suffix(".log"), "w") as log:
        for name in args.parts:
            t0 = time.perf_counter()
            print(f"[gpu_check] {name} ...", file=sys.stderr, flush=True)
            try:
                r = parts[name](mode, tmp, log)
            except Exception as e:  # noqa: BLE001 - one part's failure is recorded, the others still run
                r = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            r["part_s"] = round(time.perf_counter() - t0, 1)
            result["parts"][name] = r
            out.write_text(json.dumps(result, indent=2) + "\n")  # what ran so far survives a timeout
            print(f"[gpu_check] {name} {'ok' if r['ok'] else 'FAILED: ' + str(r.get('error', r.get('summary')))[-400:]}"
                  f" ({r['part_s']} s)", file=sys.stderr, flush=True)
    result["wall_s"] = round(time.time() - t_start, 1)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"[gpu_check] wrote {out}", file=sys.stderr)
    return 0 if all(p["ok"] for p in result["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
