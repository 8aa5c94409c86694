"""Per-stage cost on one core: each map stage of the sample pipeline over the same batches.

Takes the first ``--docs`` documents of a ``bench_pipeline_scale.py`` input (or any JSONL
with ``id`` and ``text``), runs the map stages of ``pipelines/sample.yaml`` in order
(langid -> heuristics -> quality -> toxicity -> tokenize) on Arrow batches of
``--batch-size``, each stage on the rows the earlier ones kept (as the engine does), and
prints the wall and CPU seconds each stage took (best of ``--repeats``). ``--profile STAGE`` prints the
top of a cProfile of that stage. ``--save DIR`` writes every stage's output columns
(reasons and annotations, no text) to DIR/<stage>.parquet; ``--compare DIR`` checks the
current code's outputs against such a saved set column by column, to show that an
optimisation left the outputs unchanged.

    .venv/bin/python benchmarks/profile_stages.py --input benchmarks/.cache/pipeline_docs_100000_s0.jsonl --docs 5000
"""

from __future__ import annotations

import _common  # noqa: F401 - one core, one thread (before NumPy / Arrow / fastText start)

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from _common import ROOT  # noqa: E402

MAP_STAGES = ["langid", "heuristics", "quality", "toxicity", "tokenize"]


def load(path: Path, n: int) -> pa.Table:
    ids, texts = [], []
    with open(path, "rb") as f:
        for line in f:
            if len(ids) >= n:
                break
            rec = orjson.loads(line)
            ids.append(rec["id"])
            texts.append(rec["text"])
    return pa.table({"id": pa.array(ids, pa.string()), "text": pa.array(texts, pa.large_string())})


def build(name: str):
    from datacurate.registry import STAGES

    raw = yaml.safe_load((ROOT / "pipelines" / "sample.yaml").read_text())
    params = next(p for e in raw["stages"] for k, p in e.items() if k == name) or {}
    cls = STAGES[name]
    return cls(**params)


def batches(table: pa.Table, size: int) -> list[pa.Table]:
    return [table.slice(s, size) for s in range(0, table.num_rows, size)]


def run_stage(stage, parts: list[pa.Table]) -> list[pa.Table]:
    return [stage(p) for p in parts]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stages", default=",".join(MAP_STAGES))
    ap.add_argument("--profile", default=None, help="cProfile this stage (one more run)")
    ap.add_argument("--save", default=None)
    ap.add_argument("--compare", default=None)
    args = ap.parse_args()

    table = load(Path(args.input), args.docs)
    chars = sum(len(t) for t in table.column("text").to_pylist())
    print(f"{table.num_rows} documents, {chars / table.num_rows:,.0f} chars on average, batches of {args.batch_size}")
    parts = batches(table, args.batch_size)
    failures = 0
    for name in args.stages.split(","):
        stage = build(name)
        run_stage(stage, parts[:1])  # warm-up (lazy tables)
        best = best_cpu = float("inf")
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            outs = run_stage(stage, parts)
            best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
        n = sum(p.num_rows for p in parts)
        # CPU seconds of this (one-thread) process: less moved than wall time by other load on the machine
        print(f"{name:<11} {best:7.3f} s wall {best_cpu:7.3f} s cpu  {n / best_cpu:9,.0f} docs/cpu-s  ({n} docs)",
              flush=True)
        if args.profile == name:
            prof = cProfile.Profile()
            prof.enable()
            run_stage(stage, parts)
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
            print(s.getvalue())
        out = pa.concat_tables(outs)
        extra = [c for c in out.column_names if c != "text"]  # reasons, annotations, _tokens
        cols = out.select(extra)
        if name == "heuristics":
            cols = cols.append_column("text_out", out.column("text"))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            pq.write_table(cols, Path(args.save) / f"{name}.parquet")
        if args.compare:
            ref = pq.read_table(Path(args.compare) / f"{name}.parquet")
            bad = [c for c in ref.column_names if c not in cols.column_names
                   or not ref.column(c).combine_chunks().equals(cols.column(c).combine_chunks().cast(ref.schema.field(c).type))]
            print(f"  compare with {args.compare}: {'identical' if not bad else 'DIFFERENT in ' + ', '.join(bad)}")
            failures += bool(bad)
        # the next stage sees the kept rows with this stage's columns, as in the engine
        kept = out.filter(pc.is_null(out.column("reject_reason"))).drop_columns(["reject_reason"])
        parts = batches(kept, args.batch_size)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
