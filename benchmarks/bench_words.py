"""Words for every script: cost per language and agreement, datacurate against datatrove.

For each language written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Burmese,
Tibetan script), for Korean (spaced, but cut into Kiwi's morphemes) and for English (the
fast path), on the same texts, one core, CPU time:

* **ours**: :func:`datacurate.text.words.split_words` (whitespace in Arrow, the runs of the
  unspaced script through the default segmenter of :mod:`datacurate.text.segmenters`);
* **candidates**: each segmenter on the package index alone (rjieba, jieba, ICU via icu4py,
  SudachiPy mode A, fugashi + unidic-lite, PyThaiNLP newmm-safe, LaoNLP, khmer-nltk,
  pyidaungsu), called once per document;
* **datatrove**: ``load_word_tokenizer(<iso639-3>_<Script>).word_tokenize`` (the keys
  FineWeb-2's configs use), once per document;
* **a stage's cost**: MinHash signatures (128 permutations, 5-word shingles) of the same texts.

Agreement: word-span F1 against datatrove's words (FineWeb-2 fitted its per-language
thresholds on them), counting only words made of the unspaced script's characters, each
located in the text in order (punctuation and Latin words are left out: the tokenizers
differ there by design, not in segmentation).

Texts: the Chinese and Japanese man pages of sample_data (Debian manpages-zh / -ja), and
every translated message of the Debian 12 ``.mo`` catalogues installed here for each
locale (apt, dpkg, glib, gtk, PackageKit ...; GPL / LGPL), joined into ~2 KB documents;
English: sample_data's news. Run it in a venv with datatrove (never the project's):

    /work/venvs/dt/bin/python benchmarks/bench_words.py --repeats 3

(``pip install "datatrove[processing]" spacy jieba sudachipy sudachidict-core pythainlp laonlp
khmer-nltk pyidaungsu-numpy2 fugashi unidic-lite icu4py rjieba pandas pyyaml``). Results:
``benchmarks/results/words.json`` and the table in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gettext
import json
import re
import statistics
import time
from pathlib import Path

from _common import CORPUS, N_CPUS_VISIBLE, ROOT, read_jsonl, replace_block

import pyarrow as pa  # noqa: E402

from datacurate.text import minhash  # noqa: E402
from datacurate.text import segmenters as seg  # noqa: E402
from datacurate.text import words  # noqa: E402

LANGS = {  # ours -> (locale directory, datatrove key, script characters)
    "zh": ("zh_CN", "cmn_Hani", "\u4e00-\u9fff\u3400-\u4dbf"),
    "ja": ("ja", "jpn_Jpan", "\u3040-\u30ff\u4e00-\u9fff\u3005"),
    "th": ("th", "tha_Thai", "\u0e00-\u0e7f"),
    "lo": ("lo", "lao_Laoo", "\u0e80-\u0eff"),
    "km": ("km", "khm_Khmr", "\u1780-\u17ff"),
    "my": ("my", "mya_Mymr", "\u1000-\u109f"),
    "dz": ("dz", "dzo_Tibt", "\u0f00-\u0f0a\u0f0d-\u0fff"),  # Tibetan script, the tsheg excluded
    "ko": ("ko", "kor_Hang", "\uac00-\ud7af"),  # spaced, but FineWeb-2 counts Kiwi's morphemes
}


def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba.lcut


def _fugashi():
    import fugashi

    tagger = fugashi.Tagger()
    return lambda t: [w.surface for w in tagger(t)]


def _pyidaungsu():
    import pyidaungsu as pds

    return lambda t: pds.tokenize(t, form="word")


def _ours(name, lang):
    fn = seg.load(name)
    if seg.SEGMENTERS[name].batch:  # fn(runs) -> words of each: the document's space-separated words as runs
        return lambda t: [x for ws in fn(t.split(), lang) for x in ws]
    return lambda t: fn(t, lang)


CANDIDATES = {
    "zh": {"rjieba": lambda: _ours("rjieba", "zh"), "jieba": _jieba, "icu": lambda: _ours("icu", "zh")},
    "ja": {"icu": lambda: _ours("icu", "ja"), "sudachipy (A)": lambda: _ours("sudachipy", "ja"), "fugashi": _fugashi},
    "th": {"icu": lambda: _ours("icu", "th"), "pythainlp": lambda: _ours("pythainlp", "th")},
    "lo": {"icu": lambda: _ours("icu", "lo"), "laonlp": lambda: _ours("laonlp", "lo")},
    "km": {"icu": lambda: _ours("icu", "km"), "khmer-nltk": lambda: _ours("khmer-nltk", "km")},
    "my": {"icu": lambda: _ours("icu", "my"), "pyidaungsu": _pyidaungsu},
    "dz": {"icu": lambda: _ours("icu", "dz")},
    "ko": {"kiwi (each word alone)": lambda: _ours("kiwi", "ko")},
}


def catalogue_docs(locale: str, limit: int = 300_000, size: int = 2000) -> tuple[list[str], list[str]]:
    """Translated messages of every .mo catalogue of ``locale``, joined into ~``size`` char
    documents; and the catalogues read."""
    base = Path("/usr/share/locale") / locale / "LC_MESSAGES"
    msgs, names = [], []
    for mo in sorted(base.glob("*.mo")) if base.is_dir() else []:
        with open(mo, "rb") as f:
            cat = gettext.GNUTranslations(f)._catalog
        names.append(mo.name)
        msgs += [v for k, v in cat.items() if k and isinstance(v, str) and v.strip()]
    docs, cur = [], []
    for m in msgs:
        cur.append(m)
        if sum(map(len, cur)) >= size:
            docs.append("\n".join(cur))
            cur = []
    if cur:
        docs.append("\n".join(cur))
    out, total = [], 0
    for d in docs:
        if total >= limit:
            break
        out.append(d)
        total += len(d)
    return out, names


def texts_for(lang: str) -> tuple[list[str], str]:
    docs, cats = catalogue_docs(LANGS[lang][0])
    source = f"Debian .mo catalogues ({LANGS[lang][0]}): {', '.join(cats)}" if cats else ""
    if lang in ("zh", "ja"):
        kana = re.compile("[\u3040-\u30ff]")
        pages = [r["text"] for r in read_jsonl(CORPUS / "technical_multilingual.jsonl")
                 if re.search("[\u4e00-\u9fff]", r["text"]) and bool(kana.search(r["text"])) == (lang == "ja")]
        docs = pages + docs
        source = f"sample_data man pages ({len(pages)}) + " + source
    if not docs:  # no catalogues on this machine: the test passages
        docs = json.loads((ROOT / "tests/data/words/passages.json").read_text())[lang]["passages"]
        source = "tests/data/words/passages.json"
    return docs, source


def timed(fn, docs, repeats: int) -> tuple[float, list]:
    """Median CPU seconds of ``fn`` over all ``docs``, and its output of the last run."""
    out, times = None, []
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn(docs)
        times.append(time.process_time() - t0)
    return statistics.median(times), out


def spans(text: str, toks: list[str], script: re.Pattern) -> set:
    """(start, end) of each token made of ``script`` characters only, found in order. A token
    that is not next in the text but overlaps the token before is found there: datatrove's Kiwi
    gives each morpheme of a contraction the span it shares (했 = 하 + 었 comes out as 했, 했;
    죄송합니다 as 죄송합, 합니다), and searching on for it would skip far ahead."""
    out, pos, last_at = set(), 0, None
    for t in toks:
        t = t.strip()
        if not t:
            continue
        at = text.find(t, pos)
        if at < 0 or text[pos:at].strip():  # not next in the text: overlapping the token before?
            back = text.find(t, last_at) if last_at is not None else -1
            if 0 <= back < pos:
                at = back
            elif at < 0:
                continue
        last_at, pos = at, max(pos, at + len(t))
        if script.fullmatch(t):
            out.add((at, at + len(t)))
    return out


def f1(gold: list[set], pred: list[set]) -> float:
    hit = sum(len(g & p) for g, p in zip(gold, pred))
    n = sum(len(g) for g in gold) + sum(len(p) for p in pred)
    return round(2 * hit / n, 4) if n else float("nan")


def run_lang(lang: str, repeats: int, dt) -> dict:
    docs, source = texts_for(lang)
    chars = sum(map(len, docs))
    script = re.compile(f"[{LANGS[lang][2]}]+")
    arr = pa.array(docs, pa.large_string())
    res = {"documents": len(docs), "chars": chars, "source": source, "default": seg.DEFAULT[lang], "tokenizers": {}}
    split = {}

    res["minhash_chars_per_s"] = round(chars / timed(lambda d: minhash.signatures(arr, 128, 5, 1, lang), docs, repeats)[0])
    cpu, p = timed(lambda d: words.split_words(arr, lang), docs, repeats)  # the Pieces, as the stages take them
    split["datacurate"] = [p.values[p.offsets[i]:p.offsets[i + 1]].to_pylist() for i in range(p.n_docs)]
    res["tokenizers"]["datacurate"] = {"cpu_s": cpu, "what": f"words.split_words (segmenter {seg.DEFAULT[lang]})"}
    for name, make in CANDIDATES[lang].items():
        try:
            fn = make()
            fn(docs[0])  # load dictionaries outside the clock
        except Exception as e:  # noqa: BLE001 - a candidate that cannot run here is reported, not fatal
            res["tokenizers"][name] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
            continue
        cpu, toks = timed(lambda ds: [fn(d) for d in ds], docs, repeats)
        split[name] = toks
        res["tokenizers"][name] = {"cpu_s": cpu}
    if dt is not None:
        try:
            tok = dt(LANGS[lang][1])
            tok.word_tokenize(docs[0])
            cpu, toks = timed(lambda ds: [tok.word_tokenize(d) for d in ds], docs, repeats)
            split["datatrove"] = toks
            res["tokenizers"]["datatrove"] = {"cpu_s": cpu, "what": f"{type(tok).__name__} ({LANGS[lang][1]})"}
        except Exception as e:  # noqa: BLE001
            res["tokenizers"]["datatrove"] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
    found = {k: [spans(d, t, script) for d, t in zip(docs, v)] for k, v in split.items()}
    for name, r in res["tokenizers"].items():
        if name not in split:
            continue
        n_words = sum(len([t for t in ts if t.strip()]) for ts in split[name])
        in_script = [b - a for doc in found[name] for a, b in doc]
        r.update(words=n_words, script_words=len(in_script),
                 mean_script_word_chars=round(sum(in_script) / max(1, len(in_script)), 3), words_per_s=round(n_words / r["cpu_s"]), chars_per_s=round(chars / r["cpu_s"]),
                 f1_vs_datatrove=f1(found["datatrove"], found[name]) if "datatrove" in found else None,
                 f1_vs_datacurate=f1(found["datacurate"], found[name]))
    return res


def run_spaced(repeats: int, dt, name: str, docs: list[str], source: str) -> dict:
    """Text of spaced scripts: ``split_words`` against the whitespace split it replaced (the
    fast path: one ASCII check, one RE2 scan of the non-ASCII rows). Short timings: 7x the
    repeats."""
    from datacurate.text import textstats as ts

    arr = pa.array(docs, pa.large_string())
    res = {"documents": len(docs), "chars": sum(map(len, docs)), "source": source, "tokenizers": {}}
    res["minhash_chars_per_s"] = round(res["chars"] / timed(lambda d: minhash.signatures(arr, 128, 5, 1, name), docs,
                                                            7 * repeats)[0])
    for label, fn in (("split_whitespace (before)", lambda d: ts.split_whitespace(arr)),
                      ("datacurate", lambda d: words.split_words(arr, name))):
        cpu, p = timed(fn, docs, 7 * repeats)
        res["tokenizers"][label] = {"cpu_s": cpu, "words": len(p.values), "words_per_s": round(len(p.values) / cpu),
                                    "chars_per_s": round(res["chars"] / cpu)}
    if dt is not None and name == "en":
        tok = dt("eng_Latn")
        tok.word_tokenize(docs[0])
        cpu, toks = timed(lambda ds: [tok.word_tokenize(d) for d in ds], docs, repeats)
        n = sum(map(len, toks))
        res["tokenizers"]["datatrove"] = {"cpu_s": cpu, "words": n, "words_per_s": round(n / cpu),
                                          "chars_per_s": round(res["chars"] / cpu), "what": "SpaCyTokenizer (eng_Latn)"}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/words.json"))
    ap.add_argument("--readme", default=None, help="write the table into this README's words block")
    args = ap.parse_args()
    try:
        from datatrove.utils.word_tokenizers import load_word_tokenizer as dt
        from importlib.metadata import version

        dt_version = version("datatrove")
    except ImportError:
        dt, dt_version = None, None
    import os

    load = os.getloadavg()[0]
    news = [r["text"] for r in read_jsonl(CORPUS / "news.jsonl")]
    tech = [r["text"] for r in read_jsonl(CORPUS / "technical_multilingual.jsonl")]
    tech = [t for t, u in zip(tech, words.unspaced_rows(pa.array(tech))) if not u]
    results = {"en": run_spaced(args.repeats, dt, "en", news, "sample_data/corpus/news.jsonl (ASCII)"),
               "spaced non-ASCII": run_spaced(args.repeats, None, None, tech, "sample_data technical_multilingual "
                                              "rows of spaced scripts (de, fr, es, it, pl, nl, pt, cs, ru, uk, en)")}
    for lang in args.langs.split(","):
        results[lang] = run_lang(lang, args.repeats, dt)
        print(lang, json.dumps({k: {x: v.get(x) for x in ("words_per_s", "chars_per_s", "f1_vs_datatrove", "error")}
                                for k, v in results[lang]["tokenizers"].items()}, ensure_ascii=False), flush=True)
    out = {"machine": f"shared, {N_CPUS_VISIBLE} cores visible, pinned to one; load {load:.2f} at start, "
                      f"{os.getloadavg()[0]:.2f} at end; CPU seconds (time.process_time), median of {args.repeats}",
           "datatrove": dt_version, "results": results}
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    print("wrote", args.out)
    if args.readme:
        replace_block(Path(args.readme), BEGIN, END, readme_block(out))
        print("table in", args.readme)


BEGIN, END = "<!-- words:begin -->", "<!-- words:end -->"


def _rate(x) -> str:
    if x is None:
        return "–"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} k"


def readme_block(out: dict) -> str:
    """benchmarks/README.md's table of a run (``--readme``), from what it wrote."""
    rows = [BEGIN, "Command: `PYTHONPATH=. /work/venvs/dt/bin/python benchmarks/bench_words.py --repeats 3 --readme "
            "benchmarks/README.md` (a venv with datatrove and\nevery candidate, `pip install \".[bench]\" "
            "pyidaungsu-numpy2`; never the project's: pyidaungsu replaces fastText)  ",
            f"Machine: {out['machine']}; datatrove {out['datatrove']}", "",
            "| language | tokenizer | words/s | chars/s | F1 vs datatrove | chars/word |", "|---|---|---:|---:|---:|---:|"]
    for lang, res in out["results"].items():
        for name, t in res["tokenizers"].items():
            label = name
            if name in ("datacurate", "datatrove") and t.get("what") and lang not in ("en", "spaced non-ASCII") \
                    or (name == "datatrove" and t.get("what")):
                label = f"{name}: {t['what']}"
            if t.get("error"):
                rows.append(f"| {lang} | {name} | – | – | – | – |")
                continue
            f1 = t.get("f1_vs_datatrove")
            rows.append(f"| {lang} | {label} | {_rate(t.get('words_per_s'))} | {_rate(t.get('chars_per_s'))} | "
                        f"{'' if f1 is None else f'{f1:.4f}'} | {t.get('mean_script_word_chars', '')} |")
    rows.append(END)
    return "\n".join(rows)


if __name__ == "__main__":
    main()
