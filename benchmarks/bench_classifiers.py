"""Side-by-side benchmark: datacurate ``quality`` / ``toxicity`` vs datatrove's filters.

One process, pinned to one core (``sched_setaffinity``; OMP/MKL/Arrow threads = 1),
runs both systems on the same documents and the same model files
(``classifiers/quality.ftz``, ``classifiers/toxicity.ftz``):

* quality: datacurate ``Quality(languages=None)`` on Arrow batches vs datatrove
  ``FastTextClassifierFilter(keep_labels=("hq", 0.5), newline_replacement=" ")``,
  one prediction per document on both sides; datacurate's model reads the first
  ``max_chars`` (2,000) characters, its default, datatrove's the whole text; a second
  row gives datacurate the whole text too (``max_chars: 100000``);
* toxicity classifier, per document: ``Toxicity(granularity=document)`` vs
  ``FastTextClassifierFilter(remove_labels=("toxic", 0.5))`` (filter_mode DOCUMENT);
* toxicity classifier, per sentence (datacurate's default): regex sentence split, one
  batch predict, mean per document vs datatrove's ``filter_mode="SENTENCE"`` (spaCy
  sentence spans, one predict per sentence, toxic spans cut out of the text);
* word list: ``Toxicity(classifier disabled)`` (whole-word match counts) vs datatrove
  ``C4BadWordsFilter``, whose regex is built by its own code from the same English
  LDNOOBW list (its loader would download the list; the compiled pattern is set on
  ``_badwords_regex["en"]`` instead);
* the whole default ``Toxicity()`` stage (sentence classifier + word list), datacurate only.

Documents: English text of sample_data/corpus (news, fiction, learned, legal,
conversational, web, English man pages), cut at paragraph / sentence boundaries into
~5 KB and ~200-character documents. Speed is docs/s on one core, median of
``--repeats`` runs after a warm-up; model loading and building inputs (Arrow tables,
fresh ``Document`` objects: datatrove rewrites ``doc.text``) are outside the timer.
The keep/reject agreement of each pair is reported too: the systems differ on purpose
(datacurate normalises text as in training, datatrove predicts on raw text; datatrove's
sentence mode cuts spans rather than rejecting documents), so it is not 100 %.

    benchmarks/.venv/bin/python benchmarks/bench_classifiers.py
"""

from __future__ import annotations

from _common import CLOCKS, CORPUS, ROOT, clock, machine_info, read_jsonl, replace_block  # first: pins the process to one core

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

from datacurate.core.schema import REJECT_REASON  # noqa: E402
from datacurate.stages.quality import Quality  # noqa: E402
from datacurate.stages.toxicity import DEFAULT_LISTS, Toxicity  # noqa: E402

FILES = ["news.jsonl", "fiction.jsonl.gz", "learned.jsonl", "legal.jsonl", "conversational.jsonl",
         "web_noise.jsonl", "technical_multilingual.jsonl"]
CLOCK = time.perf_counter  # the timer of the timed runs (--clock)
README_BEGIN, README_END = "<!-- classifiers:begin -->", "<!-- classifiers:end -->"


def english_texts() -> list[str]:
    return [r["text"] for name in FILES for r in read_jsonl(CORPUS / name)
            if r.get("meta", {}).get("lang", "en") == "en"]


def cut(texts: list[str], target: int, limit: int) -> list[str]:
    """Documents of about ``target`` chars: whole paragraphs (long ones split at sentences)."""
    docs, cur = [], ""
    for text in texts:
        for piece in re.split(r"(?<=\n\n)|(?<=[.!?] )", text):
            cur += piece
            if len(cur) >= target:
                docs.append(cur.strip())
                cur = ""
                if len(docs) >= limit:
                    return docs
    return docs


def dt_docs(texts: list[str]):
    from datatrove.data import Document

    return [Document(text=t, id=str(i), metadata={"language": "en"}) for i, t in enumerate(texts)]


def dt_fasttext(model: str, mode: str, **labels):
    from datatrove.pipeline.filters import FastTextClassifierFilter
    from fasttext.FastText import _FastText

    f = FastTextClassifierFilter(str(ROOT / "classifiers" / model), newline_replacement=" ", filter_mode=mode, **labels)
    f._model = _FastText(str(ROOT / "classifiers" / model))  # what its loader builds; no download
    return f


def dt_badwords():
    from datatrove.pipeline.filters import C4BadWordsFilter

    f = C4BadWordsFilter(default_language="en")
    words = {w.strip() for w in (DEFAULT_LISTS / "en.txt").read_text().splitlines() if w.strip()}
    # datatrove's own construction (c4_filters._get_badwords), from the same list
    f._badwords_regex["en"] = re.compile(r"(?:\W|^)({})(?:\W|$)".format("|".join(re.escape(w) for w in words)))
    return f


def dt_keep(step, docs) -> list[bool]:
    kept = {d.id for d in step.run(iter(docs))}
    return [d.id in kept for d in docs]


def dc_keep(stage, batches) -> list[bool]:
    return [r is None for b in batches for r in stage(b).column(REJECT_REASON).to_pylist()]


def timed(cases: list, repeats: int) -> list[float]:
    """Median seconds of each ``(fn, make_input)``; runs interleave the systems, so a
    change in machine load hits both alike. One untimed warm-up run each."""
    secs: list[list[float]] = [[] for _ in cases]
    for r in range(repeats + 1):
        for i, (fn, make_input) in enumerate(cases):
            inp = make_input()
            gc.collect()
            t0 = CLOCK()
            fn(inp)
            if r:
                secs[i].append(CLOCK() - t0)
    return [statistics.median(s) for s in secs]


def run_size(texts: list[str], repeats: int, batch_size: int) -> dict:
    batches = [pa.table({"id": pa.array([str(i) for i in range(j, min(j + batch_size, len(texts)))]),
                         "text": pa.array(texts[j:j + batch_size], pa.large_string()),
                         "lang": pa.array(["en"] * len(texts[j:j + batch_size]))})
               for j in range(0, len(texts), batch_size)]
    no_words = {"wordlist": {"enabled": False}}
    pairs = {
        "quality": (Quality(languages=None), dt_fasttext("quality.ftz", "DOCUMENT", keep_labels=("hq", 0.5))),
        "quality, whole document (max_chars 100000)": (
            Quality(languages=None, max_chars=100_000), dt_fasttext("quality.ftz", "DOCUMENT", keep_labels=("hq", 0.5))),
        "toxicity classifier, per document": (
            Toxicity(classifier={"granularity": "document", "max_score": 0.5}, **no_words),
            dt_fasttext("toxicity.ftz", "DOCUMENT", remove_labels=("toxic", 0.5))),
        "toxicity classifier, per sentence": (
            Toxicity(**no_words), dt_fasttext("toxicity.ftz", "SENTENCE", remove_labels=("toxic", 0.5))),
        "word list (LDNOOBW en)": (Toxicity(classifier={"enabled": False}), dt_badwords()),
    }
    out = {}
    n = len(texts)
    for name, (dc, dt) in pairs.items():
        t_dc, t_dt = timed([(lambda b: dc_keep(dc, b), lambda: batches),
                            (lambda d: dt_keep(dt, d), lambda: dt_docs(texts))], repeats)
        a, b = dc_keep(dc, batches), dt_keep(dt, dt_docs(texts))
        out[name] = {"datacurate_docs_per_s": round(n / t_dc, 1), "datatrove_docs_per_s": round(n / t_dt, 1),
                     "ratio": round(t_dt / t_dc, 2), "kept_datacurate": sum(a), "kept_datatrove": sum(b),
                     "keep_agreement": round(sum(x == y for x, y in zip(a, b)) / n, 4)}
        print(name, out[name], file=sys.stderr)
    full = Toxicity()
    (t_full,) = timed([(lambda b: dc_keep(full, b), lambda: batches)], repeats)
    out["toxicity stage (default: sentence classifier + word list)"] = {
        "datacurate_docs_per_s": round(n / t_full, 1), "kept_datacurate": sum(dc_keep(full, batches))}
    return out


def bench_machine_info() -> dict:
    return machine_info(["datatrove", "fasttext-numpy2", "fasttext-numpy2-wheel", "pyarrow", "numpy", "spacy"])


def markdown(res: dict) -> str:
    c, m = res["config"], res["machine"]
    lines = [
        README_BEGIN,
        f"Command: `{c['command']}`  ",
        f"Machine: {m['cpu_model']}, nproc {m['nproc']}, pinned to core {m['pinned_to']} (load average "
        f"{res['loadavg_start'][0]} at start, {res['loadavg_end'][0]} at end); "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + "  ",
        f"Median of {c['repeats']} runs ({c.get('clock', 'wall')} time); datacurate batches of {c['batch_size']}; total {res['seconds']:.0f} s.",
        "",
        "| documents | filter | datacurate docs/s/core | datatrove docs/s/core | ratio | keep agreement |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for size, rows in res["speed"].items():
        label = f"{c['sizes'][size]['n']:,} x {c['sizes'][size]['mean_chars']:,.0f} chars"
        for name, r in rows.items():
            dt = f"{r['datatrove_docs_per_s']:,.0f}" if "datatrove_docs_per_s" in r else "-"
            ratio = f"**{r['ratio']:.1f}x**" if "ratio" in r else "-"
            agree = f"{100 * r['keep_agreement']:.1f} %" if "keep_agreement" in r else "-"
            lines.append(f"| {label} | {name} | {r['datacurate_docs_per_s']:,.0f} | {dt} | {ratio} | {agree} |")
    lines.append(README_END)
    return "\n".join(lines)


def update_readme(res: dict, path: Path) -> None:
    body = markdown(res)
    replace_block(path, README_BEGIN, README_END, body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", type=int, default=4000, help="number of ~200-char documents")
    ap.add_argument("--long", type=int, default=400, help="number of ~5 KB documents")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "classifiers.json"))
    ap.add_argument("--readme", default=str(ROOT / "benchmarks" / "README.md"))
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="timer of the timed runs: wall, or this process's CPU time (a busy machine)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = clock(args.clock)

    from loguru import logger

    logger.remove()  # datatrove logs through loguru
    t0 = time.perf_counter()
    load_start = open("/proc/loadavg").read().split()[:3]
    texts = english_texts()
    sizes = {"short": cut(texts, 200, args.short), "long": cut(texts, 5000, args.long)}
    res = {"config": {"command": " ".join(["benchmarks/.venv/bin/python benchmarks/bench_classifiers.py", *sys.argv[1:]]),
                      "clock": args.clock, "repeats": args.repeats,
                      "batch_size": args.batch_size,
                      "sizes": {k: {"n": len(v), "mean_chars": sum(map(len, v)) / len(v)} for k, v in sizes.items()}},
           "machine": bench_machine_info(), "loadavg_start": load_start, "speed": {}}
    for size, docs in sizes.items():
        res["speed"][size] = run_size(docs, args.repeats, args.batch_size)
    res["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    res["seconds"] = round(time.perf_counter() - t0, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    update_readme(res, Path(args.readme))
    print(markdown(res))


if __name__ == "__main__":
    main()
