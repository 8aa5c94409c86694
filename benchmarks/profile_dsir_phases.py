"""DSIR's distributed phases (fit -> weigh -> decide) in one process on one core, per phase.

Writes ``--parts`` part files of ``--docs`` documents each from a ``bench_pipeline_scale.py``
input (with ``_ord`` and ``domain``, as the engine's parts), then runs the phase functions
of ``datacurate.stages.dsir`` over them as the engine's tasks would, with the sample
pipeline's DSIR settings (128-word chunks, min_length 64, half the pieces), and prints
the CPU seconds of each phase. Run it against two checkouts (``PYTHONPATH``) to compare.

    .venv/bin/python benchmarks/profile_dsir_phases.py --input benchmarks/.cache/pipeline_docs_100000_s0.jsonl
"""

from __future__ import annotations

import _common  # noqa: F401 - one core, one thread

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from _common import ROOT  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--parts", type=int, default=3)
    ap.add_argument("--docs", type=int, default=5000, help="documents per part")
    args = ap.parse_args()

    from datacurate.stages import dsir as ds

    work = Path(tempfile.mkdtemp(prefix="dc-dsir-phases-"))
    texts = []
    with open(args.input, "rb") as f:
        for line in f:
            if len(texts) >= args.parts * args.docs:
                break
            texts.append(orjson.loads(line)["text"])
    paths = []
    for i in range(args.parts):
        chunk = texts[i * args.docs:(i + 1) * args.docs]
        ords = np.arange(i * args.docs, i * args.docs + len(chunk), dtype=np.int64)
        p = str(work / f"part-{i:06d}.parquet")
        pq.write_table(pa.table({"_ord": ords, "text": pa.array(chunk, pa.large_string()),
                                 "domain": pa.array(["x"] * len(chunk))}), p)
        paths.append(p)
    c = ds.Dsir(target={"path": [str(ROOT / "sample_data" / "target")]}, chunk_words=128, min_length=64,
                num_to_sample=0.5).config
    d, out = work / "scratch", work / "decisions"
    d.mkdir()
    out.mkdir()
    cpu = {}
    t = time.process_time()
    fit = [ds._phase_fit(p, c, str(d)) for p in paths]
    cpu["fit"] = time.process_time() - t
    tgt = ds.Dsir(c).target_counts_from_files()
    raw = sum(np.load(r["raw"]) for r in fit)
    lr_path = ds._save(ds.log_ratio(tgt, raw, c.laplace), str(d / "lr.npy"))
    eligible = sum(r["eligible"] for r in fit)
    k = ds.how_many(c.num_to_sample, eligible)
    t = time.process_time()
    cands = [ds._phase_weigh(p, c, lr_path, k, str(d)) for p in paths]
    cpu["weigh"] = time.process_time() - t
    cand = pa.concat_tables([pq.read_table(r["candidates"]) for r in cands])
    order = np.lexsort((cand["chunk"].to_numpy(), cand["ord"].to_numpy(), -cand["key"].to_numpy()))[k - 1]
    thr = [cand["key"][order].as_py(), cand["ord"][order].as_py(), cand["chunk"][order].as_py()]
    t = time.process_time()
    dec = [ds._phase_decide(p, c, thr, k / eligible, str(d), str(out), "zstd") for p in paths]
    cpu["decide"] = time.process_time() - t
    n = args.parts * args.docs
    print(" ".join(f"{name} {s:.2f} s" for name, s in cpu.items()),
          f"| total {sum(cpu.values()):.2f} cpu-s for {n} docs ({n / sum(cpu.values()):,.0f} docs/cpu-s),",
          f"selected {sum(r['n'] for r in dec)}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
