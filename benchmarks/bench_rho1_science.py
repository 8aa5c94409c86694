"""RHO-1 science check: at equal steps, does selective language modelling beat full-token
training on held-out target documents when half the pool is costly, useless text?

RHO-1 is Lin et al. 2024, "Not All Tokens Are What You Need" (NeurIPS 2024): a reference
model trained on target-like text scores every token, and training back-propagates only
through the top ``ratio`` of each batch's tokens by excess loss (current - reference).
Their 1B model matched the baseline's few-shot math accuracy with 5-10x fewer tokens;
this is a small CPU-sized check of the mechanism with datacurate's own loop
(:mod:`datacurate.train.rho1`), on real text the tests do not use (they train on
synthetic Markov shards).

The set-up (all text from ``sample_data``; every split is by document, Brown documents
grouped by their Brown id so no sample is cut across splits):

* **target**: ``sample_data/target/target.jsonl`` (30 held-out Brown samples: learned
  and fiction). Never trained on; only evaluated.
* **reference**: a tiny GPT trained on *other* Brown learned + fiction samples from
  ``sample_data/corpus`` (a quarter of their Brown ids), nothing else.
* **pool** (what both arms train on, 50 % noise by tokens through ``data.domain_weights``):

  - ``prose`` (50 %): the remaining Brown learned, fiction and news samples;
  - ``foreign`` (25 %): the non-English man pages of ``technical_multilingual`` (12
    languages, Latin, Cyrillic and CJK scripts): real structured text a small model
    spends effort on, with nothing about English prose to learn;
  - ``shuffled`` (25 %): other Brown samples with their words shuffled within each
    document: the target's own vocabulary but no order to learn, so the reference
    finds it hard too (low excess loss) while a model trained on it keeps chasing it.

  Random letters or random tokens are deliberately *not* used: a small model fits them
  within a few dozen steps and then they cost it nothing, so they cannot separate the
  two arms.
* **runs**: per seed, full-token training and RHO-1 (``ratio`` 0.6, reference losses on
  the fly) on the same pool, same steps, same batches (the batch of step ``s`` is a pure
  function of the seed), same initialisation. Both are evaluated on every sequence of the
  target documents and of held-out pool documents (a share of each pool domain kept out
  of the pool), which shows what RHO-1 gave up.
* **selection**: with the final RHO-1 model and the reference, the share of each
  held-out pool domain's tokens that falls in the top 60 % by excess loss.

The trade-off shown: RHO-1 spends a reference forward per batch (or one offline pass,
``datacurate score-tokens``) and gives up the noise domains (its loss there stays high);
in return each step's gradient is mostly target-like text.

Run: ``python benchmarks/bench_rho1_science.py`` (reference 100 steps x 4,096 tokens, then
3 seeds x 2 arms x 100 steps x 2,048 tokens: about 5 minutes on 2 idle CPU cores, no
GPU, 2-3x that when the cores are shared) or ``--quick`` (1 seed x 40 steps); writes ``results/rho1_science.json``
(``--quick``: ``results/rho1_science_quick.json``). ``--work DIR`` keeps the shards and
the reference, and a rerun with the same reference steps reuses them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from datacurate import Pipeline  # noqa: E402
from datacurate.stages.decompose import Decompose  # noqa: E402
from datacurate.stages.tokenize import Tokenize  # noqa: E402
from datacurate.train import checkpoint  # noqa: E402
from datacurate.train.data import ShardDataset, StepSampler  # noqa: E402
from datacurate.configs.train import DataConfig, load_train_config  # noqa: E402
from datacurate.train.evaluate import eval_loss  # noqa: E402
from datacurate.train.loop import train  # noqa: E402

CORPUS = ROOT / "sample_data" / "corpus"
TARGET = ROOT / "sample_data" / "target" / "target.jsonl"
RESULTS = ROOT / "benchmarks" / "results"
POOLS = {  # token shares of the pool (--pool)
    "mixed": {"prose": 0.5, "foreign": 0.25, "shuffled": 0.25},
    # two thirds word-shuffled English: the target's own vocabulary with no order to learn,
    # so it bends the model's conditional predictions toward the unigram
    "shuffled": {"prose": 1 / 3, "foreign": 0.0, "shuffled": 2 / 3},
}
POOL_WEIGHTS = POOLS["mixed"]
RATIO = 0.6
TOKENS_PER_STEP = 2048  # pool runs: 4 sequences of 512 .. 32 of 64 per step
REF_TOKENS_PER_STEP = 4096
HELD_OUT = 0.08  # share of each pool domain's documents kept out of the pool, for its eval


def read_jsonl(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def bucket_of(key: str, n: int) -> int:
    """A stable split of ``key`` into ``n`` groups (crc32, independent of PYTHONHASHSEED)."""
    return zlib.crc32(key.encode()) % n


def build_texts(seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """{split: [(domain, text)]} for the reference, pool, pool_eval and target splits."""
    rng = np.random.default_rng(seed)
    out = {"reference": [], "pool": [], "pool_eval": [], "target": []}
    out["target"] = [("target", r["text"]) for r in read_jsonl(TARGET)]
    for name in ("learned.jsonl", "fiction.jsonl.gz", "news.jsonl"):
        for r in read_jsonl(CORPUS / name):
            g = bucket_of(min(r["meta"]["brown_ids"]), 8)  # Brown id -> 8 groups
            if g < 2 and name != "news.jsonl":
                out["reference"].append(("reference", r["text"]))
            elif g in (2, 3):
                words = r["text"].split()
                rng.shuffle(words)
                out["pool"].append(("shuffled", " ".join(words)))
            else:
                out["pool"].append(("prose", r["text"]))
    for r in read_jsonl(CORPUS / "technical_multilingual.jsonl"):
        if r["meta"].get("lang") != "en":
            out["pool"].append(("foreign", r["text"]))
    pool = out["pool"]
    held = rng.random(len(pool)) < HELD_OUT
    out["pool_eval"] = [p for p, h in zip(pool, held) if h]
    out["pool"] = [p for p, h in zip(pool, held) if not h]
    return out


def write_shards(directory: Path, docs: list[tuple[str, str]]) -> dict:
    """Tokenize (shipped 8k BPE) + dataset decomposition into buckets 64..512."""
    table = pa.table({"id": [f"d{i}" for i in range(len(docs))],
                      "text": pa.array([t for _, t in docs], pa.large_string()),
                      "domain": [d for d, _ in docs]})
    if not (directory / "manifest.json").exists():  # --work DIR: a rerun reuses the shards
        Pipeline([Tokenize(), Decompose(output=str(directory), min_log2=6, max_log2=9)]).apply(table)
    ds = ShardDataset(str(directory))
    tokens = {}
    for L in ds.seq_lens:
        doms = ds.all_domains(L)
        for i, d in enumerate(ds.domains):
            tokens[d] = tokens.get(d, 0) + int((doms == i).sum()) * L
    return {"documents": len(docs), "sequences": len(ds), "tokens": tokens}


def run(shards: Path, out: Path, steps: int, seed: int, tokens_per_step: int, weights=None, reference=None,
        log=None) -> float:
    """Train; returns wall seconds. Checkpoint at ``out/checkpoints/latest``."""
    raw = {"steps": steps, "seed": seed, "eval_every": 0, "checkpoint_every": 0, "log_every": 10,
           "device": "cpu", "model": {"preset": "tiny", "max_seq_len": 512},
           "data": {"tokens_per_step": tokens_per_step, "curriculum": "uniform", "eval_fraction": 0.0,
                    "domain_weights": weights}}
    if reference:
        raw["rho1"] = {"reference": reference, "ratio": RATIO}
    cfg = load_train_config(raw, shards=str(shards), output=str(out))
    t0 = time.perf_counter()
    train(cfg, log=log)
    return time.perf_counter() - t0


def evaluate(ckpt: Path, ds: ShardDataset) -> dict[str, float]:
    model, _ = checkpoint.load_model(str(ckpt), "cpu", ds.tokenizer["sha256"])
    return eval_loss(model, ds, {}, "cpu")


@torch.no_grad()
def selection_share(ckpt: Path, ref: Path, ds: ShardDataset, ratio: float, n_batches: int = 40) -> dict[str, float]:
    """Share of each domain's tokens in the top ``ratio`` by excess loss (model - reference),
    top-k within each batch, on ``n_batches`` batches drawn as training draws them (same
    tokens per step, same domain weights) from the held-out pool documents."""
    model, _ = checkpoint.load_model(str(ckpt), "cpu", ds.tokenizer["sha256"])
    refm, _ = checkpoint.load_model(str(ref), "cpu", ds.tokenizer["sha256"])
    cfg = DataConfig(tokens_per_step=TOKENS_PER_STEP, curriculum="uniform", eval_fraction=0.0,
                     domain_weights=POOL_WEIGHTS)
    sampler = StepSampler(ds, cfg, n_batches, seed=0)
    picked, total = np.zeros(len(ds.domains)), np.zeros(len(ds.domains))
    for step in range(n_batches):
        b = sampler.batch(step)
        seq_len = b.seq_len
        toks, doms = ds.sequences(seq_len, b.index)
        x = torch.from_numpy(toks.astype(np.int64))
        excess = model(x[:, :-1], x[:, 1:]) - refm(x[:, :-1], x[:, 1:])  # (B, L-1)
        flat = excess.reshape(-1)
        k = math.ceil(ratio * flat.numel())
        keep = torch.zeros_like(flat, dtype=torch.bool)
        keep[torch.topk(flat, k).indices] = True
        per_seq = keep.reshape(excess.shape).sum(1).numpy()  # (B,)
        np.add.at(picked, doms.astype(np.int64), per_seq)
        np.add.at(total, doms.astype(np.int64), seq_len - 1)
    return {d: float(picked[i] / total[i]) for i, d in enumerate(ds.domains) if total[i]}


def spread(xs: list[float]) -> float | None:
    return statistics.stdev(xs) if len(xs) > 1 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 seed x 40 steps (reference 50 steps)")
    ap.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3, quick 1)")
    ap.add_argument("--steps", type=int, default=None, help="steps per arm (default 100, quick 40)")
    ap.add_argument("--ref-steps", type=int, default=None, help="reference steps (default 100, quick 50)")
    ap.add_argument("--work", default=None, help="working directory (default: a temporary one, removed)")
    ap.add_argument("--out", default=None, help="results JSON")
    ap.add_argument("--pool", choices=sorted(POOLS), default="mixed", help="pool mix (see POOLS)")
    args = ap.parse_args()
    global POOL_WEIGHTS
    POOL_WEIGHTS = POOLS[args.pool]
    seeds = args.seeds or (1 if args.quick else 3)
    steps = args.steps or (40 if args.quick else 100)
    ref_steps = args.ref_steps or (50 if args.quick else 100)
    suffix = "" if args.pool == "mixed" else f"_{args.pool}"
    out_json = Path(args.out or RESULTS / (f"rho1_science{suffix}_quick.json" if args.quick else f"rho1_science{suffix}.json"))
    work = Path(args.work or tempfile.mkdtemp(prefix="rho1_science_"))
    quiet = lambda m: None  # noqa: E731 - the loop's per-step log; this script prints its own lines
    t_start = time.perf_counter()

    texts = build_texts()
    data = {}
    for split, docs in texts.items():
        data[split] = write_shards(work / split, docs)
        print(f"{split:10s} {data[split]['documents']:4d} docs  tokens " +
              ", ".join(f"{d} {n:,}" for d, n in data[split]["tokens"].items()), flush=True)
    target_ds, pool_eval_ds = ShardDataset(str(work / "target")), ShardDataset(str(work / "pool_eval"))

    ref_ckpt = work / "reference" / "run" / "checkpoints" / "latest"
    if (ref_ckpt / "state.json").exists() and checkpoint.read_state(str(ref_ckpt))["step"] == ref_steps:
        ref_wall = None  # --work DIR: a rerun reuses the reference
    else:
        ref_wall = run(work / "reference", work / "reference" / "run", ref_steps, 0, REF_TOKENS_PER_STEP, log=quiet)
    reference = {"steps": ref_steps, "tokens_per_step": REF_TOKENS_PER_STEP, "wall_s": ref_wall and round(ref_wall, 1), "target_loss": evaluate(ref_ckpt, target_ds)["all"],
                 "pool_eval_loss": evaluate(ref_ckpt, pool_eval_ds)}
    print(f"reference: {ref_steps} steps, target loss {reference['target_loss']:.4f}, "
          f"pool held-out " + "  ".join(f"{k} {v:.3f}" for k, v in reference["pool_eval_loss"].items()), flush=True)

    runs = []
    for seed in range(seeds):
        row = {"seed": seed}
        for arm, ref in (("full", None), ("rho1", str(ref_ckpt))):
            out = work / f"{arm}-{seed}"
            wall = run(work / "pool", out, steps, seed, TOKENS_PER_STEP, POOL_WEIGHTS, ref, log=quiet)
            ckpt = out / "checkpoints" / "latest"
            row[arm] = {"wall_s": round(wall, 1), "target_loss": evaluate(ckpt, target_ds)["all"],
                        "pool_eval_loss": evaluate(ckpt, pool_eval_ds)}
            if arm == "rho1":
                row[arm]["selected_share"] = selection_share(ckpt, ref_ckpt, pool_eval_ds, RATIO)
            print(f"seed {seed} {arm:4s}: target {row[arm]['target_loss']:.4f}  pool held-out " +
                  "  ".join(f"{k} {v:.3f}" for k, v in row[arm]["pool_eval_loss"].items()) +
                  f"  ({wall:.0f}s)", flush=True)
        row["gap"] = row["full"]["target_loss"] - row["rho1"]["target_loss"]
        runs.append(row)

    full = [r["full"]["target_loss"] for r in runs]
    rho = [r["rho1"]["target_loss"] for r in runs]
    gaps = [r["gap"] for r in runs]
    summary = {"full_mean": statistics.mean(full), "rho1_mean": statistics.mean(rho),
               "full_sd": spread(full), "rho1_sd": spread(rho), "gap_mean": statistics.mean(gaps),
               "gap_sd": spread(gaps), "gap_min": min(gaps), "gap_max": max(gaps),
               "rho1_better_every_seed": all(g > 0 for g in gaps)}
    if len(gaps) > 1:
        summary["gap_over_seed_sd"] = summary["gap_mean"] / max(summary["full_sd"], summary["rho1_sd"])
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    result = {
        "command": "python benchmarks/bench_rho1_science.py" + (" --quick" if args.quick else "") +
                   f" --pool {args.pool} --steps {steps} --ref-steps {ref_steps} --seeds {seeds}",
        "machine": {"cpu_model": model, "nproc": os.cpu_count(), "gpu": torch.cuda.is_available(),
                    "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
                    "torch": torch.__version__},
        "setup": {"model": "tiny (2 layers x 128, 4 heads, vocab 8192)", "tokens_per_step": TOKENS_PER_STEP,
                  "buckets": "64..512 (dataset decomposition)", "curriculum": "uniform", "steps": steps,
                  "ratio": RATIO, "pool_weights": POOL_WEIGHTS, "seeds": seeds},
        "data": data, "reference": reference, "runs": runs, "summary": summary,
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"held-out target loss: full {summary['full_mean']:.4f}  RHO-1 {summary['rho1_mean']:.4f}  "
          f"gap {summary['gap_mean']:+.4f} (per seed {', '.join(f'{g:+.4f}' for g in gaps)})  "
          f"wall {result['wall_s']:.0f}s -> {out_json}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
