"""Side-by-side benchmark: DSIR, datacurate vs the reference package (``data-selection``).

Same data, same features (word-punct unigrams + bigrams into 10,000 buckets), same
minimum length (100 tokens), same k, one core each (``sched_setaffinity``; thread pools
of 1), each in a fresh subprocess so its peak RSS (VmHWM) is its own:

* reference: ``data_selection.HashedNgramDSIR(num_proc=1)``: ``fit_importance_estimator
  (num_tokens_to_fit="all")``, ``compute_importance_weights()``, ``resample(k)``
  (Gumbel top-k, writes the selected JSONL). Runs with ``benchmarks/.venv``.
* datacurate: the ``dsir`` stage's phase functions in one process, as the engine runs
  them per partition: read JSONL batches (2,048 rows) -> fit counts (each batch featurised
  once, its features saved) -> weights + keys
  per batch (written beside, as the engine does) with a running top-k -> k-th key ->
  select per batch and write the selected rows as Parquet. Then the whole engine
  (``datacurate run``, local Ray with 1 CPU) end to end, for its wall time.

The raw pool is ~2 KB documents cut from sample_data's domains (news, learned, legal,
conversational, web noise, code, fiction, technical); the target is sample_data/target.
Rank agreement: Spearman correlation of the two packages' log weights over the same
documents (the features agree token for token; the bucket hash differs: sha256 vs a
polynomial hash, so collisions differ). Memory: peak RSS at two corpus sizes.

    .venv/bin/python benchmarks/bench_dsir.py [--docs 20000 80000] [--frac 0.1]
"""

from __future__ import annotations

import os

from _common import CORPUS, ROOT, machine_info, read_jsonl  # first: pins the process to one core

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

TARGET = ROOT / "sample_data" / "target" / "target.jsonl"
REF_PY = ROOT / "benchmarks" / ".venv" / "bin" / "python"
BUCKETS, MIN_LEN = 10_000, 100


def make_pool(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    texts = {}
    for f in sorted(CORPUS.iterdir()):
        for r in read_jsonl(f):
            texts.setdefault(r.get("domain", f.name.split(".")[0]), []).append(r["text"])
    joined = {d: " ".join(ts) for d, ts in texts.items()}
    domains = sorted(joined)
    with open(path, "w") as f:
        for i in range(n):
            d = domains[rng.randrange(len(domains))]
            s = joined[d]
            start = s.find(" ", rng.randrange(max(1, len(s) - 2100))) + 1
            f.write(json.dumps({"id": f"d{i:08d}", "text": s[start:start + 2000], "domain": d}) + "\n")


def peak_rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker_reference(pool: str, k: int, work: str) -> dict:
    from data_selection import HashedNgramDSIR

    t0 = time.perf_counter()
    d = HashedNgramDSIR([pool], [str(TARGET)], cache_dir=os.path.join(work, "cache"), num_proc=1,
                        num_buckets=BUCKETS, ngrams=2, min_example_length=MIN_LEN)
    d.fit_importance_estimator(num_tokens_to_fit="all")
    t1 = time.perf_counter()
    d.compute_importance_weights()
    t2 = time.perf_counter()
    weights = np.load(os.path.join(work, "cache", "log_importance_weights", "0.npy"))
    np.save(os.path.join(work, "ref_weights.npy"), weights)
    d.resample(out_dir=os.path.join(work, "ref_out"), num_to_sample=k)
    t3 = time.perf_counter()
    return {"fit_s": t1 - t0, "weights_s": t2 - t1, "resample_s": t3 - t2, "total_s": t3 - t0,
            "peak_rss_mb": peak_rss_mb()}


def worker_datacurate(pool: str, k: int, work: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datacurate.configs.pipeline import InputConfig
    from datacurate.formats.io import plan_reads, read_task, read_texts, write_atomic
    from datacurate.stages import dsir as ds

    c = ds.DsirConfig(target=ds.DsirTargetConfig(path=[str(TARGET)]), num_to_sample=k, min_length=MIN_LEN)
    inp = InputConfig(path=[pool], batch_rows=2048)
    tasks = plan_reads(inp)

    def batches():
        for t in tasks:
            yield from read_task(t, inp)

    t0 = time.perf_counter()
    tgt = sum(ds.wp.features(t, BUCKETS).counts(BUCKETS) for t in read_texts(ds.target_input(c.target)))
    raw, n_batches = np.zeros(BUCKETS, np.int64), 0
    os.makedirs(os.path.join(work, "f"), exist_ok=True)
    for i, b in enumerate(batches()):  # featurised once: the features are saved for the weights pass
        u = ds.units_of(b, None)
        f = ds.featurize(c, u)
        raw += f.counts(BUCKETS)
        ds._save_features(f, u, os.path.join(work, "f", f"{i:06d}.npz"))
        n_batches += 1
    lr = ds.log_ratio(tgt, raw, c.laplace)
    t1 = time.perf_counter()
    cand, logws = None, []
    for i in range(n_batches):
        f, ords, chunk = ds._load_features(os.path.join(work, "f", f"{i:06d}.npz"), c.ngrams)
        logw = f.per_doc(lr)
        keys = ds.sample_keys(c, logw, f.n_tokens >= MIN_LEN, ords, chunk)
        write_atomic(pa.table({"logw": logw, "key": keys}), os.path.join(work, "w", f"{i:06d}.parquet"))
        top = ds.top_k(keys, ords, chunk, k)
        new = (keys[top], ords[top], chunk[top])
        cand = new if cand is None else tuple(np.concatenate([a, b2]) for a, b2 in zip(cand, new))
        keep = ds.top_k(*cand, k)  # running global top-k: at most 2k candidates held
        cand = tuple(a[keep] for a in cand)
        logws.append(logw)
    thr = (cand[0][-1], cand[1][-1], cand[2][-1])
    t2 = time.perf_counter()
    n_sel = 0
    for i, b in enumerate(batches()):
        u = ds.units_of(b, None)
        keys = pq.read_table(os.path.join(work, "w", f"{i:06d}.parquet"))["key"].to_numpy()
        sel = ds.selected(keys, u.ords, u.chunk, thr)
        n_sel += int(sel.sum())
        write_atomic(b.filter(pa.array(sel)).drop_columns(["_ord"]), os.path.join(work, "dc_out", f"{i:06d}.parquet"))
    t3 = time.perf_counter()
    np.save(os.path.join(work, "dc_weights.npy"), np.concatenate(logws))
    assert n_sel == k
    return {"fit_s": t1 - t0, "weights_s": t2 - t1, "resample_s": t3 - t2, "total_s": t3 - t0,
            "peak_rss_mb": peak_rss_mb()}


def engine_run(pool: str, k: int, work: str) -> dict:
    cfg = os.path.join(work, "p.yaml")
    with open(cfg, "w") as f:
        json.dump({"input": {"path": pool}, "output": os.path.join(work, "engine"), "ray": {"num_cpus": 1},
                   "stages": [{"dsir": {"target": {"path": str(TARGET)}, "num_to_sample": k,
                                        "min_length": MIN_LEN}}]}, f)
    t0 = time.perf_counter()
    res = subprocess.run([str(Path(sys.executable).parent / "datacurate"), "run", cfg], capture_output=True, text=True,
                         env=dict(os.environ, RAY_AUTH_MODE="disabled", PYTHONPATH=str(ROOT)))
    assert res.returncode == 0, res.stderr[-3000:]
    stats = json.load(open(os.path.join(work, "engine", "stats.json")))
    return {"wall_s": time.perf_counter() - t0, "dsir_phase_s": stats["stages"]["dsir"]["seconds"],
            "selected": stats["stages"]["dsir"]["kept"]}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def run_worker(python: str, name: str, pool: str, k: int, work: str) -> dict:
    res = subprocess.run([python, __file__, "--worker", name, pool, str(k), work], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and line, res.stdout[-2000:] + res.stderr[-4000:]
    return json.loads(line[0][7:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, nargs="+", default=[20_000, 80_000])
    ap.add_argument("--frac", type=float, default=0.1)
    ap.add_argument("--engine", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    out = {"machine": machine_info(["data-selection", "numpy", "pyarrow", "ray"]), "runs": []}
    for n in args.docs:
        with tempfile.TemporaryDirectory(prefix="bench-dsir-") as work:
            pool = os.path.join(work, "pool.jsonl")
            make_pool(Path(pool), n)
            k = int(n * args.frac)
            ref = run_worker(str(REF_PY), "reference", pool, k, work)
            dc = run_worker(sys.executable, "datacurate", pool, k, work)
            rho = spearman(np.load(os.path.join(work, "ref_weights.npy")), np.load(os.path.join(work, "dc_weights.npy")))
            run = {"docs": n, "mb": round(os.path.getsize(pool) / 2**20, 1), "k": k, "reference": ref,
                   "datacurate": dc, "speedup": round(ref["total_s"] / dc["total_s"], 2), "spearman": round(rho, 4)}
            if args.engine:
                run["datacurate_engine_1cpu"] = engine_run(pool, k, work)
            out["runs"].append(run)
            print(json.dumps(run), flush=True)
    dest = ROOT / "benchmarks" / "results" / "dsir.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        name, pool, k, work = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        fn = worker_reference if name == "reference" else worker_datacurate
        print("RESULT " + json.dumps(fn(pool, k, work)), flush=True)
    else:
        main()
