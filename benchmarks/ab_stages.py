"""Old vs new code of the per-document stages, in one process on one core (issue 18).

The old code is ``git archive REV`` unpacked into a temporary folder; both source trees
are imported into this process one after the other (the old first; each keeps its own
module objects), and every stage of ``--stages``, configured as in
``pipelines/sample.yaml``, runs over the same Arrow batches: old and new alternate,
the order swapping each round, and the best CPU time (``time.process_time``) of
``--repeats`` rounds is reported with the ratio old / new. On a machine shared with
other jobs, CPU time of interleaved runs is the fair comparison; wall time is not.

Inputs: ``275 chars`` and ``5 KB``: English documents of sample_data cut to those sizes
(as ``bench_classifiers.py``); ``corpus``: every document of sample_data/corpus as it is
(13 languages, code, chat; ``lang`` from its metadata). The outputs of the two versions
are compared column by column; where a stage's algorithm changed on purpose (a new
default), the share of equal reject decisions is printed instead of a plain yes / no.

    .venv/bin/python benchmarks/ab_stages.py --rev main --stages quality,toxicity,tokenize
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # the tokenizer's encoder: one thread, one core
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _common import CORPUS, ROOT, read_jsonl  # noqa: E402  first: pins the process to one core

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402
import yaml  # noqa: E402

from bench_classifiers import cut, english_texts  # noqa: E402


def import_tree(root: Path) -> dict:
    """The stage classes of the source tree at ``root`` (a fresh import of ``datacurate``)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in type(f).__module__ + str(f)]
    for name in [m for m in sys.modules if m == "datacurate" or m.startswith("datacurate.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        mod = importlib.import_module("datacurate.stages")
        assert Path(mod.__file__).resolve().is_relative_to(root.resolve()), mod.__file__
        try:  # the registry has its own module since issue 25; older trees keep it in stages/
            return dict(importlib.import_module("datacurate.registry").STAGES)
        except ModuleNotFoundError:
            return dict(mod.STAGES)
    finally:
        sys.path.remove(str(root))


def sample_params() -> dict:
    cfg = yaml.safe_load((ROOT / "pipelines" / "sample.yaml").read_text())
    return {name: params or {} for item in cfg["stages"] for name, params in item.items()}


def inputs(batch_size: int) -> dict[str, list[pa.Table]]:
    english = english_texts()
    short, long = cut(english, 200, 4000), cut(english, 5000, 400)
    docs = [(d["text"], d.get("meta", {}).get("lang", "en")) for f in sorted(CORPUS.glob("*.jsonl*"))
            for d in read_jsonl(f)]
    out = {}
    for name, rows in (("275 chars", [(t, "en") for t in short]), ("5 KB", [(t, "en") for t in long]),
                       ("corpus", docs)):
        out[name] = [pa.table({"id": pa.array([str(j) for j in range(s, s + len(rows[s:s + batch_size]))]),
                               "text": pa.array([t for t, _ in rows[s:s + batch_size]], pa.large_string()),
                               "lang": pa.array([lang for _, lang in rows[s:s + batch_size]])})
                      for s in range(0, len(rows), batch_size)]
    return out


def same(a: list[pa.Table], b: list[pa.Table]) -> str:
    ta, tb = pa.concat_tables(a), pa.concat_tables(b)
    if ta.equals(tb):
        return "identical"
    ra, rb = ta.column("reject_reason").to_pylist(), tb.column("reject_reason").to_pylist()
    agree = sum((x is None) == (y is None) for x, y in zip(ra, rb)) / len(ra)
    return f"differ (same keep/reject on {100 * agree:.2f} %)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="main", help="git revision of the old code")
    ap.add_argument("--stages", default="quality,toxicity,tokenize")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ab_stages.json"))
    args = ap.parse_args()
    params = sample_params()
    names = args.stages.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", args.rev], cwd=ROOT, check=True, capture_output=True).stdout
        tarfile.open(fileobj=__import__("io").BytesIO(archive)).extractall(tmp, filter="data")
        old_classes = import_tree(Path(tmp))
        old = {n: old_classes[n](**params.get(n, {})) for n in names}
        new_classes = import_tree(ROOT)  # last: lazy imports inside the code find this tree
        new = {n: new_classes[n](**params.get(n, {})) for n in names}
        data = inputs(args.batch_size)
        res = {"old": args.rev, "new": "working tree", "clock": "cpu (process_time), best of runs",
               "repeats": args.repeats, "loadavg_start": open("/proc/loadavg").read().split()[:3], "rows": []}
        print(f"load average {open('/proc/loadavg').read().split()[:3]}; old = {args.rev}, new = working tree; "
              f"CPU seconds, best of {args.repeats}")
        print("| input | stage | old cpu-s | new cpu-s | old / new | outputs |")
        print("|---|---|---:|---:|---:|---|")
        for inp, batches in data.items():
            for n in names:
                secs = {"old": [], "new": []}
                outs = {}
                for r in range(args.repeats):
                    for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
                        stage = old[n] if which == "old" else new[n]
                        gc.collect()
                        t0 = time.process_time()
                        outs[which] = [stage(b) for b in batches]
                        secs[which].append(time.process_time() - t0)
                a, b = min(secs["old"]), min(secs["new"])
                res["rows"].append({"input": inp, "docs": sum(t.num_rows for t in batches), "stage": n,
                                    "old_cpu_s": round(a, 4), "new_cpu_s": round(b, 4), "old_over_new": round(a / b, 3),
                                    "outputs": same(outs["old"], outs["new"])})
                print(f"| {inp} ({sum(t.num_rows for t in batches)} docs) | {n} | {a:.3f} | {b:.3f} | "
                      f"**{a / b:.2f}x** | {same(outs['old'], outs['new'])} |", flush=True)
        res["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        print(f"load average at end {res['loadavg_end']}")
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
