"""Stage ``heuristics``: the published rule sets of Gopher, C4 and FineWeb.

Rule sets name a reason in the order of ``order``: by default Gopher quality, Gopher
repetition, C4, FineWeb (FineWeb, Penedo et al. 2024, runs repetition first; quality first
names short documents ``too_few_words`` rather than a repetition rule); FineWeb-2's pipeline
(``fineweb-2-pipeline.py``) runs Gopher repetition, FineWeb, Gopher quality, and no C4, which
``pipelines/multilingual.yaml`` follows. The order changes a rejected document's reason, never
what is kept. A document is rejected with the first rule it fails, named in
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
language; sentence ends are per script (:data:`datacurate.text.rulestats.SCRIPT_ENDS`).

All statistics are computed over the whole batch at once (see ``textstats``), on the
layout-normalised view of the text (:mod:`datacurate.text.layout`: Unicode spaces as
spaces, invisible format characters out; the white space of RE2's regular expressions is ASCII);
C4's line removal cuts the stored text at the lines it judged there.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import LANG, LANG_SCRIPT, TEXT
from datacurate.text import textstats as ts
from datacurate.text import words as words_mod
from datacurate.text.rulestats import fineweb_values, quality_values, repetition_values
from datacurate.text.c4lines import Lines, c4_rules, c4_text
from datacurate.text.langrules import RuleTable, Rows, describe, flatten
from datacurate.text.layout import layout_normalized
from datacurate.stages.base import Stage, first_reason

log = logging.getLogger(__name__)

GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]

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
    min_sentence_end_ratio: float = opt(0.0, "not in FineWeb (0 = off): sentence ends (. ! ? before a space, or a "
                                        "script's 。 । ။ ...) per word; 0.005 (one per 200 words) rejects keyword "
                                        "lists and word salad that hold no sentence at all")


RULE_SETS = ("gopher_quality", "gopher_repetition", "c4", "fineweb")


@dataclass
class HeuristicsConfig:
    gopher_quality: GopherQualityConfig = field(default_factory=GopherQualityConfig)
    gopher_repetition: GopherRepetitionConfig = field(default_factory=GopherRepetitionConfig)
    c4: C4Config = field(default_factory=C4Config)
    fineweb: FineWebConfig = field(default_factory=FineWebConfig)
    language_rules: Literal["fineweb2", "none"] = opt("fineweb2", "thresholds per row's `lang`: fineweb2 = FineWeb-2's config of the "
                              "language (every lid.176 language but en/eml; README), none = the keys above for all")
    thresholds: Optional[str] = opt(None, "a YAML of per-language thresholds (`datacurate calibrate` writes one); "
                                    "over the shipped ones")
    per_language: dict[str, Any] = opt({}, "overrides per language, e.g. {fr: {gopher_quality: {min_stop_words: 3}}}; "
                             "over both")
    order: list[str] = opt(list(RULE_SETS), "the order rule sets name a document's reason in (its first failed rule); "
                           "FineWeb-2's pipeline: [gopher_repetition, fineweb, gopher_quality, c4]")

    def validate(self) -> None:
        if sorted(self.order) != sorted(RULE_SETS):
            raise ValueError(f"heuristics order: each of {', '.join(RULE_SETS)} once, not {self.order}")
        self.table()  # a misspelt key or an unreadable thresholds file stops the run before work starts

    def table(self) -> RuleTable:
        """The per-language thresholds over this config's keys (each language's default)."""
        default = {k: v for k, v in flatten({s.name: dataclasses.asdict(getattr(self, s.name))
                                             for s in dataclasses.fields(self)
                                             if dataclasses.is_dataclass(getattr(self, s.name))}).items()}
        return RuleTable(default, self.language_rules, self.thresholds, self.per_language)


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
    ("fineweb/sentence_ends", [("sentence_end_ratio", "<", "min_sentence_end_ratio")]),
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


def gopher_repetition(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, r: Rows) -> list:
    k = "gopher_repetition."
    top, dup = _ngram_sizes(r, k + "max_top_ngram_char_frac"), _ngram_sizes(r, k + "max_dup_ngram_char_frac")
    return judge(repetition_values(texts, words, word_len, top, dup), repetition_rules(r), "gopher_repetition", r)


def gopher_quality(texts: pa.Array, words: ts.Pieces, word_len: np.ndarray, r: Rows) -> list:
    stop = r.stop_word_hits(words.values, words.doc, "gopher_quality.stop_words")
    return judge(quality_values(texts, words, word_len, stop), GOPHER_QUALITY_RULES, "gopher_quality", r)


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
    uses_words = True  # words by language (datacurate.text.words): segmenters checked at plan time

    @classmethod
    def rewrites_text(cls, config) -> bool:
        return config.c4.enabled  # C4 line removal

    @classmethod
    def details(cls, config: HeuristicsConfig) -> list[str]:
        """The per-language table: each lid.176 language, the FineWeb-2 config it takes, its thresholds."""
        return describe(config.table())

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
        sets: dict[str, list] = {}  # each rule set's (reason, mask) pairs, named in cfg.order
        if cfg.gopher_quality.enabled:
            sets["gopher_quality"] = gopher_quality(texts, words, word_len, r)
        if cfg.gopher_repetition.enabled:
            sets["gopher_repetition"] = gopher_repetition(texts, words, word_len, r)
        removed = np.zeros(n, dtype=np.int32)
        out_text = stored
        if c4_on:
            sets["c4"], new_text, removed, dropped = c4_rules(texts, r, split)
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
            sets["fineweb"] = fineweb_rules(texts, n_words, r)
        rules = [rule for name in cfg.order for rule in sets.get(name, [])]
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
