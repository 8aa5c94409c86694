"""Pages per CPU-second of a whole ``datacurate run`` of an extract-only pipeline against a
plain in-process loop, on one WARC, every process of each arm counted.

The WARC holds ``--repeat`` copies of every page of ``eval_extract.py``'s sets (each copy
its own URL; ``response`` records with the HTTP header, as Common Crawl writes them). Arms:

* ``loop:<engine>``: one Python process, FastWARC's ``ArchiveIterator`` over the response
  records, UTF-8 decoding, the engine called per page (trafilatura with FineWeb's
  settings: the baseline of the 5x target);
* ``run:<engine>``: ``datacurate run`` of ``stages: [extract: {engine: ...}]`` (``ray.num_cpus
  = 1``), as a user runs it: our WARC reader, Ray's start-up and workers, the stage's
  sandbox child, the Parquet writers;
* ``noray:<engine>``: the same read task through the Ray-free functions a worker runs
  (``engine/process.py``), in one process with its sandbox child: not a datacurate
  command, a measure of what a one-machine run would cost without Ray;
* ``before:<engine>`` (with ``--before DIR``): the same run of another checkout of
  datacurate (e.g. ``git archive <commit> | tar -x -C DIR``), side by side in the same
  session: a change's effect on a run's cost, measured under the same load.

CPU seconds: each arm starts inside a cgroup v1 ``cpuacct`` group of its own (root only:
``/sys/fs/cgroup/cpuacct``), and its ``cpuacct.usage`` is read after, so Ray's daemons and
workers count too. Without that group the figure falls back to ``RUSAGE_CHILDREN`` (processes
that detach from the run, Ray's daemons, are then missed: flagged in the JSON).

Ray's start-up is a fixed cost of a run, so a run's pages per CPU-second grows with the
WARC; with two sizes (``--repeat 1 4``) the JSON also gives each run's fixed CPU seconds
and its marginal pages per CPU-second (the rate a large crawl approaches).

    python benchmarks/bench_extract_run.py --pages DIR --trafilatura-tests DIR --repeat 1 4
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CGROUP = Path("/sys/fs/cgroup/cpuacct")
ARMS = ["loop:trafilatura", "loop:native", "run:native", "run:trafilatura"]


def loop(warc: Path, engine: str) -> int:
    """The plain loop: FastWARC, decode, extract; returns pages with text."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    sys.path.insert(0, str(ROOT))
    from datacurate.stages.extract import ExtractConfig
    from datacurate.text.html import extract

    opts = ExtractConfig(engine=engine).engine_options()
    n = 0
    with open(warc, "rb") as f:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            html = rec.reader.read().decode("utf-8", "replace")
            n += bool(extract(html, engine, opts)[0].strip())
    return n


def noray(pipeline: Path) -> int:
    """A run's work without Ray: the read tasks through the Ray-free functions a Ray worker
    calls (``engine/process.py``: read -> stages -> Parquet parts, the sandbox child
    included), one after another in this process; no journal, swap or stats.json. Not a
    datacurate command: what a one-machine run would cost with no Ray at all."""
    sys.path.insert(0, str(ROOT))
    from datacurate.configs.pipeline import load_config
    from datacurate.engine.process import build_stages, curate_task, reserved_columns, segments_of
    from datacurate.formats.io import plan_reads

    cfg = load_config(str(pipeline))
    seg = segments_of(cfg)[0]
    stages = build_stages(seg.maps)
    tasks = plan_reads(cfg.input, reserved=reserved_columns(cfg.stages))
    return sum(curate_task(t.to_dict(), cfg, seg, stages)["read"] for t in tasks)


def _commit(root: Path) -> str | None:
    """The git commit of a checkout (None for an exported tree without .git)."""
    p = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and (root / ".git").exists() else None


def _process_name(pid: str) -> str | None:
    """A process's short name: Ray's title (``ray::IDLE``, ``ray::DashboardAgent``), else
    its program or module (``raylet``, ``log_monitor.py``, ``datacurate.core.sandbox``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    if not argv or not argv[0]:
        return None
    if argv[0].startswith("ray::"):
        return argv[0].split()[0]
    args = [a for a in argv[1:] if a and not a.startswith("-")]
    if "-m" in argv:
        return argv[argv.index("-m") + 1]
    return Path(args[0] if Path(argv[0]).name.startswith("python") and args else argv[0]).name


def _poll(group: Path, seen: dict) -> None:
    """Each process's user + system CPU seconds now (its last reading counts: read just
    before it exits, to 1/20 s), by pid, with its name."""
    tick = os.sysconf("SC_CLK_TCK")
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        name = _process_name(pid) or seen.get(pid, (None, 0))[0]
        seen[pid] = (name, (int(fields[11]) + int(fields[12])) / tick)


def measure(cmd: list[str], name: str, env: dict) -> dict:
    """Run ``cmd``; CPU seconds of every process it started (cgroup), wall seconds, and
    (cgroup only) the CPU seconds of its processes by name, polled 20 times a second."""
    group = CGROUP / f"bench_extract_{os.getpid()}_{name.replace(':', '_')}"
    use_cgroup = os.geteuid() == 0 and CGROUP.is_dir()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    seen: dict = {}
    if use_cgroup:
        group.mkdir()
        cmd = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *cmd]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=tempfile.gettempdir())
        while p.poll() is None:
            if use_cgroup:
                _poll(group, seen)
            time.sleep(0.05)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    processes: dict = {}
    if use_cgroup:
        time.sleep(1.0)  # Ray's daemons exit after the driver
        _poll(group, seen)
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        for pid in (group / "cgroup.procs").read_text().split():  # stragglers of the run: ours to end
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        time.sleep(0.5)
        group.rmdir()
        for pname, sec in seen.values():
            processes[pname or "?"] = round(processes.get(pname or "?", 0.0) + sec, 2)
        processes = dict(sorted(processes.items(), key=lambda kv: -kv[1]))
    else:
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode:
        return {"error": stderr.strip().splitlines()[-3:]}
    res = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "cpu_source": "cgroup" if use_cgroup else "rusage",
           "stdout_tail": stdout.strip().splitlines()[-1:]}
    if processes:
        res["processes"] = processes
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=Path, default=ROOT / "benchmarks" / "data" / "article-extraction")
    ap.add_argument("--trafilatura-tests", type=Path)
    ap.add_argument("--repeat", type=int, nargs="+", default=[1, 4],
                    help="copies of each page in the WARC; two sizes give the run's fixed and per-page cost")
    ap.add_argument("--arms", nargs="*", default=ARMS)
    ap.add_argument("--before", type=Path, help="another checkout of datacurate: its runs become before:<engine> arms")
    ap.add_argument("--loop", help=argparse.SUPPRESS)
    ap.add_argument("--warc", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--noray", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extract_run.json")
    args = ap.parse_args()
    if args.loop:
        import _common  # noqa: F401  (one core, one thread)

        print(loop(args.warc, args.loop))
        return
    if args.noray:
        print(noray(args.noray))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import yaml
    from bench_extract_warc import build_warc
    from eval_extract import load_pages, load_trafilatura_eval

    pages = {f"aeb/{k}": v for k, v in load_pages(args.pages).items()}
    if args.trafilatura_tests:
        pages.update({f"trafilatura/{i}": v for i, v in enumerate(load_trafilatura_eval(args.trafilatura_tests).values())})
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_AUTH_MODE="disabled")
    arms = list(args.arms)
    if args.before:
        arms += [a.replace("run:", "before:") for a in args.arms if a.startswith("run:")]
    res: dict = {"distinct_pages": len(pages), "loadavg_start": open("/proc/loadavg").read().split()[:3], "sizes": {},
                 "commit": _commit(ROOT), "before_commit": _commit(args.before) if args.before else None}
    with tempfile.TemporaryDirectory(prefix="bench_extract_run_") as tmp:
        env["RAY_TMPDIR"] = str(Path(tmp) / "ray")
        for rep in args.repeat:
            warc = Path(tmp) / f"pages_x{rep}.warc.gz"
            n = build_warc(pages, rep, warc)
            size = res["sizes"][str(rep)] = {"records": n, "warc_bytes": warc.stat().st_size, "arms": {}}
            for arm in arms:
                kind, engine = arm.split(":")
                if kind == "loop" and rep != args.repeat[0]:
                    continue  # a loop's rate does not depend on the WARC's size
                if kind == "loop":
                    cmd = [sys.executable, str(Path(__file__).resolve()), "--loop", engine, "--warc", str(warc)]
                else:
                    out = Path(tmp) / f"out_{kind}_{engine}_x{rep}"
                    pipe = Path(tmp) / f"{kind}_{engine}.yaml"
                    pipe.write_text(yaml.safe_dump({"input": {"path": str(warc)}, "output": str(out),
                                                    "ray": {"num_cpus": 1}, "stages": [{"extract": {"engine": engine}}]}))
                    cmd = [sys.executable, "-m", "datacurate.cli", "run", str(pipe), "--quiet", "--no-report"]
                    if kind == "noray":
                        cmd = [sys.executable, str(Path(__file__).resolve()), "--noray", str(pipe)]
                root = args.before if kind == "before" else ROOT
                r = measure(cmd, f"{arm}_x{rep}", dict(env, PYTHONPATH=str(root)))
                if "cpu_s" in r:
                    r["pages_per_cpu_s"] = round(n / r["cpu_s"], 1)
                if kind in ("run", "before") and "cpu_s" in r:
                    stats = json.loads((out / "stats.json").read_text())
                    r["kept"], r["rejected"] = stats["totals"]["kept"], stats["totals"].get("rejected")
                size["arms"][arm] = r
                print(rep, arm, r, flush=True)
            warc.unlink()
        first = res["sizes"][str(args.repeat[0])]
        base = first["arms"].get("loop:trafilatura", {}).get("pages_per_cpu_s")
        for size in res["sizes"].values():
            for r in size["arms"].values():
                if base and "pages_per_cpu_s" in r:
                    r["x_trafilatura_loop"] = round(r["pages_per_cpu_s"] / base, 2)
        if len(args.repeat) > 1:  # a run's fixed cost (Ray's start-up) and its cost per page, from two sizes
            a, b = res["sizes"][str(args.repeat[0])], res["sizes"][str(args.repeat[-1])]
            res["marginal"] = {}
            for arm in a["arms"]:
                ra, rb = a["arms"][arm], b["arms"].get(arm, {})
                if not arm.startswith("loop:") and "cpu_s" in ra and "cpu_s" in rb and rb["cpu_s"] > ra["cpu_s"]:
                    per_page = (rb["cpu_s"] - ra["cpu_s"]) / (b["records"] - a["records"])
                    res["marginal"][arm] = {"fixed_cpu_s": round(ra["cpu_s"] - per_page * a["records"], 1),
                                            "pages_per_cpu_s": round(1 / per_page, 1),
                                            "x_trafilatura_loop": round(1 / per_page / base, 2) if base else None}
        res["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res.get("marginal"), indent=1))


if __name__ == "__main__":
    main()
