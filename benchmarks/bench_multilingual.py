"""The multilingual test set through the recipe, and side by side with datatrove's
multilingual filters run with FineWeb-2's configs: per-language figures, agreement, and
CPU seconds per core.

    python benchmarks/bench_multilingual.py [--repeats 3] [--dt-python /work/venvs/dt/bin/python]

Four measurements on the documents of ``sample_data/multilingual/build.py`` (48
language-scripts, 7 documents each, 8 in 17 of them):

1. **recipe**: ``pipelines/multilingual.yaml``'s ``langid`` + ``heuristics`` as configured
   there (the ``wrong_lang`` variant against a keep-list of its own language): per language,
   good prose kept and degraded variants rejected (tests/multilingual.py's expectations).
2. **rules, side by side**: our ``heuristics`` (FineWeb-2's figures, ``language_rules:
   fineweb2``) and datatrove's ``GopherRepetitionFilter`` + ``FineWebQualityFilter`` +
   ``GopherQualityFilter`` with FineWeb-2's config of the language-script, as
   ``fineweb-2-pipeline.py`` calls them (benchmarks/dt_fineweb2_filters.py, in datatrove's own
   venv), both told each document's true language and script (FineWeb-2 filters a language's
   data after GlotLID labelled it). The ``wrong_lang`` variant is langid's business and
   left out. Agreement: the share of documents both keep or both reject.
3. **CPU seconds per pass** of (2) on one pinned core (``time.process_time``), each side's
   word segmenters loaded before timing; documents and MB per CPU second.
4. **Tokenizer**: tokens per character of each language's second good document with the
   shipped English byte-level BPE and with one of the same size (8k) trained on every
   language's first good document.

The machine is shared with other jobs: CPU seconds, not wall time, are reported.
"""

from __future__ import annotations

import _common  # noqa: F401 - first: one core, one thread
from _common import ROOT, bench_parser, emit, loadavg, machine_info, replace_block

import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402
import yaml  # noqa: E402

from datacurate.stages.heuristics import Heuristics  # noqa: E402
from datacurate.text.langrules import fineweb2  # noqa: E402
from tests import multilingual as ml  # noqa: E402

# language-scripts datatrove cannot split into words here: botok downloads its dictionary
# from GitHub on first use (no network but the package registries)
DT_UNAVAILABLE = {"bod_Tibt": "datatrove's Tibetan tokenizer (botok) downloads its dictionary at first use: offline here"}
# datatrove's reason strings in this package's names (the test set's expectations use ours)
DT_REASONS = {"gopher/gopher_short_doc": "gopher/too_few_words", "gopher/gopher_long_doc": "gopher/too_many_words",
              "gopher/gopher_below_avg_threshold": "gopher/mean_word_length",
              "gopher/gopher_above_avg_threshold": "gopher/mean_word_length",
              "gopher/gopher_too_many_hashes": "gopher/symbol_word_ratio",
              "gopher/gopher_too_many_ellipsis": "gopher/symbol_word_ratio",
              "gopher/gopher_too_many_bullets": "gopher/bullet_lines",
              "gopher/gopher_too_many_end_ellipsis": "gopher/ellipsis_lines",
              "gopher/gopher_below_alpha_threshold": "gopher/alpha_words",
              "gopher/gopher_enough_stop_words": "gopher/stop_words"}
BEGIN, END = "<!-- multilingual:begin -->", "<!-- multilingual:end -->"


def iso_key(lang: str, script: str) -> str | None:
    """FineWeb-2's config of the language-script (zh Hans / Hant: its one Han config); None
    for English, which FineWeb-2 left to FineWeb."""
    by_script = fineweb2()["lid176"].get(lang) or {}
    return by_script.get(script) or next(iter(by_script.values()), None)


def write_configs(keys: set[str], into: Path) -> None:
    """FineWeb-2's YAML configs from the shipped table (the same figures; n-grams as lists)."""
    for key in keys:
        cfg = dict(fineweb2()["configs"][key])
        for k in ("top_n_grams", "dup_n_grams"):
            cfg[k] = [[int(n), v] for n, v in cfg[k].items()]
        (into / f"{key}.yml").write_text(yaml.safe_dump(cfg, allow_unicode=True))


def ours(docs: list[dict], repeats: int) -> tuple[list, float]:
    table = pa.table({"text": [d["text"] for d in docs], "lang": [d["expect_lang"] for d in docs],
                      "lang_script": [d["script"] for d in docs]})
    stage = Heuristics(language_rules="fineweb2")
    reasons = stage(table).column("reject_reason").to_pylist()  # untimed: loads the segmenters
    t0 = time.process_time()
    for _ in range(repeats):
        stage(table)
    return reasons, (time.process_time() - t0) / repeats


def datatrove(docs: list[dict], repeats: int, python: str) -> tuple[list, float]:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_configs({d["iso"] for d in docs}, tmp)
        with open(tmp / "docs.jsonl", "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"id": d["id"], "text": d["text"], "iso": d["iso"]}, ensure_ascii=False) + "\n")
        subprocess.run([python, str(ROOT / "benchmarks" / "dt_fineweb2_filters.py"), str(tmp / "docs.jsonl"),
                        str(tmp), str(tmp / "out.jsonl"), str(repeats)], check=True)
        lines = [json.loads(x) for x in (tmp / "out.jsonl").read_text().splitlines()]
    return [r["reason"] for r in lines[:-1]], lines[-1]["cpu_seconds_per_pass"]


def tokenizer_efficiency(docs: list[dict], vocab_size: int = 8192) -> dict:
    """Tokens per character of each language's second good document: the shipped English
    byte-level BPE (8k) against one of the same size trained on the first good documents
    of all 48 language-scripts (held out: no second half was trained on)."""
    from datacurate.formats.tokenizer import load_tokenizer, train_tokenizer

    english = load_tokenizer()[0]
    train = [d["text"] for d in docs if d["id"].endswith("-good-1")]
    multi = train_tokenizer(iter([train]), vocab_size=vocab_size, min_frequency=2)
    out = {}
    for d in docs:
        if d["id"].endswith("-good-2"):
            chars = len(d["text"])
            out[f"{d['expect_lang']}_{d['script']}"] = {
                "english_bpe": round(len(english.encode(d["text"]).ids) / chars, 3),
                "multilingual_bpe": round(len(multi.encode(d["text"]).ids) / chars, 3)}
    return out


def expected(doc: dict, reason) -> bool:
    """The decision the set expects: good prose kept, a degraded variant rejected (whatever
    the rule: datatrove runs repetition first, so its snippets fall to ``top_n_gram``)."""
    return (reason is None) == (doc["variant"] == "good")


def main() -> None:
    ap = bench_parser(__doc__, "multilingual.json")
    ap.add_argument("--dt-python", default="/work/venvs/dt/bin/python")
    args = ap.parse_args()
    docs = ml.documents()
    recipe = ml.judge(docs)
    rules = [dict(d, iso=iso_key(d["expect_lang"], d["script"])) for d in docs if d["variant"] != "wrong_lang"
             and iso_key(d["expect_lang"], d["script"]) not in (None, *DT_UNAVAILABLE)]
    our_reasons, our_cpu = ours(rules, args.repeats)
    dt_reasons, dt_cpu = datatrove(rules, args.repeats, args.dt_python)
    mb = sum(len(d["text"].encode()) for d in rules) / 1e6
    per = defaultdict(lambda: defaultdict(int))
    for d in recipe:
        p = per[f"{d['expect_lang']}_{d['script']}"]
        ok = ml.verdict(d) is None
        p["good" if d["variant"] == "good" else "bad"] += 1
        p["good_kept" if d["variant"] == "good" else "bad_rejected"] += ok
        if not ok:
            p.setdefault("misses", [])
            per[f"{d['expect_lang']}_{d['script']}"]["misses"].append(f"{d['variant']}: {ml.verdict(d)}")
    for d, a, b in zip(rules, our_reasons, dt_reasons):
        p = per[f"{d['expect_lang']}_{d['script']}"]
        p["n_rules"] += 1
        p["agree"] += (a is None) == (b is None)
        p["ours_expected"] += expected(d, a)
        p["dt_expected"] += expected(d, b)
        for side, r in (("ours", a), ("datatrove", DT_REASONS.get(b, b))):
            if not expected(d, r):
                p.setdefault("unexpected", []).append(f"{side} {d['variant']}: {r or 'kept'}")
        if (a is None) != (b is None):
            p.setdefault("disagree", [])
            p["disagree"].append(f"{d['variant']}: ours {a or 'kept'}, datatrove {b or 'kept'}")
    n = len(rules)
    res = {"machine": machine_info(["datacurate", "pyarrow", "rjieba", "pythainlp", "PyICU"]), "loadavg": loadavg(),
           "documents": len(docs), "rule_documents": n, "rule_mb": round(mb, 3),
           "cpu_seconds_per_pass": {"ours": round(our_cpu, 4), "datatrove": round(dt_cpu, 4)},
           "docs_per_cpu_second": {"ours": round(n / our_cpu, 1), "datatrove": round(n / dt_cpu, 1)},
           "mb_per_cpu_second": {"ours": round(mb / our_cpu, 3), "datatrove": round(mb / dt_cpu, 3)},
           "agreement": round(sum(p["agree"] for p in per.values()) / n, 4),
           "expected": {"ours": sum(p["ours_expected"] for p in per.values()),
                        "datatrove": sum(p["dt_expected"] for p in per.values()), "of": n},
           "not_side_by_side": {"en_Latn": "FineWeb-2 has no English config", **DT_UNAVAILABLE},
           "per_language": {k: dict(v) for k, v in per.items()},
           "tokens_per_char": tokenizer_efficiency(docs)}
    emit(res, args.out)
    replace_block(Path(args.readme), BEGIN, END, readme_block(res))


def readme_block(res: dict) -> str:
    rows = ["| language | recipe: good kept | recipe: degraded rejected | rules agree with datatrove "
            "| rules decide as expected: ours / datatrove | tokens per char: English BPE / multilingual BPE "
            "| misses (recipe) |", "|---|---:|---:|---:|---:|---:|---|"]
    for k, p in res["per_language"].items():
        t = res["tokens_per_char"][k]
        side = (f"{p['agree']}/{p['n_rules']} | {p['ours_expected']} / {p['dt_expected']} of {p['n_rules']}"
                if p.get("n_rules") else "not compared | ")
        rows.append(f"| {k} | {p['good_kept']}/{p['good']} | {p['bad_rejected']}/{p['bad']} | {side} "
                    f"| {t['english_bpe']} / {t['multilingual_bpe']} | {'; '.join(p.get('misses', []))} |")
    c, d = res["cpu_seconds_per_pass"], res["docs_per_cpu_second"]
    return "\n".join([
        BEGIN, "### Multilingual rules: the recipe per language, and datatrove with FineWeb-2's configs",
        "", f"`python benchmarks/bench_multilingual.py` (results/multilingual.json; one pinned core of a "
        f"machine shared with other jobs, load {' '.join(res['loadavg'])}: CPU seconds). {res['documents']} documents "
        f"of the multilingual test set; {res['rule_documents']} ({res['rule_mb']} MB) without the wrong-language "
        "variant for the rules side by side.", "",
        f"- Rules, one pass, CPU seconds: ours **{c['ours']}**, datatrove **{c['datatrove']}** "
        f"({d['ours']} / {d['datatrove']} documents per CPU second, "
        f"{res['mb_per_cpu_second']['ours']} / {res['mb_per_cpu_second']['datatrove']} MB/s).",
        f"- Agreement (both keep or both reject): **{100 * res['agreement']:.1f} %**; documents decided as the "
        f"test set expects (good kept, degraded rejected, by any rule): ours {res['expected']['ours']}, datatrove {res['expected']['datatrove']} of "
        f"{res['expected']['of']}.",
        "- Not side by side: " + "; ".join(f"{k}: {v}" for k, v in res["not_side_by_side"].items()) + ".",
        "", *rows, END])


if __name__ == "__main__":
    main()
