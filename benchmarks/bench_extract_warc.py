"""WARC in, text out: datatrove's front end (``WarcReader`` -> ``Trafilatura``, as in its
FineWeb example) against our ``extract`` stage, on the same WARC, one core, one run.

The WARC is built here from the benchmark pages (``eval_extract.py``'s; ``--repeat``
copies of each), as Common Crawl writes them: ``response`` records with the HTTP header
(``Content-Type: text/html; charset=utf-8``) and ``WARC-Identified-Payload-Type``.
datatrove 0.10 pins trafilatura 1.11, which our dependencies (trafilatura 2.3) exclude, so
it runs from its own virtual environment (``--dt-python``, default ``/tmp/dtvenv``:
``python3 -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install "datatrove[io,processing]"``).
Our side reads the WARC with our reader (``datacurate.formats.io``: FastWARC, the HTTP status and
charset read, 256-row Arrow batches) and runs the stage on those batches exactly as a run
does (child process, per-page time limit). Our side also runs under datatrove's Python
(trafilatura 1.11; it needs ``fastwarc`` and ``resiliparse`` there too: ``/tmp/dtvenv/bin/pip
install fastwarc resiliparse``), so one row compares the front ends with the very same
engine. Each side is a separate process pinned to one core; seconds are CPU
seconds of the process and its extraction child (wall seconds beside them).

    python benchmarks/bench_extract_warc.py [--repeat 3] [--pages DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDES = {  # name -> (which python, what runs)
    "datatrove Trafilatura (FineWeb: favour_precision, deduplicate=True)": ("dt", "dt:dedup"),
    "datatrove Trafilatura (favour_precision, deduplicate=False)": ("dt", "dt:nodedup"),
    "ours extract engine=trafilatura, trafilatura 1.11 (datatrove's venv)": ("dt", "ours:trafilatura"),
    "ours extract engine=trafilatura (the default), trafilatura 2.3": ("main", "ours:trafilatura"),
    "ours extract engine=resiliparse": ("main", "ours:resiliparse"),
}


def build_warc(pages: dict, repeat: int, path: Path) -> int:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    n = 0
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for r in range(repeat):
            for k, (html, _) in pages.items():
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                rec = w.create_warc_record(f"https://bench.example/{r}/{k}", "response",
                                           payload=io.BytesIO(html.encode("utf-8")), http_headers=http,
                                           warc_headers_dict={"WARC-Identified-Payload-Type": "text/html"})
                w.write_record(rec)
                n += 1
    return n


def run_datatrove(warc: Path, dedup: bool) -> int:
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.readers import WarcReader

    reader = WarcReader(str(warc.parent), glob_pattern=warc.name)
    ext = Trafilatura(favour_precision=True, deduplicate=dedup, timeout=5)
    return sum(1 for _ in ext.run(reader.run()))


def run_ours(warc: Path, engine: str) -> int:
    """Our front end as a run has it: the WARC reader (FastWARC, HTTP status and charset
    read, gzip-member read tasks) yields Arrow batches, the extract stage annotates them."""
    sys.path.insert(0, str(ROOT))
    from datacurate.configs.input import InputConfig
    from datacurate.formats.io import plan_reads, read_task
    from datacurate.stages.extract import Extract

    stage = Extract(engine=engine, timeout=5.0)
    cfg = InputConfig(path=[str(warc)], batch_rows=256)
    kept = 0
    for task in plan_reads(cfg):
        for batch in read_task(task.to_dict(), cfg):
            out = stage(batch)
            kept += int(out.column("reject_reason").null_count)
    stage.sandbox.close()
    return kept


def side(warc: Path, what: str) -> dict:
    """Run one side in this process (pinned to one core) and time it."""
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    kind, arg = what.split(":")
    t0, c0 = time.perf_counter(), os.times()
    docs = run_datatrove(warc, arg == "dedup") if kind == "dt" else run_ours(warc, arg)
    c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system) + (c1.children_user - c0.children_user) + \
          (c1.children_system - c0.children_system)
    import trafilatura

    return {"docs_out": docs, "wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(cpu, 2),
            "trafilatura": trafilatura.__version__, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=Path, default=ROOT / "benchmarks" / "data" / "article-extraction")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dt-python", default="/tmp/dtvenv/bin/python")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    ap.add_argument("--warc", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extract_warc.json")
    args = ap.parse_args()
    if args.side:
        print(json.dumps(side(args.warc, args.side)))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from eval_extract import load_pages

    pages = load_pages(args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "bench.warc.gz"
        n = build_warc(pages, args.repeat, warc)
        res = {"records": n, "pages": str(args.pages), "repeat": args.repeat, "loadavg": open("/proc/loadavg").read().split()[:3],
               "sides": {}}
        for name, (py, what) in SIDES.items():
            exe = args.dt_python if py == "dt" else sys.executable
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            p = subprocess.run([exe, __file__, "--side", what, "--warc", str(warc)], capture_output=True, text=True, env=env)
            if p.returncode:
                res["sides"][name] = {"error": p.stderr.strip().splitlines()[-1:]}
            else:
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["pages_per_cpu_s"] = round(n / r["cpu_s"], 1)
                res["sides"][name] = r
            print(name, res["sides"][name], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
