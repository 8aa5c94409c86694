"""``datacurate calibrate``: per-language thresholds fitted on a sample of the user's corpus.

FineWeb-2 (Penedo et al. 2025, "FineWeb2: One Pipeline to Scale Them All") derives every
threshold of a language from statistics of that language's data. What is fitted here, by
which rule:

- **langid's cut-off**: tau = max(0.3, min(0.9, median - std)) of the language's top-1
  scores (FineWeb-2's formula, from its paper).
- **stop words**: the language's most frequent words: every word making more than 0.8 % of
  the language's word occurrences (0.3 %, then 0.2 %, when that gives fewer than 8), numbers
  and punctuation left out. These shares are those of a public threshold-fitting script over
  datatrove's ``LanguageStatsCollector`` (its ``to_clean_stopwords``; it fits Wikipedia and
  CommonCrawl samples of FineWeb-2's canary languages, and a sibling script's paths name one of
  the paper's authors; it is not in the fineweb-2 repository, so the attribution is ours).
- **every rule's threshold, by quantile transfer**: the threshold removes from the language the
  same share of its documents that the English threshold (the stage's keys: FineWeb's) removes
  from the English documents of the same sample. Where the sample has too few English
  documents, the shares of that script's quantile mode (``filters_q``) are used for the rules
  it sets: mean word length 0.01 % on each side, words with a letter 25 %, lines ending in
  punctuation 20 %, newlines per word 3 %; the repetition rules are then not fitted (the
  shipped values stay). FineWeb-2's repository publishes the fitted configs, not the fitting
  code; this is the quantile method as we read it, and the paper's own comparison of methods
  (English thresholds as they are, quantiles, mean and standard deviation) is where to check it.
  Word lengths are rounded to whole characters (as FineWeb-2's configs give them), the rest to
  three decimals.

The statistics are the ones the ``heuristics`` rules judge (:mod:`datacurate.stages.heuristics`),
on words from :mod:`datacurate.text.words`; the sample is each language's first ``sample``
documents in input order (deterministic). Writes a YAML (``languages: {fr: {langid:
{min_score}, gopher_quality: {...}, ...}}``) that ``langid`` and ``heuristics`` take as
``thresholds:``, and an HTML page with each language's distributions and the cuts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import yaml

from datacurate.core.schema import LANG, LANG_SCRIPT
from datacurate.report import svg
from datacurate.stages import heuristics as hr
from datacurate.stages.langid import LangId
from datacurate.text import rulestats as rs
from datacurate.text import textstats as ts
from datacurate.text import words as words_mod
from datacurate.text.langrules import fineweb2
from datacurate.text.layout import layout_normalized

REFERENCE = "en"
# (section, threshold key, statistic, "<" or ">", share when there is no English reference)
FITTED = [
    ("gopher_quality", "min_mean_word_length", "mean_word_length", "<", 0.0001),
    ("gopher_quality", "max_mean_word_length", "mean_word_length", ">", 0.0001),
    ("gopher_quality", "min_alpha_words_ratio", "alpha_words_ratio", "<", 0.25),
    ("gopher_repetition", "max_dup_line_frac", "dup_line_frac", ">", None),
    *[("gopher_repetition", f"max_top_ngram_char_frac.{n}", f"top_{n}gram", ">", None) for n in (2, 3, 4)],
    *[("gopher_repetition", f"max_dup_ngram_char_frac.{n}", f"dup_{n}gram", ">", None) for n in range(5, 11)],
    ("fineweb", "min_line_punct_ratio", "line_punct_ratio", "<", 0.2),
    ("fineweb", "max_list_ratio", "list_ratio", ">", 0.03),
]
STOP_SHARES = (0.008, 0.003, 0.002)


@dataclass
class Sample:
    """One language's statistics: per-document values and word counts."""

    values: dict  # statistic -> list of arrays
    words: dict  # word -> occurrences
    n: int = 0


def statistics(table: pa.Table) -> tuple[np.ndarray, dict]:
    """(each row's language, {statistic: (n,) values}) of a batch with ``text``, ``lang``."""
    texts = layout_normalized(table.column("text").combine_chunks())
    langs = table.column(LANG).combine_chunks()
    words = words_mod.words_of(texts, langs)
    word_len = words.lengths()
    values = rs.quality_values(texts, words, word_len)
    values.update(rs.repetition_values(texts, words, word_len, [2, 3, 4], list(range(5, 11))))
    values.update(rs.fineweb_values(texts, words.counts, 30))
    if "lang_score" in table.column_names:
        values["lang_score"] = np.asarray(table.column("lang_score").to_numpy(zero_copy_only=False), dtype=np.float64)
    values["_words"] = words
    return group_keys(table), values


def group_keys(table: pa.Table) -> np.ndarray:
    """Each row's key in the thresholds file: its language, with its script (``sr_Latn``) where
    the language is written in several (FineWeb-2 fits each language-script apart)."""
    langs = np.asarray(table.column(LANG).cast(pa.string()).fill_null("und").to_numpy(zero_copy_only=False),
                       dtype=object)
    if LANG_SCRIPT not in table.column_names:
        return langs
    scripts = np.asarray(table.column(LANG_SCRIPT).cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False),
                         dtype=object)
    lid = fineweb2()["lid176"]
    codes, inv = np.unique(langs.astype(str), return_inverse=True)
    several = np.array([len(lid.get(code) or {}) > 1 for code in codes], dtype=bool)[inv]  # per distinct language
    with_script = np.char.add(np.char.add(langs.astype(str), "_"), scripts.astype(str)).astype(object)
    return np.where(several & (scripts != ""), with_script, langs)


def collect(tables, languages: Optional[list[str]], sample: int, langid: Optional[LangId]) -> dict[str, Sample]:
    out: dict[str, Sample] = {}
    for t in tables:
        if LANG not in t.column_names:
            t = langid(t.select(["text"]))
        langs, values = statistics(t)
        words: ts.Pieces = values.pop("_words")
        lower = pc.utf8_lower(words.values)
        for lang in np.unique(langs):
            if lang == "und" or (languages and lang not in languages and lang.split("_")[0] not in languages
                                 and lang != REFERENCE):
                continue
            s = out.setdefault(lang, Sample({}, {}))
            rows = np.flatnonzero(langs == lang)[: max(sample - s.n, 0)]
            if not len(rows):
                continue
            s.n += len(rows)
            for k, v in values.items():
                s.values.setdefault(k, []).append(np.asarray(v)[rows])
            mine = np.isin(words.doc, rows)
            vc = pc.value_counts(lower.filter(pa.array(mine)))
            for w, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                s.words[w] = s.words.get(w, 0) + c
    return out


def stop_words(counts: dict) -> list[str]:
    """The most frequent words: shares above 0.8 % (0.3 %, 0.2 % when fewer than 8)."""
    total = sum(counts.values()) or 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    clean = [(w, c) for w, c in ranked if any(ch.isalpha() for ch in w)]
    for share in STOP_SHARES:
        found = [w for w, c in clean if c > share * total]
        if len(found) >= 8:
            return found
    return found


def tail_share(values: np.ndarray, op: str, threshold: float) -> float:
    """The share of documents an English threshold removes."""
    v = values[np.isfinite(values)]
    return float(np.mean(v < threshold) if op == "<" else np.mean(v > threshold)) if len(v) else 0.0


def cut(values: np.ndarray, op: str, share: float) -> float:
    """The threshold removing ``share`` of ``values`` (the low tail for "<", the high tail for ">")."""
    v = values[np.isfinite(values)]
    return float(np.quantile(v, share if op == "<" else 1.0 - share))


def fit(samples: dict[str, Sample], english: dict, min_docs: int) -> tuple[dict, dict]:
    """({lang: thresholds tree}, {lang: {statistic: (values, cut)}} for the page)."""
    ref = samples.get(REFERENCE)
    shares = {}
    for section, key, stat, op, fallback in FITTED:
        if ref is not None and ref.n >= min_docs:
            shares[(section, key)] = tail_share(np.concatenate(ref.values[stat]), op, english[f"{section}.{key}"])
        elif fallback is not None:
            shares[(section, key)] = fallback
    out, plots = {}, {}
    for lang, s in sorted(samples.items()):
        if s.n < min_docs:
            continue
        tree: dict = {}
        plots[lang] = {}
        if "lang_score" in s.values:
            scores = np.concatenate(s.values["lang_score"])
            tau = max(0.3, min(0.9, float(np.median(scores) - np.std(scores))))
            tree["langid"] = {"min_score": round(tau, 3)}
            plots[lang]["lang_score"] = (scores, tau)
        for (section, key), share in shares.items():
            stat = next(f[2] for f in FITTED if f[:2] == (section, key))
            op = next(f[3] for f in FITTED if f[:2] == (section, key))
            vals = np.concatenate(s.values[stat])
            value = cut(vals, op, share)
            value = round(value) if "word_length" in key else round(value, 3)
            head, _, n = key.partition(".")
            node = tree.setdefault(section, {})
            if n:
                node.setdefault(head, {})[int(n)] = value
            else:
                node[key] = value
            plots[lang][f"{section}.{key}"] = (vals, value)
        tree.setdefault("gopher_quality", {})["stop_words"] = stop_words(s.words)
        out[lang] = tree
    return out, plots


def page_html(plots: dict, where: str) -> bytes:
    parts = []
    for lang, stats in plots.items():
        figs = []
        for name, (vals, value) in stats.items():
            v = vals[np.isfinite(vals)]
            if not len(v):
                continue
            lo, hi = float(min(v.min(), value)), float(max(v.max(), value))
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, 31)
            counts, _ = np.histogram(v, bins=edges)
            figs.append(svg.histogram(f"{lang}: {name}", edges, {"documents": counts}, threshold=value, note="cut",
                                      xlabel=name))
        parts.append(svg.section(f"{lang} ({len(next(iter(stats.values()))[0]) if stats else 0} documents)", *figs))
    return svg.page("calibrate", "Per-language thresholds", where, "".join(parts))


def calibrate(inputs: list[str], out: str, languages: Optional[list[str]] = None, sample: int = 20_000,
              min_docs: int = 50, text_field: str = "text", html: Optional[str] = None) -> dict:
    """Fit, write ``out`` (YAML) and the HTML page beside it; return the fitted tree."""
    from datacurate.configs.input import InputConfig
    from datacurate.formats.io import plan_reads, read_task

    inp = InputConfig(path=list(inputs), text_field=text_field)
    langid = LangId()

    def tables():
        for task in plan_reads(inp, reserved={}):  # every field of a record: lang, lang_score where given
            for t in read_task(task, inp):
                yield t.filter(pc.is_null(t.column("reject_reason")))

    samples = collect(tables(), languages, sample, langid)
    english = hr.HeuristicsConfig(language_rules="none").table().resolve(REFERENCE)[0]
    fitted, plots = fit(samples, english, min_docs)
    if languages:
        wanted = lambda k: k in languages or k.split("_")[0] in languages  # noqa: E731 - sr: sr_Cyrl and sr_Latn
        fitted = {k: v for k, v in fitted.items() if wanted(k)}
        plots = {k: v for k, v in plots.items() if wanted(k)}
    doc = {"source": "datacurate calibrate (FineWeb-2's method; see datacurate/calibrate.py)",
           "inputs": list(inputs), "sample_docs": {k: samples[k].n for k in fitted}, "languages": fitted}
    Path(out).write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False))
    page = html or str(Path(out).with_suffix(".html"))
    Path(page).write_bytes(page_html(plots, ", ".join(inputs)))
    return {"languages": fitted, "html": page, "skipped": {k: s.n for k, s in samples.items() if s.n < min_docs}}
