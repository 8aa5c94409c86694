"""Whole-pipeline throughput: N generated ~2 KB documents through the sample pipeline's curation stages.

Issue 18. The documents are built from real sentences of the sample corpus
(``sample_data/corpus``): each document takes whole sentences, in random order, from one
domain (news, learned, legal, fiction, conversational, web noise, multilingual man
pages; weights in ``DOMAINS``) until it reaches about 2 KB. 3 % of the documents are
exact copies of an earlier one and 3 % near copies (2-10 % of their words replaced).
Everything is drawn from ``random.Random(seed)``, so a given (N, seed) always gives the
same file.

The run is the real engine (``datacurate.engine.run_pipeline``) on
``pipelines/sample.yaml`` without its ``train:`` section, with ``ray.num_cpus`` set
(default 2), a private output directory, and ``exact_dedup.expected_items`` set to N
(the sample's 100,000 is sized for the sample corpus). A sampler thread adds up, every
0.5 s, the RSS and the PSS of this process and of every process below it (the local
Ray instance this run starts: GCS, raylet, dashboard, workers, all children of the
driver), and keeps the peaks. RSS counts the shared object store once per process that
maps it; PSS splits shared pages between the processes, so it is the better total.

    .venv/bin/python benchmarks/bench_pipeline_scale.py --docs 100000
    .venv/bin/python benchmarks/bench_pipeline_scale.py --docs 3000000 \
        --stages decontaminate,exact_dedup,near_dedup,dsir,tokenize,decompose

``--stages`` runs a subset of the sample's stages (in its order): the global stages, whose
phases are the ones that could gather rows on the driver, without the per-document map
stages that make 3M documents a multi-hour run on 2 cores (issue 39's driver benchmark).

Writes ``benchmarks/results/pipeline_scale_<N>.json`` (wall, docs/s, per-stage
task-seconds from stats.json, peaks, totals) and prints a summary. The generated input
(~215 MB per 100k documents) is cached in ``--cache`` and reused.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson
import psutil
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# domain -> (files in sample_data/corpus, share of the original documents)
DOMAINS = {
    "news": (["news.jsonl"], 0.22),
    "learned": (["learned.jsonl"], 0.22),
    "fiction": (["fiction.jsonl.gz"], 0.22),
    "legal": (["legal.jsonl"], 0.08),
    "conversational": (["conversational.jsonl"], 0.12),
    "web": (["web_noise.jsonl"], 0.08),
    "technical": (["technical_multilingual.jsonl"], 0.06),
}
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _records(path: Path) -> list[dict]:
    import gzip

    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    elif path.suffix == ".zst":
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def domain_sentences() -> dict[str, list[str]]:
    """Whole sentences (20-500 characters) of each domain's texts."""
    out = {}
    for dom, (files, _) in DOMAINS.items():
        sents = []
        for name in files:
            for rec in _records(ROOT / "sample_data" / "corpus" / name):
                sents += [s for s in SENTENCE.split(rec["text"]) if 20 <= len(s) <= 500]
        out[dom] = sents
    return out


def generate(path: Path, n: int, seed: int, exact_frac: float = 0.03, near_frac: float = 0.03,
             doc_chars: int = 2000) -> dict:
    """Write n JSONL documents of about doc_chars characters; returns how many of each kind."""
    rng = random.Random(seed)
    pools = domain_sentences()
    doms = list(DOMAINS)
    weights = [DOMAINS[d][1] for d in doms]
    vocab = [w for s in pools["news"][:5000] for w in s.split()]
    originals: list[str] = []
    made = {"original": 0, "exact": 0, "near": 0, **{f"domain/{d}": 0 for d in doms}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        for i in range(n):
            r = rng.random()
            if originals and r < exact_frac:
                text = originals[rng.randrange(len(originals))]
                made["exact"] += 1
            elif originals and r < exact_frac + near_frac:
                ws = originals[rng.randrange(len(originals))].split()
                for _ in range(max(1, int(rng.uniform(0.02, 0.10) * len(ws)))):
                    ws[rng.randrange(len(ws))] = rng.choice(vocab)
                text = " ".join(ws)
                made["near"] += 1
            else:
                dom = rng.choices(doms, weights)[0]
                pool = pools[dom]
                parts, size = [], 0
                while size < doc_chars:
                    s = pool[rng.randrange(len(pool))]
                    parts.append(s)
                    size += len(s) + 1
                # paragraphs of a few sentences, as documents have
                text = "\n\n".join(" ".join(parts[k:k + 4]) for k in range(0, len(parts), 4))
                made["original"] += 1
                made[f"domain/{dom}"] += 1
                if len(originals) < 100_000:
                    originals.append(text)
                else:
                    originals[rng.randrange(len(originals))] = text
            f.write(orjson.dumps({"id": f"d{i:08d}", "text": text}) + b"\n")
    tmp.rename(path)
    return made


class TreeMemory(threading.Thread):
    """Peak RSS and PSS summed over this process and all its descendants (the Ray it starts)."""

    def __init__(self, every: float = 0.5):
        super().__init__(daemon=True)
        self.every, self.stop = every, threading.Event()
        self.peak_rss = self.peak_pss = self.peak_procs = 0
        self.driver_rss = 0
        self.worker_rss = self.worker_pss = 0  # the largest single Ray worker process (ray::...)
        self.worker_kind = ""
        self.samples = 0
        self.breakdown: dict = {}

    def run(self):
        me = psutil.Process()
        while not self.stop.is_set():
            rss = pss = 0
            procs = [me, *me.children(recursive=True)]
            kinds: dict = {}
            shm = 0
            for p in procs:
                try:
                    mem = p.memory_full_info()
                    rss += mem.rss
                    pss += mem.pss
                    kind = _kind(p)
                    if kind.startswith("ray::") and p.pid != me.pid:
                        if mem.rss > self.worker_rss:
                            self.worker_kind = kind
                        self.worker_rss = max(self.worker_rss, mem.rss)
                        self.worker_pss = max(self.worker_pss, mem.pss)
                    n, total = kinds.get(kind, (0, 0))
                    kinds[kind] = (n + 1, total + mem.pss)
                    shm += _shm_pss(p.pid)
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    pass
            if pss > self.peak_pss:  # which processes made the peak: {kind: [count, PSS GB]}
                self.breakdown = {k: [n, round(v / 2**30, 3)] for k, (n, v) in sorted(kinds.items())}
                self.breakdown["object_store_pages"] = round(shm / 2**30, 3)  # of the total above
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self.peak_procs = max(self.peak_procs, len(procs))
            try:
                self.driver_rss = max(self.driver_rss, me.memory_info().rss)
            except psutil.Error:
                pass
            self.samples += 1
            self.stop.wait(self.every)


def _shm_pss(pid: int) -> int:
    """PSS bytes of a process's mappings of Ray's object store (the plasma file in
    /dev/shm or /tmp): touched object-store pages count in each process that maps them."""
    total, inside = 0, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                    inside = "plasma" in line or "/dev/shm" in line
                elif inside and line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
    except OSError:
        pass
    return total


def _kind(p: psutil.Process) -> str:
    """A process's role: a Ray worker's title (``ray::IDLE``, ``ray::FilterShard`` ...; a
    task's title cut at its first bracket), else its executable's name."""
    name = p.name()
    cmd = p.cmdline()
    title = cmd[0] if cmd else name
    if title.startswith("ray::"):
        return title.split("(")[0].split(" ")[0][:40]
    return name


def curation_config(inp: Path, out: Path, n: int, num_cpus: int, only: list[str] | None = None) -> dict:
    raw = yaml.safe_load((ROOT / "pipelines" / "sample.yaml").read_text())
    raw.pop("train", None)
    if only:  # a subset of the sample's stages, in the sample's order
        unknown = set(only) - {next(iter(e)) for e in raw["stages"]}
        if unknown:
            raise SystemExit(f"--stages: not in pipelines/sample.yaml: {', '.join(sorted(unknown))}")
        raw["stages"] = [e for e in raw["stages"] if next(iter(e)) in only]
    raw["input"] = {**raw["input"], "path": str(inp)}
    raw["output"] = str(out)
    raw["ray"] = {**(raw.get("ray") or {}), "num_cpus": num_cpus}
    for entry in raw["stages"]:
        (name, params), = entry.items()
        if name == "exact_dedup":
            params["expected_items"] = max(n, 1000)
        if name == "dsir":  # relative to the repository
            params["target"]["path"] = str(ROOT / params["target"]["path"])
    return raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--object-store-mb", type=int, default=None,
                    help="ray.object_store_memory_mb (default: the engine's)")
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / ".cache"), help="where the generated input is kept")
    ap.add_argument("--out", default=None, help="pipeline output directory (default: a fresh one under /tmp)")
    ap.add_argument("--result", default=None, help="result JSON (default benchmarks/results/pipeline_scale_<N>.json)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--stages", default=None,
                    help="comma-separated subset of the sample's stages (default: all of them); e.g. the global "
                         "stages only, to measure the driver at sizes the whole recipe takes hours for")
    args = ap.parse_args()

    inp = Path(args.cache) / f"pipeline_docs_{args.docs}_s{args.seed}.jsonl"
    t0 = time.perf_counter()
    made = None
    if not inp.exists():
        made = generate(inp, args.docs, args.seed)
    gen_s = time.perf_counter() - t0
    print(f"input {inp} ({inp.stat().st_size / 1e6:.0f} MB, generated in {gen_s:.1f} s)", flush=True)
    if args.generate_only:
        return

    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="dc-pipeline-scale-"))
    only = args.stages.split(",") if args.stages else None
    raw = curation_config(inp, out, args.docs, args.num_cpus, only)
    if args.object_store_mb:
        raw["ray"]["object_store_memory_mb"] = args.object_store_mb
    cfg = load_config(raw)
    load0 = open("/proc/loadavg").read().split()[:3]
    mem = TreeMemory()
    mem.start()
    t1 = time.perf_counter()
    report = run_pipeline(cfg, progress=False, report=False)
    wall = time.perf_counter() - t1
    mem.stop.set()
    mem.join()
    stages = {k: {kk: v for kk, v in st.items() if kk in ("in", "kept", "rejected_total", "seconds")}
              for k, st in report["stages"].items()}
    totals = report["totals"]
    res = {
        "docs": args.docs, "seed": args.seed, "stages_run": [next(iter(e)) for e in raw["stages"]], "input_bytes": inp.stat().st_size, "generated": made,
        "num_cpus": args.num_cpus, "object_store_memory_mb": cfg.ray.object_store_memory_mb, "wall_seconds": round(wall, 1), "docs_per_second": round(args.docs / wall, 1),
        "peak_rss_gb": round(mem.peak_rss / 2**30, 2), "peak_pss_gb": round(mem.peak_pss / 2**30, 2),
        "peak_driver_rss_gb": round(mem.driver_rss / 2**30, 3), "peak_processes": mem.peak_procs,
        "peak_worker_rss_gb": round(mem.worker_rss / 2**30, 3), "peak_worker_pss_gb": round(mem.worker_pss / 2**30, 3),
        "peak_worker_kind": mem.worker_kind,
        "memory_samples": mem.samples, "peak_breakdown": mem.breakdown, "load_at_start": load0, "load_at_end": open("/proc/loadavg").read().split()[:3],
        "stage_task_seconds": {k: st["seconds"] for k, st in stages.items()},
        "stages": stages, "totals": totals,
        "accounted": totals["read"] == totals["kept"] + totals["rejected"],
        "output": str(out),
    }
    result = Path(args.result) if args.result else ROOT / "benchmarks" / "results" / f"pipeline_scale_{args.docs}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: res[k] for k in ("docs", "wall_seconds", "docs_per_second", "peak_rss_gb", "peak_pss_gb", "peak_driver_rss_gb",
                                          "peak_worker_rss_gb", "peak_worker_pss_gb",
                                          "peak_processes", "peak_breakdown",
                                          "stage_task_seconds", "totals", "accounted")}, indent=2))


if __name__ == "__main__":
    main()
