"""Stage ``heuristics``: the published rule sets of Gopher, C4 and FineWeb.

Rule sets run in the order Gopher quality, Gopher repetition, C4, FineWeb (FineWeb,
Penedo et al. 2024, runs repetition first; quality first names short documents
``too_few_words`` rather than a repetition rule). A document is rejected with the first rule it fails, named in
its reason (``gopher/too_few_words``, ``gopher_rep/dup_line_frac``, ``c4/lorem_ipsum``,
``fineweb/list_ratio`` ...). Every threshold is configurable; the defaults are the
published ones (the README's ``heuristics`` table lists them): Gopher quality (Rae et al.
2021, appendix A.1.1), Gopher repetition (its table A1), C4 (Raffel et al. 2020, section
2.2: line removal rewrites ``text``, as C4 did; the number of removed lines is in
``c4_lines_removed``) and FineWeb's own rules.

Per language: every threshold is read per document from its ``lang`` (and ``lang_script``)
column through :mod:`datacurate.text.langrules` (FineWeb-2's configs, a ``datacurate
calibrate`` YAML, ``per_language`` overrides; English and unknown languages take the keys
below), gathered into per-row arrays; words come from :mod:`datacurate.text.words` by
language; sentence ends are per script (:data:`SCRIPT_ENDS`).

All statistics are computed over the whole batch at once (see ``textstats``), on the
layout-normalised view of the text (:mod:`datacurate.text.layout`: Unicode spaces as
spaces, invisible format characters out; the white space of RE2's regular expressions is ASCII);
C4's line removal cuts the stored text at the lines it judged there.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import LANG, LANG_SCRIPT, TEXT
from datacurate.text import textstats as ts
from datacurate.text import words as words_mod
from datacurate.text.langrules import RuleTable, Rows, flatten
from datacurate.text.layout import layout_normalized
from datacurate.stages.base import Stage, first_reason

log = logging.getLogger(__name__)

GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]
BULLETS = "•‣●○▪◦∙·*-–"
C4_POLICY = ["terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies"]
# sentence ends of the scripts that are not written with . ! ? (FineWeb-2: "sentence ends per
# script"): CJK 。！？ (and the halfwidth ｡), Devanagari / Bengali danda । ॥, Urdu ۔, Arabic
# ؟, Ethiopic ። ፧, Myanmar ။, Tibetan ། (shad), Khmer ។, Armenian ։. A union: no script uses
# another's end mark, so each document is judged by its own script's.
SCRIPT_ENDS = "\u3002\uff01\uff1f\uff61\u0964\u0965\u06d4\u061f\u1362\u1367\u104b\u0f0d\u17d4\u0589"
TERMINAL_RE = f'[.!?"{SCRIPT_ENDS}]$'  # C4: a line must end in terminal punctuation
# sentences C4 counts: Latin-style ends followed by a space (or the end), and the other
# scripts' end marks wherever they stand (CJK puts no space after them)
SENTENCE_RE = f"[.!?]+[\"'\\)\\]]*(\\s|$)|[{SCRIPT_ENDS}]+"
# terminal punctuation only (as datatrove's FineWeb filter): a closing quote alone is not an end
FINEWEB_STOP_RE = f"[.!?\u2026{SCRIPT_ENDS}]$"


@dataclass
class GopherQualityConfig:
    enabled: bool = True
    min_words: int = 50
    max_words: int = 100_000
    min_mean_word_length: float = 3.0
    max_mean_word_length: float = 10.0
    max_symbol_word_ratio: float = opt(0.1, "for '#' and for ellipses, each")
    max_bullet_lines_ratio: float = 0.9
    max_ellipsis_lines_ratio: float = 0.3
    min_alpha_words_ratio: float = 0.8
    min_stop_words: int = 2
    stop_words: list[str] = field(default_factory=lambda: list(GOPHER_STOP_WORDS))
    min_stop_word_ratio: float = opt(0.0, "not in Gopher (0 = off): stop words per word, as RedPajama-v2's stop-word "
                                     "fraction; 0.06 rejects keyword lists with a prose head, edited prose is >= 0.1")


@dataclass
class GopherRepetitionConfig:
    enabled: bool = True
    max_dup_line_frac: float = 0.30
    max_dup_para_frac: float = 0.30
    max_dup_line_char_frac: float = 0.20
    max_dup_para_char_frac: float = 0.20
    max_top_ngram_char_frac: dict[int, float] = field(default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16})
    max_dup_ngram_char_frac: dict[int, float] = field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
    )


@dataclass
class C4Config:
    enabled: bool = True
    filter_no_terminal_punct: bool = opt(True, 'drop lines not ending in . ! ? or " (FineWeb turns this off)')
    min_words_per_line: int = opt(3, "drop shorter lines")
    max_word_length: int = opt(1000, "drop lines with a longer word")
    filter_javascript: bool = opt(True, "drop lines mentioning javascript")
    filter_policy: bool = opt(True, "drop terms-of-use / privacy / cookie lines")
    filter_lorem_ipsum: bool = opt(True, 'reject documents with "lorem ipsum"')
    filter_curly_bracket: bool = opt(True, "reject documents with '{'")
    min_sentences: int = opt(5, "reject documents with fewer sentences left")


@dataclass
class FineWebConfig:
    enabled: bool = True
    min_line_punct_ratio: float = 0.12
    short_line_length: int = 30
    max_short_line_ratio: float = 0.67
    max_dup_line_char_ratio: float = 0.01
    max_list_ratio: float = opt(0.3, "newlines per word")


@dataclass
class HeuristicsConfig:
    gopher_quality: GopherQualityConfig = field(default_factory=GopherQualityConfig)
    gopher_repetition: GopherRepetitionConfig = field(default_factory=GopherRepetitionConfig)
    c4: C4Config = field(default_factory=C4Config)
    fineweb: FineWebConfig = field(default_factory=FineWebConfig)
    language_rules: str = opt("fineweb2", "thresholds per row's `lang`: fineweb2 = FineWeb-2's config of the "
                              "language (every lid.176 language but en/eml; README), none = the keys above for all")
    thresholds: Optional[str] = opt(None, "a YAML of per-language thresholds (`datacurate calibrate` writes one); "
                                    "over the shipped ones")
    per_language: dict[str, Any] = opt({}, "overrides per language, e.g. {fr: {gopher_quality: {min_stop_words: 3}}}; "
                             "over both")

    def validate(self) -> None:
        self.table()  # a misspelt key or an unreadable thresholds file stops the run before work starts

    def table(self) -> RuleTable:
        """The per-language thresholds over this config's keys (each language's default)."""
        default = {k: v for k, v in flatten({s.name: dataclasses.asdict(getattr(self, s.name))
                                             for s in dataclasses.fields(self)
                                             if dataclasses.is_dataclass(getattr(self, s.name))}).items()}
        return RuleTable(default, self.language_rules, self.thresholds, self.per_language)


def _b(arr) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False), dtype=bool)


def _ngram_sizes(r: Rows, key: str) -> list[int]:
    return sorted({int(k.rpartition(".")[2]) for rule in r.rules for k in rule if k.startswith(key + ".")})


# Each rule: (reason, [(statistic, "<" or ">", threshold key)]): a document fails when any
# comparison holds. ``datacurate calibrate`` fits thresholds on the same statistics.
GOPHER_QUALITY_RULES = [
    ("gopher/too_few_words", [("n_words", "<", "min_words")]),
    ("gopher/too_many_words", [("n_words", ">", "max_words")]),
    ("gopher/mean_word_length", [("mean_word_length", "<", "min_mean_word_length"),
                                 ("mean_word_length", ">", "max_mean_word_length")]),
    ("gopher/symbol_word_ratio", [("hash_word_ratio", ">", "max_symbol_word_ratio"),
                                  ("ellipsis_word_ratio", ">", "max_symbol_word_ratio")]),
    ("gopher/bullet_lines", [("bullet_lines_ratio", ">", "max_bullet_lines_ratio")]),
    ("gopher/ellipsis_lines", [("ellipsis_lines_ratio", ">", "max_ellipsis_lines_ratio")]),
    ("gopher/alpha_words", [("alpha_words_ratio", "<", "min_alpha_words_ratio")]),
    ("gopher/stop_words", [("stop_words", "<", "min_stop_words")]),
    ("gopher/stop_word_ratio", [("stop_word_ratio", "<", "min_stop_word_ratio")]),
]
GOPHER_REPETITION_RULES = [
    ("gopher_rep/dup_line_frac", [("dup_line_frac", ">", "max_dup_line_frac")]),
    ("gopher_rep/dup_para_frac", [("dup_para_frac", ">", "max_dup_para_frac")]),
    ("gopher_rep/dup_line_char_frac", [("dup_line_char_frac", ">", "max_dup_line_char_frac")]),
    ("gopher_rep/dup_para_char_frac", [("dup_para_char_frac", ">", "max_dup_para_char_frac")]),
]  # + gopher_rep/top_{n}gram and gopher_rep/dup_{n}gram for each n configured (repetition_rules)
FINEWEB_RULES = [
    ("fineweb/line_punct_ratio", [("line_punct_ratio", "<", "min_line_punct_ratio")]),
    ("fineweb/short_line_ratio", [("short_line_ratio", ">", "max_short_line_ratio")]),
    ("fineweb/char_dup_ratio", [("char_dup_ratio", ">", "max_dup_line_char_ratio")]),
    ("fineweb/list_ratio", [("list_ratio", ">", "max_list_ratio")]),
]


def judge(values: dict, rules: list, section: str, r: Rows) -> list:
    """(reason, failure mask) of each rule: its statistics against each row's thresholds."""
    out = []
    for reason, tests in rules:
        mask = False
        for stat, op, key in tests:
            thr = r[f"{section}.{key}"]
            mask = mask | ((values[stat] < thr) if op == "<" else (values[stat] > thr))
        out.append((reason, mask))
    return out


def repetition_rules(r: Rows) -> list:
    k = "gopher_repetition."
    top = [(f"gopher_rep/top_{n}gram", [(f"top_{n}gram", ">", f"max_top_ngram_char_frac.{n}")])
           for n in _ngram_sizes(r, k + "max_top_ngram_char_frac")]
    dup = [(f"gopher_rep/dup_{n}gram", [(f"dup_{n}gram", ">", f"max_dup_ngram_char_frac.{n}")])
           for n in _ngram_sizes(r, k + "max_dup_ngram_char_frac")]
    return GOPHER_REPETITION_RULES + top + dup


def repetition_values(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, top: list[int], dup: list[int]) -> dict:
    """Gopher's repetition statistics of every document (its table A1)."""
    n_chars = np.asarray(pc.utf8_length(texts), dtype=np.float64)
    lines = ts.split_pattern(texts, "\n+", regex=True)
    paras = ts.split_pattern(pc.utf8_trim_whitespace(texts), r"\n\s*\n", regex=True)
    line_dup, line_dup_chars = ts.duplicate_stats(lines)
    para_dup, para_dup_chars = ts.duplicate_stats(paras)
    out = {"dup_line_frac": ts.ratio(line_dup, lines.counts), "dup_para_frac": ts.ratio(para_dup, paras.counts),
           "dup_line_char_frac": ts.ratio(line_dup_chars, n_chars),
           "dup_para_char_frac": ts.ratio(para_dup_chars, n_chars)}
    pos, h, starts = ts.ngram_hashes(words, max(top, default=1), tuple(dup))
    for n in top:
        out[f"top_{n}gram"] = ts.ratio(ts.top_ngram_chars(words, pos, h[n - 1], n, word_len), n_chars)
    for n in dup:
        out[f"dup_{n}gram"] = ts.ratio(ts.dup_ngram_chars(words, starts[n], n, word_len), n_chars)
    return out


def gopher_repetition(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, r: Rows) -> list:
    k = "gopher_repetition."
    top, dup = _ngram_sizes(r, k + "max_top_ngram_char_frac"), _ngram_sizes(r, k + "max_dup_ngram_char_frac")
    return judge(repetition_values(texts, words, word_len, top, dup), repetition_rules(r), "gopher_repetition", r)


def quality_values(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, stop: np.ndarray | None = None) -> dict:
    """Gopher's quality statistics of every document (appendix A.1.1); ``stop``: the mask of
    ``words`` that are stop words of their document's language."""
    n_words = words.counts
    hashes = np.asarray(pc.count_substring(texts, "#"), dtype=np.float64)
    ellipses = np.asarray(pc.count_substring_regex(texts, r"\.\.\.|…"), dtype=np.float64)
    lines = ts.split_pattern(texts, "\n")
    stripped = pc.utf8_trim_whitespace(lines.values)
    bullet = _b(pc.match_substring_regex(stripped, "^[" + "".join("\\" + c if c in "-*" else c for c in BULLETS) + "]"))
    ellipsis_end = _b(pc.match_substring_regex(stripped, r"(\.\.\.|…)$"))
    alpha = _b(pc.match_substring_regex(words.values, r"\pL"))
    n_stop = words.per_doc(stop) if stop is not None else np.zeros(words.n_docs)
    return {
        "n_words": n_words, "mean_word_length": ts.ratio(words.per_doc(word_len), n_words),
        "hash_word_ratio": ts.ratio(hashes, n_words), "ellipsis_word_ratio": ts.ratio(ellipses, n_words),
        "bullet_lines_ratio": ts.ratio(lines.per_doc(bullet), lines.counts),
        "ellipsis_lines_ratio": ts.ratio(lines.per_doc(ellipsis_end), lines.counts),
        "alpha_words_ratio": ts.ratio(words.per_doc(alpha), n_words, empty=1.0),
        "stop_words": n_stop, "stop_word_ratio": ts.ratio(n_stop, n_words),
    }


def gopher_quality(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, r: Rows) -> list:
    stop = r.stop_word_hits(words.values, words.doc, "gopher_quality.stop_words")
    return judge(quality_values(texts, words, word_len, stop), GOPHER_QUALITY_RULES, "gopher_quality", r)


@dataclass
class Lines:
    """Every line of a batch (split at newlines, blank ones kept), trimmed, and its
    whitespace tokens: C4 judges these lines, and the document's words are their tokens."""

    lines: ts.Pieces  # the lines as split, document index and offsets
    line: pa.Array  # each line without surrounding white space
    tokens: ts.Pieces  # whitespace tokens of each trimmed line (``doc`` = line index)

    @classmethod
    def of(cls, texts: pa.Array) -> "Lines":
        lines = ts.split_pattern(texts, "\n", drop_blank=False)
        line = pc.utf8_trim_whitespace(lines.values)
        return cls(lines, line, ts.split_whitespace(line))

    def words(self) -> tuple[ts.Pieces, np.ndarray]:
        """(the documents' words, words per line): ``ts.words_of`` of the texts, the same
        words in the same order (splitting at newlines first splits at no other place)."""
        stripped = pc.utf8_trim(self.tokens.values, ts.PUNCT)
        is_word = np.asarray(pc.greater(pc.utf8_length(stripped), 0))
        n_docs = self.lines.n_docs
        doc = self.lines.doc[self.tokens.doc[is_word]]
        offsets = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc, minlength=n_docs), out=offsets[1:])
        per_line = np.bincount(self.tokens.doc[is_word], minlength=len(self.line))
        return ts.Pieces(stripped.filter(pa.array(is_word)), doc, offsets, n_docs), per_line


def c4_rules(texts: pa.Array, r: Rows, split: Lines) -> tuple[list, pa.Array, np.ndarray, np.ndarray]:
    """Return (document rules, texts with C4's bad lines removed, lines removed per doc,
    mask of the lines removed). Rows whose language has ``c4.enabled`` false lose no line
    and fail no C4 rule (FineWeb-2 applies no C4 rule)."""
    k = "c4."
    on = r[k + "enabled"].astype(bool)
    lower = pc.utf8_lower(texts)
    lines, line, tokens = split.lines, split.line, split.tokens

    def per_line(key: str) -> np.ndarray:
        return r[k + key][lines.doc]

    line_lower = pc.utf8_lower(line)
    drop = np.zeros(len(line), dtype=bool)
    if r.any(k + "filter_no_terminal_punct"):
        no_end = ~_b(pc.match_substring_regex(line, TERMINAL_RE)) | _b(pc.ends_with(line, "..."))
        drop |= no_end & per_line("filter_no_terminal_punct").astype(bool)
    drop |= tokens.counts < per_line("min_words_per_line")
    if len(tokens.values):
        max_len = per_line("max_word_length")
        long_word = tokens.lengths() > max_len[tokens.doc]
        drop |= (np.bincount(tokens.doc[long_word], minlength=len(line)) > 0) & (max_len > 0)
    if r.any(k + "filter_javascript"):
        drop |= _b(pc.match_substring(line_lower, "javascript")) & per_line("filter_javascript").astype(bool)
    if r.any(k + "filter_policy"):
        drop |= _b(pc.match_substring_regex(line_lower, "|".join(C4_POLICY))) & per_line("filter_policy").astype(bool)
    # blank lines are paragraph breaks, not lines C4 judges: keep them, then collapse the
    # runs that removed lines leave behind
    blank = np.asarray(pc.equal(pc.utf8_length(line), 0))
    drop &= ~blank & on[lines.doc]
    new_text = c4_text(lines, line, drop)
    sentences = np.asarray(pc.count_substring_regex(new_text, SENTENCE_RE))
    rules = [
        ("c4/lorem_ipsum", _b(pc.match_substring(lower, "lorem ipsum")) & r[k + "filter_lorem_ipsum"].astype(bool) & on),
        ("c4/curly_bracket", _b(pc.match_substring(texts, "{")) & r[k + "filter_curly_bracket"].astype(bool) & on),
        ("c4/too_few_sentences", (sentences < r[k + "min_sentences"]) & on),
    ]
    return rules, new_text, lines.per_doc(drop).astype(np.int32), drop


def c4_text(lines: ts.Pieces, line: pa.Array, drop: np.ndarray) -> pa.Array:
    """The documents without the ``drop``-ped lines (``line``: the trimmed ``lines``)."""
    kept = ts.Pieces(line, lines.doc, lines.offsets, lines.n_docs).select(~drop)
    return pc.utf8_trim_whitespace(pc.replace_substring_regex(kept.rejoin("\n"), r"\n{3,}", "\n\n"))


def fineweb_values(texts: pa.Array, n_words: np.ndarray, short_line_length) -> dict:
    """FineWeb's statistics of every document (Penedo et al. 2024; datatrove's FineWebQualityFilter)."""
    lines = ts.split_pattern(texts, "\n")
    ends = _b(pc.match_substring_regex(lines.values, FINEWEB_STOP_RE))
    short = lines.lengths() <= np.broadcast_to(short_line_length, (lines.n_docs,))[lines.doc]
    _, dup_chars = ts.duplicate_stats(lines)
    chars_no_nl = np.asarray(pc.utf8_length(texts), dtype=np.float64) - np.asarray(pc.count_substring(texts, "\n"))
    # runs of newlines count once: paragraph breaks are not list items
    newlines = np.asarray(pc.count_substring_regex(texts, r"\n+"), dtype=np.float64)
    return {"n_lines": lines.counts, "line_punct_ratio": ts.ratio(lines.per_doc(ends), lines.counts),
            "short_line_ratio": ts.ratio(lines.per_doc(short), lines.counts),
            "char_dup_ratio": ts.ratio(dup_chars, chars_no_nl), "list_ratio": ts.ratio(newlines, n_words, empty=np.inf)}


def fineweb_rules(texts: pa.Array, n_words: np.ndarray, r: Rows) -> list:
    values = fineweb_values(texts, n_words, r["fineweb.short_line_length"])
    return [("fineweb/empty", values["n_lines"] == 0)] + judge(values, FINEWEB_RULES, "fineweb", r)


def split_words(texts: pa.Array, langs: Optional[pa.Array]) -> ts.Pieces:
    """Words of each document by its language (:mod:`datacurate.text.words`: a segmenter for
    the scripts written without spaces; rows without such a script get whitespace words)."""
    return ts.words_of(texts) if langs is None else words_mod.words_of(texts, langs)


class Heuristics(Stage):
    """Gopher, C4 and FineWeb rules with thresholds per document's language (``lang``, ``lang_script``)."""

    name = "heuristics"
    Config = HeuristicsConfig
    columns = {"c4_lines_removed": pa.int32()}

    @classmethod
    def rewrites_text(cls, config) -> bool:
        return config.c4.enabled  # C4 line removal

    @classmethod
    def details(cls, config: HeuristicsConfig) -> list[str]:
        """The per-language table: each lid.176 language, the FineWeb-2 config it takes, its thresholds."""
        from datacurate.text.langrules import fineweb2

        table, lid = config.table(), fineweb2()["lid176"]
        cols = [("words", "gopher_quality.min_mean_word_length"), ("", "gopher_quality.max_mean_word_length"),
                ("alpha", "gopher_quality.min_alpha_words_ratio"), ("dup_line", "gopher_repetition.max_dup_line_frac"),
                ("punct", "fineweb.min_line_punct_ratio"), ("list", "fineweb.max_list_ratio"),
                ("char_dup", "fineweb.max_dup_line_char_ratio"), ("langid", "langid.min_score")]
        out = ["# per-language thresholds (language_rules: fineweb2): a row's `lang` (lid.176 code, with",
               "# `lang_script` where a language has several) picks its row; FineWeb-2's configs",
               "# (github.com/huggingface/fineweb-2, Apache-2.0) bring no short-line rule, no C4 rule, no",
               "# paragraph / line-character repetition rules and char_dup 0.1; en and languages without a",
               "# config take the keys above (a language seen in no table: one warning). Columns: mean word",
               "# length min-max, min alpha-word share, max duplicate-line share, min punctuated-line share,",
               "# max newlines per word, max duplicate-line characters, langid min score (FineWeb-2's, GlotLID",
               "# scale), stop words (count).",
               f"{'lang':<9}{'config':<10}{'words':>7}{'alpha':>7}{'dup_line':>9}{'punct':>7}{'list':>7}"
               f"{'char_dup':>9}{'langid':>7}{'stops':>6}"]
        keys = [code if i == 0 else f"{code}_{script}" for code, by in sorted(lid.items())
                for i, script in enumerate(by or {"": ""})]
        for key in keys:
            base, _, script = key.partition("_")
            rules, _ = table.resolve(base, script or None)
            by = lid.get(base) or {}
            src = by.get(script) or next(iter(by.values()), "default")
            v = [rules.get(k) for _, k in cols]
            fmt = [f"{v[0]:g}-{v[1]:g}"] + ["off" if x == float("inf") else ("" if x is None else f"{x:g}")
                                            for x in v[2:]]
            out.append(f"{key:<9}{src:<10}{fmt[0]:>7}{fmt[1]:>7}{fmt[2]:>9}{fmt[3]:>7}{fmt[4]:>7}{fmt[5]:>9}"
                       f"{fmt[6]:>7}{len(rules.get('gopher_quality.stop_words') or []):>6}")
        return out

    def __init__(self, config: HeuristicsConfig | None = None, **params):
        super().__init__(config, **params)
        self.table = self.config.table()
        self.warned: set[str] = set()

    def metrics(self, table: pa.Table) -> dict:
        out = {"c4_lines_removed": int(pc.sum(table.column("c4_lines_removed")).as_py() or 0)}
        if LANG in table.column_names and table.num_rows:  # documents judged by the default thresholds, by language
            vc = pc.value_counts(table.column(LANG).fill_null("und"))
            unknown = {v.as_py(): c.as_py() for v, c in zip(vc.field("values"), vc.field("counts"))
                       if not self.table.resolve(v.as_py())[1]}
            if unknown:
                out["default_thresholds"] = unknown
        return out

    def rows(self, table: pa.Table) -> Rows:
        """Each row's thresholds, by its ``lang`` (and ``lang_script``) where langid ran before."""
        cols = table.column_names
        langs = table.column(LANG).combine_chunks() if LANG in cols else None
        scripts = table.column(LANG_SCRIPT).combine_chunks() if LANG_SCRIPT in cols else None
        r = self.table.rows(langs, scripts, table.num_rows)
        for lang in sorted(r.unknown - self.warned):  # once per language and stage instance
            log.warning("heuristics: no thresholds for language %r: it gets the default ones "
                        "(the stage's keys; add it under per_language: or thresholds:)", lang)
            self.warned.add(lang)
        return r

    def annotate(self, table: pa.Table):
        cfg: HeuristicsConfig = self.config
        stored = table.column(TEXT).combine_chunks()
        texts = view = layout_normalized(stored)  # the rules judge this view; the stored text keeps its characters
        n = len(texts)
        r = self.rows(table)
        langs = table.column(LANG).combine_chunks() if LANG in table.column_names else None
        rules: list = []
        words = split = None
        c4_on = cfg.c4.enabled and bool(r["c4.enabled"].any())
        if c4_on:
            split = Lines.of(texts)
        if cfg.gopher_repetition.enabled or cfg.gopher_quality.enabled or (cfg.fineweb.enabled and split):
            # one split into words serves Gopher, and FineWeb after C4 (the words of the lines C4 kept)
            words, words_per_line = split.words() if split else (ts.words_of(texts), None)
            ws_counts, segmented = words.counts, langs is not None and bool(words_mod.unspaced_rows(texts).any())
            if segmented:  # else the same words
                words = split_words(texts, langs)
            word_len = words.lengths()
        if cfg.gopher_quality.enabled:
            rules += gopher_quality(texts, words, word_len, r)
        if cfg.gopher_repetition.enabled:
            rules += gopher_repetition(texts, words, word_len, r)
        removed = np.zeros(n, dtype=np.int32)
        out_text = stored
        if c4_on:
            c4, new_text, removed, dropped = c4_rules(texts, r, split)
            rules += c4
            texts = new_text  # FineWeb's rules see the text C4 left, as in the FineWeb pipeline
            if view is not stored:  # the same lines (no newline is normalised), of the stored text
                lines = ts.split_pattern(stored, "\n", drop_blank=False)
                new_text = c4_text(lines, pc.utf8_trim_whitespace(lines.values), dropped)
            judged_by_c4 = pa.array(r["c4.enabled"].astype(bool))
            texts = pc.if_else(judged_by_c4, texts, view)
        if cfg.fineweb.enabled:
            if split:
                n_words = split.lines.per_doc(words_per_line * ~dropped).astype(np.int64)
                if segmented:  # segmented words: scale by the share of whitespace words C4 kept
                    n_words = np.rint(words.counts * ts.ratio(n_words, ws_counts, empty=1.0)).astype(np.int64)
            else:
                n_words = words.counts if words is not None else split_words(texts, langs).counts
            rules += fineweb_rules(texts, n_words, r)
        reasons = first_reason(n, [(name, np.broadcast_to(m, (n,))) for name, m in rules])
        cols = {"c4_lines_removed": pa.array(removed, pa.int32())}
        if cfg.c4.enabled:
            # kept documents judged by C4 carry the C4-cleaned text; rejected ones keep what was read
            keep_read = np.asarray(pc.is_valid(reasons))
            if c4_on:
                keep_read |= ~r["c4.enabled"].astype(bool)
                out_text = pc.if_else(pa.array(keep_read), out_text, new_text.cast(out_text.type))
            cols[TEXT] = out_text
        return cols, reasons
