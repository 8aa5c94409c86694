"""What a crawl costs: the web recipe on make_crawl.py's pages, per stage, and side by side
with datatrove's FineWeb-shaped pipeline from raw WARC (issue 39, item 5).

    python benchmarks/bench_crawl.py 2000 6000                 # N pages each (any number of N)
    python benchmarks/bench_crawl.py 100000 300000 --tasks 16  # the issue's sizes, on a bigger machine

1. **The recipe.** For every N and engine (``--engines``, default trafilatura and
   resiliparse), ``pipelines/commoncrawl.yaml`` over ``make_crawl.py N`` (cached under
   ``--cache``; ``--per-file`` captures per WARC file, so that both tools get several
   files to spread over their tasks) with ``ray.num_cpus = --tasks``. Measured: CPU
   seconds of the whole process tree (driver, Ray and its workers: a cgroup-v1 cpuacct
   group, as ENVIRONMENT.md describes; ``getrusage`` of the children where that is not
   writable), split over the stages by their task-seconds in stats.json; bytes under the
   run's scratch (``OUT/_work``: segment parts, decisions, stage scratch; a sampler keeps
   each file's largest size) and under the output at the end; files written (what object
   storage would bill as PUTs); peak PSS of the tree (the node) and of its largest process.
   From the per-page figures at the largest N, one Common Crawl snapshot (3 billion pages)
   is projected in core-hours, scratch bytes and requests; the per-page growth from the
   smallest to the largest N says whether that projection is linear.
2. **Side by side with datatrove, from raw WARC, same pages, same task count.** datatrove
   0.10 (its own venv, ``--dt-python``: ``python3 -m venv /work/venv-datatrove &&
   /work/venv-datatrove/bin/pip install 'datatrove[io,processing]' spacy lxml_html_clean
   fasttext-numpy2-wheel``; ``[processing]`` alone lacks WarcReader's and JsonlWriter's
   dependencies, and trafilatura 1.11 needs ``lxml_html_clean`` with lxml 6):
   ``WarcReader`` -> ``URLFilter`` (our blocklist's domains and URLs, not its integrated
   lists) -> ``Trafilatura`` (our settings: favour_precision, deduplicate off, 5 s timeout)
   -> ``JsonlWriter``; then ``LanguageFilter(en, 0.65)`` (fastText lid.176 loaded from our
   ``datacurate/models/lid.176.ftz`` by a small subclass of its ``FT176LID``: it cannot
   download here) -> ``GopherRepetitionFilter`` -> ``GopherQualityFilter`` ->
   ``C4QualityFilter(filter_no_terminal_punct=False)`` -> ``FineWebQualityFilter`` ->
   the four MinHash steps (FineWeb's 14 buckets x 8 hashes, 5-grams) -> ``JsonlWriter``,
   each step on ``LocalPipelineExecutor(tasks, workers=--tasks)``. Ours: the same stages
   of ``commoncrawl.yaml`` (url_filter, the URL dedup that precedes extraction in our
   recipe, extract, langid, heuristics, near_dedup), also as two runs: up to extraction,
   then the rest from its kept rows. Both tools' two halves are timed on their own, so
   "after extraction" is measured, not apportioned.

Writes ``benchmarks/results/crawl_<N1>_<N2>....json`` and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LID = ROOT / "datacurate" / "models" / "lid.176.ftz"
BLOCKLIST = ROOT / "sample_data" / "blocklist"
SNAPSHOT_PAGES = 3_000_000_000
FRONT = ("url_filter", "exact_dedup", "extract")  # our stages up to extraction (URL dedup: key url)
SAME_AS_DATATROVE = FRONT + ("langid", "heuristics", "near_dedup")


# ----------------------------------------------------------------------------- datatrove side
# (runs under datatrove's venv: ``--dt-phase``; only the standard library and datatrove)
def _blocklist() -> tuple[list, list]:
    domains, urls = [], []
    for cat in sorted(p for p in BLOCKLIST.iterdir() if p.is_dir()):
        for name, into in (("domains", domains), ("urls", urls)):
            f = cat / name
            if f.exists():
                into += [w for w in f.read_text().split() if not w.startswith("#")]
    return domains, urls


def datatrove_phase(phase: str, warcs: str, out: str, tasks: int) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    def run(pipeline, name, n_tasks=tasks):
        LocalPipelineExecutor(pipeline=pipeline, tasks=n_tasks, workers=tasks, logging_dir=f"{out}/logs/{name}",
                              skip_completed=False).run()

    if phase == "extract":
        from datatrove.pipeline.extractors import Trafilatura
        from datatrove.pipeline.filters import URLFilter

        domains, urls = _blocklist()
        run([WarcReader(warcs, glob_pattern="*.warc.gz"),
             URLFilter(extra_domains=domains, extra_urls=urls, use_integrated_lists=False),
             Trafilatura(favour_precision=True, deduplicate=False, timeout=5.0),
             JsonlWriter(f"{out}/extracted")], "extract")
        return {}
    from datatrove.pipeline.dedup import MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter)
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.lid import FT176LID

    class LocalFT176(FT176LID):
        """lid.176 from our file: the parent class downloads lid.176.bin, impossible here."""

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(str(LID))
            return self._model

    class LocalLanguageFilter(LanguageFilter):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.model = LocalFT176(self.languages)

    run([JsonlReader(f"{out}/extracted"), LocalLanguageFilter(languages=["en"], language_threshold=0.65),
         GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
         FineWebQualityFilter(), JsonlWriter(f"{out}/filtered")], "filter")
    cfg = MinhashConfig(hash_config=HashConfig(precision=64), num_buckets=14, hashes_per_bucket=8, n_grams=5)
    run([JsonlReader(f"{out}/filtered"), MinhashDedupSignature(output_folder=f"{out}/sigs", config=cfg)], "mh1")
    run([MinhashDedupBuckets(input_folder=f"{out}/sigs", output_folder=f"{out}/buckets", config=cfg)], "mh2",
        cfg.num_buckets)
    run([MinhashDedupCluster(input_folder=f"{out}/buckets", output_folder=f"{out}/remove_ids", config=cfg)], "mh3", 1)
    run([JsonlReader(f"{out}/filtered"), MinhashDedupFilter(input_folder=f"{out}/remove_ids"),
         JsonlWriter(f"{out}/final")], "mh4")
    return {}


def _jsonl_docs(folder: Path) -> int:
    import gzip

    n = 0
    for f in sorted(folder.glob("*.jsonl*")):
        with (gzip.open(f, "rb") if f.suffix == ".gz" else open(f, "rb")) as fh:
            n += sum(1 for line in fh if line.strip())
    return n


def _dt_step_seconds(out: Path) -> dict:
    """Each datatrove step's time (its own stats, summed over tasks) by run name."""
    res = {}
    for run in sorted((out / "logs").iterdir()):
        stats = run / "stats.json"
        if not stats.exists():
            continue
        steps = {}
        for st in json.loads(stats.read_text()):
            t = st.get("time_stats") or {}
            steps[st.get("name", "?")] = round(float(t.get("total", 0.0)), 2)
        res[run.name] = steps
    return res


# ----------------------------------------------------------------------------- measuring
class StartTimeout(RuntimeError):
    """Ray's node did not come up within its fixed 30 s (seen on an overloaded machine)."""


class Measured:
    """A command run in its own cpuacct cgroup (CPU seconds of everything it starts, Ray
    workers included), with a sampler for memory and for the files under ``watch``."""

    def __init__(self, cmd: list, env: dict, watch: Path | None = None, every: float = 0.5):
        self.cmd, self.env, self.watch, self.every = cmd, env, watch, every
        self.peak_pss = self.peak_proc_pss = 0
        self.files: dict[str, int] = {}  # path -> largest size seen

    def run(self) -> dict:
        import psutil

        cg = Path(f"/sys/fs/cgroup/cpuacct/bench_crawl_{os.getpid()}_{time.monotonic_ns()}")
        try:
            cg.mkdir()
        except OSError:
            cg = None
        ru0 = os.times()
        t0 = time.perf_counter()
        pre = (lambda: (cg / "cgroup.procs").write_text(str(os.getpid()))) if cg else None
        proc = subprocess.Popen(self.cmd, env=self.env, preexec_fn=pre, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        stop = threading.Event()
        log: list[bytes] = []
        reader = threading.Thread(target=lambda: log.extend(proc.stdout), daemon=True)
        reader.start()

        def sample():
            top = psutil.Process(proc.pid)
            while not stop.is_set():
                total = 0
                try:
                    for p in [top, *top.children(recursive=True)]:
                        try:
                            pss = p.memory_full_info().pss
                        except psutil.Error:
                            continue
                        total += pss
                        self.peak_proc_pss = max(self.peak_proc_pss, pss)
                except psutil.Error:
                    pass
                self.peak_pss = max(self.peak_pss, total)
                if self.watch is not None and self.watch.exists():
                    for dirpath, _, names in os.walk(self.watch):
                        for n in names:
                            path = os.path.join(dirpath, n)
                            try:
                                size = os.stat(path).st_size
                            except OSError:
                                continue
                            if size > self.files.get(path, -1):
                                self.files[path] = size
                stop.wait(self.every)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rc = proc.wait()
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        reader.join(5)
        if cg is not None:
            for _ in range(60):  # the command's last children may still be exiting
                if not (cg / "cgroup.procs").read_text().split():
                    break
                time.sleep(0.5)
            cpu = int((cg / "cpuacct.usage").read_text()) / 1e9
            try:
                cg.rmdir()
            except OSError:
                pass
            how = "cgroup cpuacct"
        else:
            ru1 = os.times()
            cpu = (ru1.children_user - ru0.children_user) + (ru1.children_system - ru0.children_system)
            how = "getrusage(children)"
        if rc != 0:
            text = b"".join(log[-60:]).decode(errors="replace")
            if "timed out during startup" in text:
                raise StartTimeout(text)
            sys.stderr.write(text)
            raise SystemExit(f"{self.cmd[:4]} ... failed with status {rc}")
        return {"cpu_seconds": round(cpu, 2), "cpu_clock": how, "wall_seconds": round(wall, 2),
                "peak_node_pss_gb": round(self.peak_pss / 2**30, 3),
                "peak_process_pss_gb": round(self.peak_proc_pss / 2**30, 3)}


def _du(folder: Path) -> tuple[int, int]:
    size = files = 0
    for dirpath, _, names in os.walk(folder):
        for n in names:
            try:
                size += os.stat(os.path.join(dirpath, n)).st_size
                files += 1
            except OSError:
                pass
    return size, files


# ----------------------------------------------------------------------------- our side
def recipe_config(warcs: Path, out: Path, n: int, tasks: int, engine: str, only=None, inp=None) -> dict:
    import yaml

    raw = yaml.safe_load((ROOT / "pipelines" / "commoncrawl.yaml").read_text())
    raw["input"] = {"path": str(inp or warcs / "*.warc.gz")}  # not crawl.json beside them
    if inp:  # our own output: its WARC 'source' column would collide with the one the reader adds
        raw["input"]["rename"] = {"source": "warc_source"}
    raw["output"] = str(out)
    raw["ray"] = {"num_cpus": tasks}
    stages = []
    for i, entry in enumerate(raw["stages"]):
        (name, params), = entry.items()
        params = dict(params or {})
        if only is not None and name not in only:
            continue
        if only is not None and name == "exact_dedup" and params.get("key") != "url":
            continue  # the text exact dedup is not a datatrove FineWeb step
        if name == "exact_dedup":
            params["expected_items"] = max(2 * n, 1000)
        if name == "extract":
            params["engine"] = engine
        if name == "url_filter":
            params["blocklist"] = [str(BLOCKLIST)]
        stages.append({name: params})
    raw["stages"] = stages
    return raw


def run_ours(cfg: dict, out: Path, reuse: bool = False) -> dict:
    import yaml

    done = out.parent / f"{out.name}.result.json"
    if reuse and done.exists() and json.loads(done.read_text())["config"] == cfg:
        print(f"  reusing {done}", flush=True)
        return json.loads(done.read_text())["result"]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_TMPDIR": os.environ.get("RAY_TMPDIR", tempfile.gettempdir())}
    for attempt in range(6):  # a start-up timeout is retried: nothing ran yet
        m = Measured([sys.executable, "-m", "datacurate.cli", "run", str(path), "--quiet", "--no-report"], env,
                     watch=out / "_work")
        try:
            res = m.run()
            break
        except StartTimeout:
            print(f"  Ray start timed out, again ({attempt + 1})", flush=True)
            shutil.rmtree(out)
            out.mkdir(parents=True)
    else:
        raise SystemExit("Ray's node never started")
    stats = json.loads((out / "stats.json").read_text())
    scratch: dict[str, list] = {}
    for path_, size in m.files.items():
        rel = Path(path_).relative_to(out / "_work").parts
        if len(rel) > 3 and rel[0] == "run" and rel[1] == "_work":
            key = rel[2]  # s<N>: a segment's parts, d<N>: decisions, <stage><N>: a stage's scratch, journal
        else:
            key = "staged_output" if rel[0] == "run" else rel[0]  # the outputs, staged until the run completes
        b, f = scratch.get(key, [0, 0])
        scratch[key] = [b + size, f + 1]
    out_bytes, out_files = _du(out)
    work = _du(out / "_work") if (out / "_work").exists() else (0, 0)
    tmp = {k: v for k, v in scratch.items() if k != "staged_output"}
    res.update(stats=stats, scratch=scratch, scratch_bytes=sum(v[0] for v in tmp.values()),
               scratch_files=sum(v[1] for v in tmp.values()), output_bytes=out_bytes - work[0],
               output_files=out_files - work[1])
    done.write_text(json.dumps({"config": cfg, "result": res}, default=str))
    return res


def per_stage(res: dict, pages: int) -> dict:
    """Stage CPU: the run's CPU split by the stages' task-seconds (stats.json)."""
    st = res["stats"]["stages"]
    task_s = {k: v.get("seconds", 0.0) for k, v in st.items()}
    total = sum(task_s.values()) or 1.0
    return {k: {"task_seconds": round(s, 2), "core_seconds_per_1000_pages": round(res["cpu_seconds"] * s / total
                                                                                 / pages * 1000, 3),
                "in": st[k].get("in"), "kept": st[k].get("kept")} for k, s in task_s.items()}


# ----------------------------------------------------------------------------- tables
def markdown(res: dict) -> str:
    """The README's tables from a result JSON."""
    sizes = [int(n) for n in res["pages"]]
    lines = ["| engine | pages | core-s / 1,000 pages | scratch bytes / page | output bytes / page | files / 1,000 pages "
             "| peak node PSS | largest process | kept |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for engine, by_n in res["recipe"].items():
        for n in sizes:
            r = by_n[str(n)] if str(n) in by_n else by_n[n]
            lines.append(f"| {engine} | {n:,} | {r['core_seconds_per_1000_pages']:.1f} | {r['scratch_bytes_per_page']:,} "
                         f"| {r['output_bytes_per_page']:,} | {(r['scratch_files'] + r['output_files']) / n * 1000:.1f} "
                         f"| {r['peak_node_pss_gb']:.2f} GB | {r['peak_process_pss_gb']:.2f} GB | {r['kept']:,} |")
    lines += ["", "| engine | stage | core-s / 1,000 pages (" + " / ".join(f"{n:,}" for n in sizes) + ") | growth |",
              "|---|---|---:|---:|"]
    for engine, by_n in res["recipe"].items():
        big = by_n[str(sizes[-1])] if str(sizes[-1]) in by_n else by_n[sizes[-1]]
        for stage in big["per_stage"]:
            vals = []
            for n in sizes:
                r = by_n[str(n)] if str(n) in by_n else by_n[n]
                vals.append(f"{r['per_stage'].get(stage, {}).get('core_seconds_per_1000_pages', 0):.2f}")
            g = big.get("per_page_growth", {}).get("per_stage_cpu", {}).get(stage, "")
            lines.append(f"| {engine} | {stage} | {' / '.join(vals)} | {g} |")
    lines += ["", "| engine | core-hours | scratch | output | PUT requests | per-page growth (CPU, scratch, output) |",
              "|---|---:|---:|---:|---:|---|"]
    for engine, by_n in res["recipe"].items():
        big = by_n[str(sizes[-1])] if str(sizes[-1]) in by_n else by_n[sizes[-1]]
        p, g = big["snapshot_projection"], big.get("per_page_growth", {})
        lines.append(f"| {engine} | {p['core_hours']:,} | {p['scratch_tb']} TB | {p['output_tb']} TB "
                     f"| {p['put_requests_millions']:,} M | {g.get('cpu')}, {g.get('scratch')}, {g.get('output')} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main
def crawl(n: int, cache: Path, per_file: int) -> Path:
    d = cache / f"crawl_{n}_pf{per_file}"
    if not (d / "crawl.json").exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from make_crawl import make_crawl

        t0 = time.perf_counter()
        make_crawl(n, d, per_file=per_file)
        print(f"made {n} pages in {d} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return d


def projection(rec: dict, pages: int) -> dict:
    per_page_cpu = rec["cpu_seconds"] / pages
    return {"core_hours": round(per_page_cpu * SNAPSHOT_PAGES / 3600), "scratch_tb": round(rec["scratch_bytes"] / pages
                                                                                            * SNAPSHOT_PAGES / 1e12, 1),
            "output_tb": round(rec["output_bytes"] / pages * SNAPSHOT_PAGES / 1e12, 2),
            "put_requests_millions": round((rec["scratch_files"] + rec["output_files"]) / pages * SNAPSHOT_PAGES / 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="*", type=int, help="page counts (smallest first); default 2000 6000")
    ap.add_argument("--tasks", type=int, default=2, help="Ray CPUs for ours, tasks and workers for datatrove")
    ap.add_argument("--engines", nargs="+", default=["trafilatura", "resiliparse"])
    ap.add_argument("--per-file", type=int, default=1000, help="captures per WARC file")
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / ".cache"))
    ap.add_argument("--work", default=None, help="where runs write (default: a fresh folder under /tmp)")
    ap.add_argument("--dt-python", default="/work/venv-datatrove/bin/python")
    ap.add_argument("--no-datatrove", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="reuse runs of ours already finished under --work "
                                                       "(same config): to finish an interrupted benchmark")
    ap.add_argument("--result", default=None)
    ap.add_argument("--markdown", metavar="RESULT", help="print the README tables of a result JSON and exit")
    ap.add_argument("--dt-phase", nargs=4, metavar=("PHASE", "WARCS", "OUT", "TASKS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.markdown:
        print(markdown(json.loads(Path(a.markdown).read_text())))
        return
    if a.dt_phase:
        phase, warcs, out, tasks = a.dt_phase
        datatrove_phase(phase, warcs, out, int(tasks))
        return
    sizes = a.pages or [2000, 6000]
    work = Path(a.work or tempfile.mkdtemp(prefix="dc-bench-crawl-"))
    cache = Path(a.cache)
    res: dict = {"pages": sizes, "tasks": a.tasks, "per_file": a.per_file, "load_at_start": os.getloadavg(),
                 "recipe": {}, "side_by_side": {}}
    result = Path(a.result) if a.result else ROOT / "benchmarks" / "results" / f"crawl_{'_'.join(map(str, sizes))}.json"

    def save(done: bool) -> None:  # after every run: what finished survives an interrupted benchmark
        res["complete"], res["load_now"] = done, os.getloadavg()
        result.write_text(json.dumps(res, indent=1, default=str) + "\n")

    big, small = sizes[-1], sizes[0]
    if not a.no_datatrove:  # first, side by side at the largest N, trafilatura on both sides
        n = big
        warcs = crawl(n, cache, a.per_file)
        front = work / f"ours-front-{n}"
        print(f"side by side: {n} pages, ours", flush=True)
        ours_a = run_ours(recipe_config(warcs, front, n, a.tasks, "trafilatura", only=FRONT), front, a.reuse)
        back = work / f"ours-back-{n}"
        ours_b = run_ours(recipe_config(warcs, back, n, a.tasks, "trafilatura", only=SAME_AS_DATATROVE[3:],
                                        inp=str(front / "kept")), back, a.reuse)
        dt_out = work / f"datatrove-{n}"
        print(f"side by side: {n} pages, datatrove", flush=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        me = str(Path(__file__).resolve())
        done = work / f"datatrove-{n}.result.json"
        if a.reuse and done.exists() and (dt_out / "final").exists():
            print(f"  reusing {done}", flush=True)
            dt_a, dt_b = json.loads(done.read_text())
        else:
            if dt_out.exists():
                shutil.rmtree(dt_out)
            dt_a = Measured([a.dt_python, me, "--dt-phase", "extract", str(warcs), str(dt_out), str(a.tasks)], env).run()
            dt_b = Measured([a.dt_python, me, "--dt-phase", "after", str(warcs), str(dt_out), str(a.tasks)], env).run()
            done.write_text(json.dumps([dt_a, dt_b]))
        dt_kept = {"extracted": _jsonl_docs(dt_out / "extracted"), "filtered": _jsonl_docs(dt_out / "filtered"),
                   "final": _jsonl_docs(dt_out / "final")}
        ours_kept = {"extracted": ours_a["stats"]["totals"]["kept"], "final": ours_b["stats"]["totals"]["kept"],
                     "rejected_by_reason": {**ours_a["stats"]["rejected_by_reason"], **ours_b["stats"]["rejected_by_reason"]},
                     "per_stage": {k: {"in": v.get("in"), "kept": v.get("kept"), "rejected": v.get("rejected")}
                                   for st in (ours_a, ours_b) for k, v in st["stats"]["stages"].items()}}
        e2e_ours, e2e_dt = ours_a["cpu_seconds"] + ours_b["cpu_seconds"], dt_a["cpu_seconds"] + dt_b["cpu_seconds"]
        res["side_by_side"] = {
            "pages": n, "tasks": a.tasks,
            "ours": {"front": {k: ours_a[k] for k in ("cpu_seconds", "wall_seconds", "peak_node_pss_gb")},
                     "after_extraction": {k: ours_b[k] for k in ("cpu_seconds", "wall_seconds", "peak_node_pss_gb")},
                     "kept": ours_kept},
            "datatrove": {"front": dt_a, "after_extraction": dt_b, "kept": dt_kept,
                          "step_seconds": _dt_step_seconds(dt_out)},
            "pages_per_core_second": {
                "end_to_end": {"ours": round(n / e2e_ours, 2), "datatrove": round(n / e2e_dt, 2),
                               "ratio": round(e2e_dt / e2e_ours, 2)},
                "after_extraction": {"ours": round(ours_a["stats"]["totals"]["kept"] / ours_b["cpu_seconds"], 2),
                                     "datatrove": round(dt_kept["extracted"] / dt_b["cpu_seconds"], 2),
                                     "ratio": round((dt_b["cpu_seconds"] / max(dt_kept["extracted"], 1))
                                                    / (ours_b["cpu_seconds"] / max(ours_a["stats"]["totals"]["kept"], 1)),
                                                    2)}},
        }
        print(json.dumps(res["side_by_side"]["pages_per_core_second"]), flush=True)
        save(False)
    for n in sizes:
        warcs = crawl(n, cache, a.per_file)
        res.setdefault("crawl", {})[n] = {k: v for k, v in json.loads((warcs / "crawl.json").read_text()).items()
                                          if k != "files"}
        for engine in a.engines:
            print(f"recipe: {n} pages, engine {engine}", flush=True)
            rec = run_ours(recipe_config(warcs, work / f"recipe-{n}-{engine}", n, a.tasks, engine),
                           work / f"recipe-{n}-{engine}", a.reuse)
            rec["per_stage"] = per_stage(rec, n)
            rec["scratch_bytes_per_page"] = round(rec["scratch_bytes"] / n)
            rec["output_bytes_per_page"] = round(rec["output_bytes"] / n)
            rec["core_seconds_per_1000_pages"] = round(rec["cpu_seconds"] / n * 1000, 2)
            rec["kept"] = rec["stats"]["totals"]["kept"]
            rec.pop("stats")
            res["recipe"].setdefault(engine, {})[n] = rec
            print(json.dumps({k: rec[k] for k in ("cpu_seconds", "wall_seconds", "core_seconds_per_1000_pages",
                                                  "scratch_bytes_per_page", "output_bytes_per_page", "kept",
                                                  "peak_node_pss_gb")}), flush=True)
            save(False)
    for engine, by_n in res["recipe"].items():
        if big not in by_n:
            continue
        r = by_n[big]
        r["snapshot_projection"] = projection(r, big)
        if small != big and small in by_n:
            s = by_n[small]
            # the slope between the two sizes: the fixed cost (Ray's start, ~10 CPU-s a run) drops out
            r["marginal_core_seconds_per_1000_pages"] = round((r["cpu_seconds"] - s["cpu_seconds"]) / (big - small)
                                                              * 1000, 2)
            r["fixed_cpu_seconds"] = round(s["cpu_seconds"] - small * (r["cpu_seconds"] - s["cpu_seconds"])
                                           / (big - small), 2)
            r["snapshot_projection_marginal"] = projection({**r, "cpu_seconds": r["marginal_core_seconds_per_1000_pages"]
                                                            * big / 1000}, big)
            r["per_page_growth"] = {
                "cpu": round((r["cpu_seconds"] / big) / (s["cpu_seconds"] / small), 3),
                "scratch": round((r["scratch_bytes"] / big) / max(s["scratch_bytes"] / small, 1e-9), 3),
                "output": round((r["output_bytes"] / big) / max(s["output_bytes"] / small, 1e-9), 3),
                "per_stage_cpu": {k: round(v["core_seconds_per_1000_pages"]
                                           / max(s["per_stage"][k]["core_seconds_per_1000_pages"], 1e-9), 3)
                                  for k, v in r["per_stage"].items() if k in s["per_stage"]}}

    save(True)
    print(f"wrote {result}")


if __name__ == "__main__":
    main()
