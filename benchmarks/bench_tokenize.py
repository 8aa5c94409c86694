"""Side-by-side benchmark: tokenize + write token shards, datacurate vs datatrove, one core.

Same documents (every document of ``sample_data/corpus``: English prose, code, 13-language
man pages, chat, web pages), same ``tokenizer.json`` (the shipped byte-level BPE,
8,192 tokens), EOS after every document, in one process pinned to one core
(``sched_setaffinity``; ``RAYON_NUM_THREADS=1`` so the Rust encoder runs one thread).

* **datacurate**: what the engine runs per work part, without Ray: ``Tokenize`` on Arrow
  batches of ``--batch-size`` documents (``encode_batch_fast`` + vectorised EOS), the
  part written to Parquet (zstd; text and the internal ``_tokens`` column, as the
  engine's work part) and read back as the next segment would, ``count_part`` (phase 1) and ``write_part`` (phase 3:
  dataset decomposition into 2^6..2^11 buckets, natural mixture, ``.bin`` pieces), then
  the manifest.
* **datatrove**: ``DocumentTokenizer(tokenizer_name_or_path=<same file>,
  eos_token="<|endoftext|>", shuffle_documents=False)`` — ``encode_batch`` with an EOS
  post-processor, one ``.ds`` token file + ``.index`` of document ends. Its default
  (``shuffle_documents=True``) copies the file once more in shuffled order; that
  second pass is left out, in its favour.
* The share of datacurate's CPU time spent inside ``Tokenize`` (the Rust encoder plus
  the EOS pass) is measured within its own runs, so it does not move with machine load.

Tokens/s per core = tokens written (EOS included; datacurate: tokens before the
decomposition, i.e. the same count as datatrove's) / CPU seconds of the process
(``time.process_time``: on a shared machine, time other processes take on the core is
not counted), fastest of ``--repeats`` interleaved runs (the order rotates each round); the median and wall-clock
figures are reported beside it. The token counts of both systems are checked equal.

    PYTHONPATH=. benchmarks/.venv/bin/python benchmarks/bench_tokenize.py
"""

from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from _common import (  # noqa: E402  first: pins the process to one core
    CORPUS, ROOT, bench_parser, loadavg, machine_info, read_jsonl, replace_block,
)

import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from datacurate.formats import shards  # noqa: E402
from datacurate.engine.stats import merge  # noqa: E402
from datacurate.stages import mixture  # noqa: E402
from datacurate.stages.decompose import DecomposeConfig, count_part, finish, write_part  # noqa: E402
from datacurate.stages.tokenize import Tokenize  # noqa: E402
from datacurate.formats.tokenizer import DEFAULT_TOKENIZER, EOS_TOKEN  # noqa: E402

README_BEGIN, README_END = "<!-- tokenize:begin -->", "<!-- tokenize:end -->"


def corpus() -> list[dict]:
    docs = []
    for path in sorted(CORPUS.iterdir()):
        for i, rec in enumerate(read_jsonl(path)):
            if isinstance(rec.get("text"), str) and rec["text"]:
                docs.append({"id": str(rec.get("id") or f"{path.name}:{i}"), "text": rec["text"],
                             "domain": str(rec.get("domain") or "unknown")})
    return docs


def run_datacurate(docs: list[dict], batch: int, work: Path, split: dict | None = None) -> int:
    """``split`` (if given) gets the CPU seconds spent in ``Tokenize`` and in the rest."""
    c_start = time.process_time()
    c_tok = 0.0
    stage = Tokenize(batch_size=batch)
    cfg = DecomposeConfig()
    parts, counts = [], {}
    for s in range(0, len(docs), batch):
        chunk = docs[s:s + batch]
        table = pa.table({"id": [d["id"] for d in chunk], "text": pa.array([d["text"] for d in chunk], pa.large_string()),
                          "domain": [d["domain"] for d in chunk], "_ord": pa.array(np.arange(s, s + len(chunk)), pa.int64())})
        c0 = time.process_time()
        out = stage(table).drop_columns(["reject_reason"])  # the engine's work part keeps the text too
        c_tok += time.process_time() - c0
        path = work / f"part-{s:09d}.parquet"
        pq.write_table(out, path, compression="zstd")
        merge(counts, count_part(pq.read_table(path, columns=["_ord", "domain", "n_tokens"]), cfg)[0])
        parts.append(path)
    mix = mixture.plan({d: c["tokens_in_buckets"] for d, c in counts.items()}, None, None)
    rates = {d: m["rate"] for d, m in mix["domains"].items()}
    ids = {d: i for i, d in enumerate(sorted(counts))}
    out_dir = work / "shards"
    shards.prepare_dir(str(out_dir), overwrite=True)
    pieces, written = [], {}
    for path in parts:
        p, w = write_part(pq.read_table(path, columns=["id", "domain", "n_tokens", "_tokens"]), cfg,
                          path.stem.removeprefix("part-"), str(out_dir), rates, ids, stage.info.dtype)
        pieces += p
        merge(written, w)
    finish(str(out_dir), cfg, stage.info, counts, mix, "natural", pieces, written)
    if split is not None:
        split.setdefault("tokenize", []).append(c_tok)
        split.setdefault("total", []).append(time.process_time() - c_start)
    return sum(c["tokens_in"] for c in counts.values())


def run_datatrove(docs: list[dict], batch: int, work: Path) -> int:
    from datatrove.data import Document
    from datatrove.pipeline.tokens import DocumentTokenizer

    step = DocumentTokenizer(output_folder=str(work / "dt"), tokenizer_name_or_path=str(DEFAULT_TOKENIZER),
                             eos_token=EOS_TOKEN, batch_size=batch, shuffle_documents=False)
    step.run((Document(text=d["text"], id=d["id"], metadata={"domain": d["domain"]}) for d in docs), rank=0)
    return sum(os.path.getsize(p) for p in (work / "dt").glob("*.ds")) // 2


def markdown(res: dict) -> str:
    c, m = res["config"], res["machine"]
    rows = res["results"]
    dt = rows["datatrove DocumentTokenizer"]["tokens_per_s"]
    lines = [README_BEGIN, f"Command: `{c['command']}`  ",
             f"Machine: {m['cpu_model']}, nproc {m['nproc']}, pinned to core {m['pinned_to']} (load average "
             f"{res['loadavg_start'][0]} at start, {res['loadavg_end'][0]} at end); "
             + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + "  ",
             f"Text: {c['documents']:,} documents, {c['mb']:.1f} MB, {c['tokens']:,} tokens (EOS included); "
             f"CPU time, best of {c['repeats']} interleaved runs; batches of {c['batch_size']}.", "",
             "| system | tokens/s/core (CPU, best) | MB/s/core | tokens/s/core (CPU, median) | tokens/s (wall, best) "
             "| ratio (vs datatrove) |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['tokens_per_s']:,.0f} | {r['mb_per_s']:.2f} | {r['median_tokens_per_s']:,.0f} | "
                     f"{r['wall_tokens_per_s']:,.0f} | {'**%.2fx**' % (r['tokens_per_s'] / dt)} |")
    lines += ["", f"Share of datacurate's CPU time inside `Tokenize` (encode + EOS), over all its runs: "
                  f"{100 * res['datacurate_tokenize_share']:.1f} %; the rest is the work-part Parquet round trip, "
                  f"decomposition and shard writing.", README_END]
    return "\n".join(lines)


def main() -> None:
    args = bench_parser(__doc__, "tokenize.json", repeats=6).parse_args()
    import datatrove.pipeline.tokens  # noqa: F401 - imported before its log handler is removed
    from loguru import logger

    logger.remove()  # datatrove logs through loguru
    load_start = loadavg()
    docs = corpus()
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    split: dict = {}
    systems = {"datacurate tokenize + decompose + write": lambda w: run_datacurate(docs, args.batch_size, w, split),
               "datatrove DocumentTokenizer": lambda w: run_datatrove(docs, args.batch_size, w)}
    times: dict = {k: [] for k in systems}
    walls: dict = {k: [] for k in systems}
    tokens: dict = {}
    names = list(systems)
    for r in range(args.repeats):
        # rotate the order: a process that has encoded more runs slower, so no system
        # may always come last
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = systems[name]
            work = Path(tempfile.mkdtemp(prefix="bench-tok-"))
            t0, c0 = time.perf_counter(), time.process_time()
            tokens[name] = fn(work)
            times[name].append(time.process_time() - c0)
            walls[name].append(time.perf_counter() - t0)
            shutil.rmtree(work)
    assert len(set(tokens.values())) == 1, f"token counts differ: {tokens}"
    n = next(iter(tokens.values()))
    res = {"config": {"command": "PYTHONPATH=. benchmarks/.venv/bin/python benchmarks/bench_tokenize.py",
                      "repeats": args.repeats, "batch_size": args.batch_size, "documents": len(docs), "mb": mb,
                      "tokens": n, "tokenizer": str(DEFAULT_TOKENIZER.relative_to(ROOT))},
           "machine": machine_info(["datatrove", "tokenizers", "pyarrow", "numpy"]),
           "loadavg_start": load_start, "loadavg_end": loadavg(),
           "results": {k: {"cpu_seconds": min(v), "cpu_runs": v, "wall_runs": walls[k], "tokens_per_s": n / min(v),
                           "mb_per_s": mb / min(v), "median_tokens_per_s": n / statistics.median(v),
                           "wall_tokens_per_s": n / min(walls[k])} for k, v in times.items()},
           "datacurate_tokenize_share": sum(split["tokenize"]) / sum(split["total"])}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    replace_block(Path(args.readme), README_BEGIN, README_END, markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
