"""The GPU science budget, chosen by a compute-optimal rule (issue 50, item 2).

    python benchmarks/science_plan.py            # the plan and its arithmetic
    python benchmarks/science_plan.py --mfu 0.08 # the same rule at a measured efficiency

**The rule.** Chinchilla (Hoffmann et al. 2022, "Training Compute-Optimal Large Language
Models"): for a compute budget C, loss is lowest near D = 20 N training tokens for N
parameters, with C = 6 N D (forward + backward, 2 + 4 FLOPs per parameter per token). Here
N counts every parameter, the tied 8k embedding included (at this size the embedding is
most of the model, and its matmul with the output is most of the compute), and the
attention's 12 n_layer d T FLOPs per token are added to 6 N (PaLM's count, as
``GPT.flops_per_token``).

**The budget.** 9 minutes (540 s) of one H200 for all four ablations, 5 seeds x 2 arms
each. Half of it is kept for what is not training FLOPs (start-up, shard loading, the
evaluations and curve checkpoints, the Python and kernel-launch overhead of small steps,
none of which is yet measured), so 270 s train. The runs, counted in training-run
equivalents of D tokens: DSIR 10, DoReMi 10 + its reference + its proxy (the proxy also
runs the reference forward: 1/3 of a step) = 12.33, curriculum 10, RHO-1 10 + 5 x 0.36 (the
rho1 arm's frozen reference forward, measured 1.36x a plain step on an H100:
/work/shared/ENVIRONMENT.md) + its reference (a few steps: 0.05) = 11.85; 44.2 in all.

**The throughput.** A lent H200 ran our 124M GPT (d = 768) at 515,132 tokens/s, 44.5 % of
989 TFLOP/s (benchmarks/results/gpu_check_h200.json). Models a few hundred wide fill the
GPU far less (matmuls of 128-256 columns, more launch-bound); the plan assumes 5 % (one
ninth of the measured 124M efficiency) until the device probe (``science_gpu.py probe``, which ``science_gpu.sh`` runs first)
measures it: ``--mfu`` redoes the arithmetic with the measured value.

**The solve.** For each shape of the grid (n_layer 4, n_head 4, width d, T = 512), N and
the FLOPs per token f(d) are exact; D = 20 N; a run costs C(d) = D f(d). The plan takes the
widest d whose 44.2 runs fit in 270 s at the assumed throughput, and rounds D up to whole
steps of 65,536 tokens. The floor of the issue: D >= 200 x 98,304 = 19,660,800 tokens (the
CPU budget's tokens per run).
"""

from __future__ import annotations

import argparse
import math
import sys

PEAK = 989e12  # H100/H200 dense bf16 FLOP/s
DEVICE_S, TRAIN_SHARE = 540.0, 0.5
RUNS = {"DSIR": 10.0, "DoReMi": 10 + 1 + 1 + 1 / 3, "curriculum": 10.0, "RHO-1": 10 + 5 * 0.36 + 0.05}
CPU_TOKENS = 98_304  # today's tokens per run (pipelines/ablations/*.yaml)
VOCAB, LAYERS, HEADS, SEQ, TOKENS_PER_STEP = 8192, 4, 4, 512, 65_536
WIDTHS = (64, 96, 128, 160, 192, 256, 320, 384)


def params(d: int, layers: int = LAYERS, vocab: int = VOCAB, seq: int = SEQ) -> int:
    """Every parameter of our GPT at width ``d`` (tied embedding, learned positions, no biases;
    per layer 12 d^2 in attention and MLP plus two LayerNorm weights; a final LayerNorm)."""
    return vocab * d + seq * d + layers * (12 * d * d + 2 * d) + d


def flops_per_token(d: int, layers: int = LAYERS, seq: int = SEQ) -> int:
    return 6 * params(d, layers) + 12 * layers * d * seq


def plan(mfu: float = 0.05) -> dict:
    runs = sum(RUNS.values())
    rate = mfu * PEAK
    budget = DEVICE_S * TRAIN_SHARE * rate / runs  # FLOPs per run-equivalent
    rows = []
    for d in WIDTHS:
        n = params(d)
        tokens = max(math.ceil(20 * n / TOKENS_PER_STEP), math.ceil(200 * CPU_TOKENS / TOKENS_PER_STEP)) * TOKENS_PER_STEP
        c = tokens * flops_per_token(d)
        rows.append({"d": d, "params": n, "tokens": tokens, "flops_per_run": c, "seconds_per_run": c / rate,
                     "fits": c <= budget})
    pick = [r for r in rows if r["fits"]][-1] if any(r["fits"] for r in rows) else rows[0]
    return {"mfu": mfu, "flops_per_s": rate, "run_equivalents": runs, "train_seconds": DEVICE_S * TRAIN_SHARE,
            "flops_per_run_budget": budget, "grid": rows, "pick": pick,
            "steps": pick["tokens"] // TOKENS_PER_STEP, "x_today": pick["tokens"] / CPU_TOKENS,
            "train_seconds_all": pick["seconds_per_run"] * runs}


def describe(p: dict) -> str:
    k = p["pick"]
    lines = [f"assumed throughput: {p['mfu']:.1%} of {PEAK / 1e12:.0f} TFLOP/s = {p['flops_per_s'] / 1e12:.1f} TFLOP/s",
             f"training time: {p['train_seconds']:.0f} s of {DEVICE_S:.0f} s for {p['run_equivalents']:.2f} "
             f"run-equivalents ({', '.join(f'{m} {r:.2f}' for m, r in RUNS.items())})",
             f"FLOPs per run-equivalent: {p['flops_per_run_budget']:.3g}",
             f"{'d':>5}{'params':>12}{'D = 20N':>14}{'C = D f':>12}{'s/run':>8}  fits"]
    for r in p["grid"]:
        lines.append(f"{r['d']:>5}{r['params']:>12,}{r['tokens']:>14,}{r['flops_per_run']:>12.3g}"
                     f"{r['seconds_per_run']:>8.1f}  {'yes' if r['fits'] else 'no'}")
    lines.append(f"plan: n_layer {LAYERS}, n_head {HEADS}, n_embd {k['d']}, T {SEQ}: {k['params']:,} parameters, "
                 f"{k['tokens']:,} tokens per run ({p['steps']} steps x {TOKENS_PER_STEP:,}) = {p['x_today']:.0f}x "
                 f"today's {CPU_TOKENS:,}; all runs' training {p['train_seconds_all']:.0f} s")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mfu", type=float, default=0.05, help="the small model's share of the 989 TFLOP/s peak")
    print(describe(plan(ap.parse_args().mfu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
