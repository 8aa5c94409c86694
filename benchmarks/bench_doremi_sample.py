"""DoReMi on the sample shards: train ``tiny`` at equal steps on the natural mixture and on
DoReMi's weights; held-out loss per domain and on average (Xie et al. 2023 report the
average perplexity over domains; here the mean over domains and over all eval tokens).

    python benchmarks/bench_doremi_sample.py [--shards out/sample/shards] [--steps 150]

Writes benchmarks/results/doremi_sample.json. CPU figures (2 cores) in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from datacurate.train.doremi import run_doremi
from datacurate.configs.train import DoremiRunConfig, load_train_config
from datacurate.train.loop import train


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", default="out/sample/shards")
    ap.add_argument("--work", default="out/bench_doremi")
    ap.add_argument("--steps", type=int, default=150, help="steps of each trained model (reference, proxy, finals)")
    ap.add_argument("--tokens-per-step", type=int, default=4096)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    base = {"threads": None, "eval_every": 0, "checkpoint_every": 0,
            "data": {"tokens_per_step": args.tokens_per_step, "curriculum": "grow_p2"}}
    t0 = time.perf_counter()
    dcfg = load_train_config({**base, "seed": 0, "doremi": {"reference_steps": args.steps,
                                                            "proxy_steps": args.steps}},
                             cls=DoremiRunConfig, shards=args.shards, output=os.path.join(args.work, "doremi"))
    weights = run_doremi(dcfg, lambda c, r, o: train(c, resume=r, objective=o))
    t_doremi = time.perf_counter() - t0
    runs = {}
    for name, w in (("natural", None), ("doremi", os.path.join(args.work, "doremi", "domain_weights.json"))):
        for seed in range(args.seeds):
            raw = {**base, "steps": args.steps, "seed": seed, "data": {**base["data"], "domain_weights": w}}
            final = train(load_train_config(raw, shards=args.shards, output=os.path.join(args.work, f"{name}-{seed}")))
            ev = final["eval_loss"]
            doms = {k: v for k, v in ev.items() if k != "all"}
            runs.setdefault(name, []).append({"seed": seed, "eval_loss": ev,
                                              "mean_over_domains": sum(doms.values()) / len(doms)})
    out = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, CPU",
           "shards": args.shards, "steps": args.steps, "tokens_per_step": args.tokens_per_step,
           "doremi_weights": weights, "doremi_seconds": round(t_doremi, 1), "runs": runs}
    os.makedirs("benchmarks/results", exist_ok=True)
    with open("benchmarks/results/doremi_sample.json", "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
