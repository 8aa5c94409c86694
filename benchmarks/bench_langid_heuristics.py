"""Side-by-side benchmark: datacurate ``langid`` + ``heuristics`` vs datatrove's filters.

One process, pinned to one core (``sched_setaffinity``; OMP/MKL/Arrow threads = 1),
runs both systems on the same documents:

1. Language ID: datacurate ``LangId(languages=["en"])`` on Arrow batches vs datatrove
   ``LanguageFilter(languages=["en"])``. Both use fastText lid.176 - the ``.ftz``
   shipped in ``datacurate/models``: datatrove's lazy ``model`` property would download
   ``lid.176.bin``, so its cached ``_model`` attribute is pre-set to
   ``fasttext.FastText._FastText(<that .ftz>)``, exactly what its own loader builds.
2. Rule filters: datacurate ``Heuristics()`` (defaults) vs datatrove
   GopherRepetition -> GopherQuality -> C4Quality -> FineWebQuality (defaults,
   chained with ``run()`` like a datatrove pipeline: the first filter that rejects
   decides; FineWeb sees the text C4 cleaned), and each rule set on its own.
3. Separation on a labelled set built from sample_data: GOOD = edited prose (news,
   fiction, learned, legal) cut into ~4 KB documents; BAD = synthetic web noise
   (sample_data ``web`` docs except the ``article``/``mirror`` kinds, which are real
   prose with boilerplate) plus degraded copies of good documents (shuffled words,
   keyword spam, boilerplate-line lists).

Speed is docs/s on one core, median of ``--repeats`` timed runs after a warm-up
(model loading excluded; building inputs - Arrow tables, fresh ``Document``s since
C4 rewrites ``doc.text`` - is outside the timer). The ratio is what matters: absolute
numbers move with the machine.

    benchmarks/.venv/bin/python benchmarks/bench_langid_heuristics.py [--docs 2000]
"""

from __future__ import annotations

from _common import CLOCKS, CORPUS, ROOT, clock, machine_info, read_jsonl, replace_block  # first: pins the process to one core

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

from datacurate.core.schema import REJECT_REASON, TEXT  # noqa: E402
from datacurate.stages.heuristics import Heuristics, HeuristicsConfig  # noqa: E402
from datacurate.stages.langid import DEFAULT_MODEL, LangId  # noqa: E402

GOOD_DOMAINS = {"news": "news.jsonl", "fiction": "fiction.jsonl.gz", "learned": "learned.jsonl", "legal": "legal.jsonl"}
OTHER_FILES = ["conversational.jsonl", "technical_multilingual.jsonl", "code.jsonl.zst"]
WEB_PROSE_KINDS = {"article", "mirror"}  # web docs that are real prose + boilerplate: unlabelled
RULE_SETS = ["gopher_quality", "gopher_repetition", "c4", "fineweb"]
CLOCK = time.perf_counter  # the timer of the timed runs (--clock)
README_BEGIN, README_END = "<!-- langid_heuristics:begin -->", "<!-- langid_heuristics:end -->"


# ----------------------------------------------------------------------------- documents

def chunk_stream(texts: list[str], target: int) -> list[str]:
    """Cut/concatenate texts (paragraph by paragraph) into documents of about ``target`` chars."""
    out, cur, size = [], [], 0
    for text in texts:
        for para in re.split(r"\n\s*\n", text.strip()):
            while len(para) > 1.5 * target:  # an overlong paragraph: cut at a space
                cut = para.rfind(" ", 0, target) if para.rfind(" ", 0, target) > 0 else target
                out.append("\n\n".join(cur + [para[:cut]]) if cur else para[:cut])
                cur, size, para = [], 0, para[cut:].lstrip()
            cur.append(para)
            size += len(para) + 2
            if size >= target:
                out.append("\n\n".join(cur))
                cur, size = [], 0
    if size >= target // 2:
        out.append("\n\n".join(cur))
    return out


NAV = ["Home", "News", "Sports", "Business", "Login", "Register", "Contact Us", "About", "Shop", "Archives"]
BOILER = ["Read more", "Share | Tweet | Email", "Comments (0)", "Continue reading \u2192", "Subscribe to our newsletter",
          "Advertisement", "Back to top", "Print this page", "Related posts", "Sign in"]
SPAM = ["{a} {b}", "best {a}", "cheap {b} {c}", "{a} near me", "buy {b} online", "{c} reviews", "top 10 {a}",
        "discount {a} {b}", "{b} for sale", "{c} {a} deals"]


def shuffled_words(text: str, rng: random.Random) -> str:
    """Word salad with the original paragraph layout (fools statistics, not readers)."""
    paras = [p.split() for p in re.split(r"\n\s*\n", text)]
    words = [w for p in paras for w in p]
    rng.shuffle(words)
    out, i = [], 0
    for p in paras:
        out.append(" ".join(words[i:i + len(p)]))
        i += len(p)
    return "\n\n".join(out)


def keyword_spam(text: str, rng: random.Random, target: int) -> str:
    """A short prose head followed by repeated keyword phrases (SEO spam)."""
    head = text[: rng.randint(600, 1500)].rsplit(" ", 1)[0] + "."
    vocab = sorted({w.lower() for w in re.findall(r"[A-Za-z]{5,}", text)})
    kw = rng.sample(vocab, min(4, len(vocab)))
    parts = []
    while len(head) + sum(len(p) + 2 for p in parts) < target - 60:
        a, b, c = (rng.choice(kw) for _ in range(3))
        parts.append(rng.choice(SPAM).format(a=a, b=b, c=c))
    sep = ", " if rng.random() < 0.5 else " "  # as sample_data's web spam: half comma lists
    return f"{head}\n\n{sep.join(parts)}\n\nTags: {', '.join(kw * 3)}"


def boilerplate_lines(text: str, rng: random.Random, target: int) -> str:
    """A list of short navigation / teaser lines built from the document's sentences."""
    sents = [s.split() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 5]
    lines = [" | ".join(rng.sample(NAV, 6))]
    while sum(len(x) + 1 for x in lines) < target and sents:
        w = sents.pop(0)
        lines.append(rng.choice(["", "\u2022 ", "Related: "]) + " ".join(w[: rng.randint(3, 7)]))
        lines.append(rng.choice(BOILER))
    lines.append(f"\u00a9 {rng.randint(2005, 2023)} Media Group. All rights reserved.")
    return "\n".join(lines)


def build_docs(target: int, n_degraded: int, seed: int) -> list[dict]:
    """Every document of the pool: {id, text, label (good/bad/None), group}."""
    rng = random.Random(seed)
    docs = []
    good = []
    for domain, fname in GOOD_DOMAINS.items():
        for i, text in enumerate(chunk_stream([r["text"] for r in read_jsonl(CORPUS / fname)], target)):
            good.append({"id": f"{domain}-{i}", "text": text, "label": "good", "group": f"good/{domain}"})
    docs += good
    for r in read_jsonl(CORPUS / "web_noise.jsonl"):
        kind = r.get("meta", {}).get("kind", "?")
        label, group = (None, f"other/web_{kind}") if kind in WEB_PROSE_KINDS else ("bad", f"bad/web_{kind}")
        docs.append({"id": r["id"], "text": r["text"], "label": label, "group": group})
    for name, fn in [("shuffled", lambda t: shuffled_words(t, rng)),
                     ("keyword_spam", lambda t: keyword_spam(t, rng, target)),
                     ("boilerplate_lines", lambda t: boilerplate_lines(t, rng, target))]:
        for src in rng.sample(good, min(n_degraded, len(good))):
            docs.append({"id": f"{src['id']}~{name}", "text": fn(src["text"]), "label": "bad", "group": f"bad/{name}"})
    for fname in OTHER_FILES:
        stem = fname.split(".")[0]
        for i, text in enumerate(chunk_stream([r["text"] for r in read_jsonl(CORPUS / fname)], target)):
            docs.append({"id": f"{stem}-{i}", "text": text, "label": None, "group": f"other/{stem}"})
    rng.shuffle(docs)
    return docs


# ----------------------------------------------------------------------------- systems

def arrow_batches(docs: list[dict], batch_size: int) -> list[pa.Table]:
    return [pa.table({"id": pa.array([d["id"] for d in docs[i:i + batch_size]], pa.string()),
                      TEXT: pa.array([d["text"] for d in docs[i:i + batch_size]], pa.large_string())})
            for i in range(0, len(docs), batch_size)]


def dt_docs(docs: list[dict]):
    from datatrove.data import Document

    return [Document(text=d["text"], id=d["id"]) for d in docs]


def dt_pipeline(steps, docs) -> int:
    """Run datatrove steps the way its executor chains them; returns documents kept."""
    stream = iter(docs)
    for step in steps:
        stream = step.run(stream)
    return sum(1 for _ in stream)


def dc_run(stage, batches) -> int:
    return sum(stage(b).column(REJECT_REASON).null_count for b in batches)


def timed(cases: dict, repeats: int) -> dict[str, list[float]]:
    """Seconds per run of each ``name: (fn, make_input)``; repeats interleave the systems
    so that a change in machine load hits both alike."""
    out = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (fn, make_input) in cases.items():
            inp = make_input()
            gc.collect()
            t0 = CLOCK()
            fn(inp)
            out[name].append(CLOCK() - t0)
    return out


STOP_RATIO = 0.06  # heuristics.gopher_quality.min_stop_word_ratio for the "+ stop-word ratio" row


def dc_heuristics(only: str | None = None) -> Heuristics:
    cfg = HeuristicsConfig()
    if only:
        for name in RULE_SETS:
            getattr(cfg, name).enabled = name == only
    return Heuristics(cfg)


def dt_filters():
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter)

    return {"gopher_repetition": GopherRepetitionFilter(), "gopher_quality": GopherQualityFilter(),
            "c4": C4QualityFilter(), "fineweb": FineWebQualityFilter()}


def dt_language_filter():
    from datatrove.pipeline.filters import LanguageFilter
    from fasttext.FastText import _FastText

    lf = LanguageFilter(languages=["en"])
    lf.model._model = _FastText(str(DEFAULT_MODEL))  # same file as datacurate; no download
    return lf


def verdict(res) -> tuple[bool, str | None]:
    return (res[0], res[1]) if isinstance(res, tuple) else (bool(res), None)


# ----------------------------------------------------------------------------- decisions (untimed)

def dt_decisions(filters: dict, docs: list[dict]) -> dict:
    """Per doc: each rule set alone on the original text, and the pipeline's first rejection."""
    from datatrove.data import Document

    order = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
    alone = {k: [] for k in order}
    pipeline = []
    for d in docs:
        first = None
        for name in order:
            doc = Document(text=d["text"], id=d["id"])
            ok, why = verdict(filters[name].filter(doc))
            alone[name].append(None if ok else f"{name}/{why}")
            if name == "fineweb" or first is not None:
                continue
            if not ok:
                first = f"{name}/{why}"
            elif name == "c4":
                cleaned = doc.text
        if first is None:  # FineWeb in the pipeline sees the text C4 left, not the original
            ok, why = verdict(filters["fineweb"].filter(Document(text=cleaned, id=d["id"])))
            first = None if ok else f"fineweb/{why}"
        pipeline.append(first)
    return {"pipeline": pipeline, **alone}


def dc_decisions(docs: list[dict], batch_size: int) -> dict:
    batches = arrow_batches(docs, batch_size)
    out = {"pipeline": [r for b in batches for r in dc_heuristics()(b).column(REJECT_REASON).to_pylist()]}
    # one documented addition to the published rules (off by default): stop words per word
    tuned = HeuristicsConfig()
    tuned.gopher_quality.min_stop_word_ratio = STOP_RATIO
    out["pipeline_stop_ratio"] = [r for b in batches for r in Heuristics(tuned)(b).column(REJECT_REASON).to_pylist()]
    for name in RULE_SETS:
        stage = dc_heuristics(name)
        out[name] = [r for b in batches for r in stage(b).column(REJECT_REASON).to_pylist()]
    return out


def separation(docs: list[dict], reasons: list) -> dict:
    good = [r for d, r in zip(docs, reasons) if d["label"] == "good"]
    bad = [r for d, r in zip(docs, reasons) if d["label"] == "bad"]
    kept_good = sum(r is None for r in good) / len(good)
    rej_bad = sum(r is not None for r in bad) / len(bad)
    by_group = {}
    for d, r in zip(docs, reasons):
        g = by_group.setdefault(d["group"], [0, 0])
        g[0] += r is not None
        g[1] += 1
    return {"kept_good": kept_good, "rejected_bad": rej_bad, "balanced_accuracy": (kept_good + rej_bad) / 2,
            "n_good": len(good), "n_bad": len(bad),
            "rejected_by_group": {g: f"{a}/{n}" for g, (a, n) in sorted(by_group.items())},
            "good_reject_reasons": dict(Counter(r for r in good if r is not None).most_common(8))}


def gopher_punct_analysis(docs: list[dict], dt_gopher_reasons: list) -> dict:
    """GOOD docs rejected by datatrove's Gopher quality filter: why, and how many pass once
    punctuation-only tokens (spaCy tokens such as ``--``, ``''``, ``,``) are not counted as words."""
    import datatrove.pipeline.filters.gopher_quality_filter as gq
    from datatrove.data import Document
    from datatrove.utils.text import PUNCTUATION_SET, split_into_words

    rejected = [d for d, r in zip(docs, dt_gopher_reasons) if d["label"] == "good" and r is not None]
    reasons = Counter(r for d, r in zip(docs, dt_gopher_reasons) if d["label"] == "good" and r is not None)
    non_alpha = Counter()
    for d in rejected:
        non_alpha.update(w for w in split_into_words(d["text"]) if not any(c.isalpha() for c in w))
    original = gq.split_into_words
    gq.split_into_words = lambda text, lang: [w for w in original(text, lang) if any(c not in PUNCTUATION_SET for c in w)]
    try:
        flt = gq.GopherQualityFilter()
        flips = sum(verdict(flt.filter(Document(text=d["text"], id=d["id"])))[0] for d in rejected)
    finally:
        gq.split_into_words = original
    return {"good_rejected": len(rejected), "reasons": dict(reasons), "pass_without_punct_tokens": flips,
            "top_non_alpha_tokens": dict(non_alpha.most_common(12))}


# ----------------------------------------------------------------------------- report

def bench_machine_info() -> dict:
    import fasttext

    return {**machine_info(["datatrove", "fasttext-numpy2", "fasttext-numpy2-wheel", "pyarrow", "numpy", "spacy"]),
            "fasttext_module": fasttext.__file__}


def fmt_row(name, dps, ratio, sep=None, agree=""):
    kg = f"{100 * sep['kept_good']:.1f}" if sep else ""
    rb = f"{100 * sep['rejected_bad']:.1f}" if sep else ""
    ba = f"{100 * sep['balanced_accuracy']:.1f}" if sep else ""
    return f"| {name} | {dps:,.0f} | {ratio} | {kg} | {rb} | {ba} | {agree} |"


def markdown(res: dict) -> str:
    sp, q, lid = res["speed"], res["separation"], res["langid"]
    head = ["| system | docs/s/core | ratio (dc / dt) | kept good % | rejected bad % | balanced acc. % | label agreement |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    rows = [fmt_row("datacurate LangId", sp["langid/datacurate"], f"**{sp['langid/ratio']:.1f}x**", None,
                    f"{100 * lid['label_agreement']:.1f} % labels, {100 * lid['keep_agreement']:.1f} % keep/reject"),
            fmt_row("datatrove LanguageFilter", sp["langid/datatrove"], "1x")]
    rows += [fmt_row("datacurate Heuristics (all 4 sets)", sp["heuristics/datacurate"],
                     f"**{sp['heuristics/ratio']:.1f}x**", q["datacurate"]["pipeline"]),
             fmt_row(f"datacurate Heuristics + min_stop_word_ratio {STOP_RATIO}", sp["heuristics/datacurate"],
                     "(same run)", q["datacurate"]["pipeline_stop_ratio"]),
             fmt_row("datatrove GopherRep+GopherQuality+C4+FineWeb", sp["heuristics/datatrove"], "1x",
                     q["datatrove"]["pipeline"])]
    for name in RULE_SETS:
        rows += [fmt_row(f"datacurate {name}", sp[f"{name}/datacurate"], f"{sp[f'{name}/ratio']:.1f}x", q["datacurate"][name]),
                 fmt_row(f"datatrove {name}", sp[f"{name}/datatrove"], "1x", q["datatrove"][name])]
    return "\n".join(head + rows)


def group_table(res: dict) -> str:
    """Rejected per labelled group, both full pipelines side by side."""
    dc = res["separation"]["datacurate"]["pipeline"]["rejected_by_group"]
    dt = res["separation"]["datatrove"]["pipeline"]["rejected_by_group"]
    rows = ["| group | datacurate rejected | datatrove rejected |", "|---|---:|---:|"]
    rows += [f"| {g} | {dc[g]} | {dt[g]} |" for g in dc]
    return "\n".join(rows)


def update_readme(res: dict, path: Path) -> None:
    m, c = res["machine"], res["config"]
    g = res["gopher_punct"]
    body = "\n".join([
        README_BEGIN,
        f"Command: `{c['command']}`  ",
        f"Machine: {m['cpu_model']}, nproc {m['nproc']}, run pinned to core {m['pinned_to']} "
        f"(load average {m['loadavg_start'][0]} at start, {m['loadavg_end'][0]} at end); Python {m['python']}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + "  ",
        f"Documents: {c['n_timed']} timed (mean {c['mean_chars']:,.0f} chars; rule sets alone: the first {c['n_timed_per_set']}), {c['n_good']} GOOD / {c['n_bad']} BAD labelled; "
        f"median of {c['repeats']} runs ({c.get('clock', 'wall')} time); datacurate batches of {c['batch_size']}.",
        "",
        markdown(res),
        "",
        "Rejected per labelled group (full pipelines):",
        "",
        group_table(res),
        "",
        f"datatrove Gopher quality rejects {g['good_rejected']} of {c['n_good']} GOOD prose docs "
        f"({', '.join(f'{k}: {v}' for k, v in g['reasons'].items())}); {g['pass_without_punct_tokens']} of them pass "
        f"when punctuation-only tokens are not counted as words (most common non-alpha tokens: "
        + ", ".join(f"`{k}` {v}" for k, v in list(g["top_non_alpha_tokens"].items())[:8]) + ").",
        README_END,
    ])
    replace_block(path, README_BEGIN, README_END, body)


# ----------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # datatrove's four chained rule filters run ~30 docs/s on one core: 1500 docs x 3 runs
    # keep the whole benchmark near 4-5 minutes on an idle 2-core machine
    ap.add_argument("--docs", type=int, default=1500, help="documents timed per run")
    ap.add_argument("--per-set-docs", type=int, default=300, help="documents timed per rule set alone")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=1024, help="datacurate Arrow batch size")
    ap.add_argument("--doc-chars", type=int, default=4096, help="target document size")
    ap.add_argument("--degraded", type=int, default=100, help="degraded GOOD copies per kind (BAD)")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "langid_heuristics.json"))
    ap.add_argument("--readme", default=str(ROOT / "benchmarks" / "README.md"))
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="timer of the timed runs: wall, or this process's CPU time (a busy machine)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = clock(args.clock)

    from loguru import logger

    logger.remove()  # datatrove logs through loguru; keep the timed loops quiet

    t_start = time.perf_counter()
    load_start = open("/proc/loadavg").read().split()[:3]
    pool = build_docs(args.doc_chars, args.degraded, args.seed)
    timed_docs = [pool[i % len(pool)] for i in range(args.docs)]
    labelled = [d for d in pool if d["label"]]
    print(f"pool {len(pool)} docs ({Counter(d['group'].split('/')[0] for d in pool)}), timing {len(timed_docs)}",
          file=sys.stderr)

    # set-up (model loads) and untimed decision passes, which also warm both systems up
    t0 = time.perf_counter()
    dc_lid, dt_lid = LangId(languages=["en"]), dt_language_filter()
    filters = dt_filters()
    dc_lid_out = [b for b in (dc_lid(t) for t in arrow_batches(timed_docs, args.batch_size))]
    dc_lang = [x for b in dc_lid_out for x in b.column("lang").to_pylist()]
    dc_keep = [x is None for b in dc_lid_out for x in b.column(REJECT_REASON).to_pylist()]
    dt_lang, dt_keep = [], []
    for doc in dt_docs(timed_docs):
        dt_keep.append(verdict(dt_lid.filter(doc))[0])
        dt_lang.append(doc.metadata["language"])
    disagree = Counter((a, b) for a, b in zip(dc_lang, dt_lang) if a != b)
    langid = {"label_agreement": sum(a == b for a, b in zip(dc_lang, dt_lang)) / len(dc_lang),
              "keep_agreement": sum(a == b for a, b in zip(dc_keep, dt_keep)) / len(dc_keep),
              "kept_datacurate": sum(dc_keep), "kept_datatrove": sum(dt_keep),
              "label_disagreements": {f"{a}/{b}": n for (a, b), n in disagree.most_common(10)}}
    dq, tq = dc_decisions(labelled, args.batch_size), dt_decisions(filters, labelled)
    sep = {"datacurate": {k: separation(labelled, v) for k, v in dq.items()},
           "datatrove": {k: separation(labelled, v) for k, v in tq.items()}}
    gopher = gopher_punct_analysis(labelled, tq["gopher_quality"])
    print(f"decision passes {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    # timed runs (both systems are warm: the decision passes above ran them)
    batches = arrow_batches(timed_docs, args.batch_size)
    dc_all = dc_heuristics()
    order = [filters[k] for k in ["gopher_repetition", "gopher_quality", "c4", "fineweb"]]
    runs = timed({
        "langid/datacurate": (lambda b: dc_run(dc_lid, b), lambda: batches),
        "langid/datatrove": (lambda d: dt_pipeline([dt_lid], d), lambda: dt_docs(timed_docs)),
        "heuristics/datacurate": (lambda b: dc_run(dc_all, b), lambda: batches),
        "heuristics/datatrove": (lambda d: dt_pipeline(order, d), lambda: dt_docs(timed_docs)),
    }, args.repeats)
    n_docs = {k: len(timed_docs) for k in runs}
    print(f"timed langid + heuristics {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    # each rule set alone, on the first --per-set-docs of the same documents
    subset = timed_docs[: args.per_set_docs]
    sub_batches = arrow_batches(subset, args.batch_size)
    cases = {}
    for name in RULE_SETS:
        stage = dc_heuristics(name)
        stage(sub_batches[0])
        cases[f"{name}/datacurate"] = (lambda b, s=stage: dc_run(s, b), lambda: sub_batches)
        cases[f"{name}/datatrove"] = (lambda d, f=filters[name]: dt_pipeline([f], d), lambda: dt_docs(subset))
    runs.update(timed(cases, args.repeats))
    n_docs.update({k: len(subset) for k in cases})
    print(f"timed rule sets {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    speed = {k: n_docs[k] / statistics.median(v) for k, v in runs.items()}
    for k in ["langid", "heuristics", *RULE_SETS]:
        speed[f"{k}/ratio"] = speed[f"{k}/datacurate"] / speed[f"{k}/datatrove"]

    res = {
        "config": {"command": " ".join(["benchmarks/.venv/bin/python benchmarks/bench_langid_heuristics.py",
                                        *sys.argv[1:]]),
                   "clock": args.clock, "n_timed": len(timed_docs), "n_timed_per_set": len(subset), "n_pool": len(pool), "repeats": args.repeats,
                   "batch_size": args.batch_size, "doc_chars": args.doc_chars,
                   "mean_chars": statistics.mean(len(d["text"]) for d in timed_docs),
                   "n_good": sum(d["label"] == "good" for d in labelled),
                   "n_bad": sum(d["label"] == "bad" for d in labelled),
                   "groups": dict(sorted(Counter(d["group"] for d in pool).items())),
                   "datatrove_langid_model": f"LanguageFilter.model._model = fasttext _FastText({DEFAULT_MODEL.name})"},
        "machine": {**bench_machine_info(), "loadavg_start": load_start, "loadavg_end": open("/proc/loadavg").read().split()[:3]},
        "seconds": runs,
        "speed": speed,
        "langid": langid,
        "separation": sep,
        "gopher_punct": gopher,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    update_readme(res, Path(args.readme))
    print(markdown(res))
    print(group_table(res))
    print(f"total {time.perf_counter() - t_start:.0f}s", file=sys.stderr)
    print(json.dumps({"langid": langid, "gopher_punct": gopher}, indent=1))


if __name__ == "__main__":
    main()
