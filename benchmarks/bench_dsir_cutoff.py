"""DSIR's cut-off: what reaches the driver, old way and new, at 100k / 1M / 3M units (issue 39, item 4).

    python benchmarks/bench_dsir_cutoff.py [--units 100000 1000000 3000000] [--parts 64]

The old cut-off sorted every part's top-k candidates in a distributed sort and streamed
the first k rows past the driver (k = half the units in the sample pipeline); the new one
(:func:`datacurate.text.topk.kth_unit`) adds the parts' 65,536-bin histograms and fetches
only the units of the k-th unit's bin once it holds <= 131,072 of them. Here the parts are
NumPy arrays in this process (Gumbel keys of the shape DSIR makes: a normal log weight plus
hashed Gumbel noise; 10 % of units ineligible; two chunks per document), so the figures are
the algorithm's, without Ray: rounds, rows handed to the driver, the driver's largest
holding (bytes of the summed histogram, the one being added, and the fetched rows), and
``tracemalloc``'s peak over the driver's own steps (the parts' work is not traced: the
tracer is stopped around it, so objects the driver holds across it are in the analytic
figure, not the traced one). Both ways give the same k-th unit (checked). Writes
``benchmarks/results/dsir_cutoff.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datacurate.text import topk  # noqa: E402


def parts_of(n: int, parts: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    ords = np.repeat(np.arange((n + 1) // 2, dtype=np.int64), 2)[:n]
    chunks = (np.arange(n) % 2).astype(np.int32)
    keys = rng.normal(-30, 8, n) + topk.gumbel(seed, ords, chunks)
    keys[rng.random(n) < 0.1] = -np.inf
    cuts = np.linspace(0, n, parts + 1).astype(int)
    return [(keys[a:b], ords[a:b], chunks[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def run(n: int, n_parts: int) -> dict:
    parts = parts_of(n, n_parts)
    words = [topk.rank_words(k[np.isfinite(k)], o[np.isfinite(k)], c[np.isfinite(k)]) for k, o, c in parts]
    eligible = sum(len(w) for w in words)
    k = eligible // 2
    # the parts' work, done before the driver's steps are traced: every histogram a round may ask for
    first = [topk.histogram(w, []) for w in words]
    peaks: list = []  # tracemalloc restarts when a part's work is done: the largest of its stretches
    seen = {"rounds": 1, "fetched": 0, "hist_bytes": 2 * topk.BINS * 8}

    def next_counts(prefix):
        seen["rounds"] += 1
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()  # a part's work, not the driver's
        per_part = [topk.histogram(w, prefix) for w in words]
        tracemalloc.start()
        total = np.zeros(topk.BINS, np.int64)
        for h in per_part:
            total += h
        return total

    def fetch(prefix):
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        rows = []
        for (kk, o, c), w in zip(parts, words):
            ok = np.isfinite(kk)
            m = topk.matching(w, prefix)
            rows.append((kk[ok][m], o[ok][m], c[ok][m]))
        tracemalloc.start()
        out = tuple(np.concatenate(x) for x in zip(*rows))
        seen["fetched"] = len(out[0])
        return out

    t0 = time.perf_counter()
    tracemalloc.start()
    total = np.zeros(topk.BINS, np.int64)
    for h in first:
        total += h
    got = topk.kth_unit(k, total, next_counts, fetch)
    peak = max([tracemalloc.get_traced_memory()[1], *peaks])
    tracemalloc.stop()
    wall = time.perf_counter() - t0
    # the old way's answer (every part's top-k, sorted): the rows it streamed past the driver
    kk = np.concatenate([p[0] for p in parts])
    oo = np.concatenate([p[1] for p in parts])
    cc = np.concatenate([p[2] for p in parts])
    ok = np.isfinite(kk)
    i = np.flatnonzero(ok)[topk.order(kk[ok], oo[ok], cc[ok])[k - 1]]
    assert got == (float(kk[i]), int(oo[i]), int(cc[i])), (got, kk[i], oo[i], cc[i])
    return {"units": n, "eligible": eligible, "k": k, "parts": n_parts, "rounds": seen["rounds"],
            "rows_to_driver": seen["fetched"], "old_rows_to_driver": k,
            "driver_bytes_held": seen["hist_bytes"] + 24 * seen["fetched"],
            "driver_tracemalloc_peak_mb": round(peak / 2**20, 2), "driver_seconds": round(wall, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--units", nargs="+", type=int, default=[100_000, 1_000_000, 3_000_000])
    ap.add_argument("--parts", type=int, default=64)
    a = ap.parse_args()
    rows = [run(n, a.parts) for n in a.units]
    for r in rows:
        print(json.dumps(r))
    peaks = [r["driver_tracemalloc_peak_mb"] for r in rows]
    res = {"runs": rows, "driver_peak_ratio_max_over_min": round(max(peaks) / min(peaks), 3),
           "command": "python benchmarks/bench_dsir_cutoff.py " + " ".join(sys.argv[1:])}
    (ROOT / "benchmarks" / "results" / "dsir_cutoff.json").write_text(json.dumps(res, indent=1) + "\n")
    print("driver peak max/min:", res["driver_peak_ratio_max_over_min"])


if __name__ == "__main__":
    main()
