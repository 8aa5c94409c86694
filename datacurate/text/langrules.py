"""Thresholds per language: FineWeb-2's configs as data, a user's calibrated YAML, overrides.

The table maps a language (lid.176's code, ``fr``; with its script where one language has
several, ``sr_Latn``; or a GlotLID-style ISO 639-3 + script label, ``fra_Latn``) to the
thresholds of every rule set, in this package's config names, dotted by section:
``{"gopher_quality.min_mean_word_length": 2, "fineweb.max_list_ratio": 0.185, ...}``.
Rule stages gather them into per-row NumPy arrays with :meth:`RuleTable.rows` (one Python
lookup per distinct language of a batch, never per document).

Where the values come from, in order (later wins):

1. the stage's own config keys: the default of every language, and English's values
   (FineWeb-2 has no English config: English keeps FineWeb's English thresholds);
2. ``fineweb2``: FineWeb-2's ``configs/{iso639_3}_{Script}.yml`` (Penedo et al. 2025,
   github.com/huggingface/fineweb-2, Apache-2.0; ``resources/langrules/``), with FineWeb-2's
   global changes (its README and ``fineweb-2-pipeline.py``): no short-line filter,
   ``char_dup_ratio`` 0.1 instead of 0.01, Gopher's paragraph and line-character
   repetition rules off, no C4 rules;
3. ``thresholds``: the YAML ``datacurate calibrate`` writes (``languages: {fr: {...}}``);
4. ``per_language``: the pipeline's own overrides, same shape.

A language found nowhere takes the defaults (1); the stage warns once per language.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RESOURCE = Path(__file__).resolve().parent.parent / "resources" / "langrules" / "fineweb2.json"
OFF = float("inf")  # a "max_" threshold that never fires
SOURCES = ("fineweb2", "none")


@functools.cache
def fineweb2() -> dict:
    """The shipped table: ``{"lid176": {code: {Script: iso_key}}, "configs": {iso_key: {...}}}``."""
    return json.loads(RESOURCE.read_text())


def fineweb2_rules(cfg: dict) -> dict:
    """One FineWeb-2 config in this package's dotted keys, with FineWeb-2's global changes."""
    out = {
        "langid.min_score": cfg["language_score"],
        "gopher_quality.min_mean_word_length": float(cfg["min_avg_word_length"]),
        "gopher_quality.max_mean_word_length": float(cfg["max_avg_word_length"]),
        # datatrove's "max_non_alpha_words_ratio" is the minimum share of words with a letter
        "gopher_quality.min_alpha_words_ratio": cfg["max_non_alpha_words_ratio"],
        "gopher_quality.stop_words": list(cfg["stopwords"]),
        "gopher_repetition.max_dup_line_frac": cfg["dup_line_frac"],
        "gopher_repetition.max_dup_para_frac": OFF,
        "gopher_repetition.max_dup_line_char_frac": OFF,
        "gopher_repetition.max_dup_para_char_frac": OFF,
        "c4.enabled": False,
        "fineweb.min_line_punct_ratio": cfg["line_punct_thr"],
        "fineweb.max_short_line_ratio": OFF,
        "fineweb.max_dup_line_char_ratio": 0.1,
        "fineweb.max_list_ratio": cfg["new_line_ratio"],
    }
    for n, v in cfg["top_n_grams"].items():
        out[f"gopher_repetition.max_top_ngram_char_frac.{int(n)}"] = v
    for n, v in cfg["dup_n_grams"].items():
        out[f"gopher_repetition.max_dup_ngram_char_frac.{int(n)}"] = v
    return out


def flatten(tree: dict, prefix: str = "") -> dict:
    """``{"fineweb": {"max_list_ratio": 0.2}}`` -> ``{"fineweb.max_list_ratio": 0.2}`` (lists kept whole)."""
    out = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def read_thresholds(path: str) -> dict[str, dict]:
    """``{language: dotted thresholds}`` of a ``datacurate calibrate`` YAML."""
    from datacurate.core.coerce import read_yaml

    doc = read_yaml(path, "thresholds") or {}
    langs = doc.get("languages") if isinstance(doc, dict) else None
    if not isinstance(langs, dict):
        raise ValueError(f"{path}: a thresholds file has a 'languages:' mapping (as `datacurate calibrate` writes)")
    return {str(k): flatten(v or {}) for k, v in langs.items()}


def split_key(lang: str) -> tuple[str, Optional[str]]:
    """``sr_Latn`` -> (``sr``, ``Latn``); ``fr`` -> (``fr``, None)."""
    base, _, script = lang.partition("_")
    return base, (script or None)


class RuleTable:
    """Per-language thresholds over a default (the stage's config, flattened)."""

    def __init__(self, default: dict, source: str = "fineweb2", thresholds: Optional[str] = None,
                 per_language: Optional[dict] = None):
        if source not in SOURCES:
            raise ValueError(f"per-language rules must be one of {SOURCES}, not {source!r}")
        self.default = dict(default)
        self.source = source
        self.user: dict[str, dict] = {}
        if thresholds:
            self.user.update(read_thresholds(thresholds))
        for lang, over in (per_language or {}).items():
            self.user.setdefault(str(lang), {}).update(flatten(over or {}))
        for over in self.user.values():  # langid's own (a calibrate YAML serves both stages)
            for k in [k for k in over if k.startswith("langid.")]:
                del over[k]
        unknown = {k for over in self.user.values() for k in over if k not in default and not self._ngram(k)}
        if unknown:
            raise ValueError(f"per-language thresholds name unknown keys: {sorted(unknown)}")

    def _ngram(self, key: str) -> bool:
        head, _, n = key.rpartition(".")
        return n.isdigit() and head in {k.rpartition(".")[0] for k in self.default if k.rpartition(".")[2].isdigit()}

    def shipped(self, lang: str, script: Optional[str]) -> Optional[dict]:
        """FineWeb-2's config of ``lang`` (lid.176 code or ISO 639-3) in ``script``, else its usual script's."""
        if self.source != "fineweb2" or lang in ("", "und"):
            return None
        table = fineweb2()
        by_script = table["lid176"].get(lang)
        if by_script is not None:
            key = by_script.get(script or "") or next(iter(by_script.values()), None)
        else:  # an ISO 639-3 label (a GlotLID-style model's)
            cands = [k for k in table["configs"] if k.split("_")[0] == lang]
            key = f"{lang}_{script}" if f"{lang}_{script}" in table["configs"] else (cands[0] if cands else None)
        return fineweb2_rules(table["configs"][key]) if key else None

    @functools.lru_cache(maxsize=4096)
    def resolve(self, lang: str, script: Optional[str] = None) -> tuple[dict, bool]:
        """(thresholds of ``lang`` in ``script``, whether any source knew the language)."""
        base = lang if lang else "und"
        if script is None and "_" in base:  # a label that carries its script: sr_Latn, fra_Latn
            base, script = split_key(base)
        out = dict(self.default)
        shipped = self.shipped(base, script)
        known = shipped is not None or base in ("en", "und") or self.source == "none"  # und: no text to judge
        if shipped:
            out.update(shipped)
        for key in (base, f"{base}_{script}" if script else None):
            if key and key in self.user:
                out.update(self.user[key])
                known = True
        return out, known

    def rows(self, langs: Optional[pa.Array], scripts: Optional[pa.Array], n: int) -> "Rows":
        """The thresholds of each of ``n`` rows (no ``lang`` column: the defaults)."""
        if langs is None:
            return Rows([self.resolve("en")[0]], np.zeros(n, dtype=np.int64), set())
        keys = langs.cast(pa.string()).fill_null("und")  # any string type (large, dictionary)
        if scripts is not None:
            keys = pc.binary_join_element_wise(keys, scripts.cast(pa.string()).fill_null(""), "\x1f")
        enc = pc.dictionary_encode(keys)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        resolved, unknown = [], set()
        for key in enc.dictionary.to_pylist():
            lang, _, script = key.partition("\x1f")
            rules, known = self.resolve(lang, script or None)
            resolved.append(rules)
            if not known:
                unknown.add(lang)
        return Rows(resolved, np.asarray(enc.indices, dtype=np.int64), unknown)


def _edge(c: str) -> bool:
    return unicodedata.category(c)[0] in "PZ"


@functools.lru_cache(maxsize=512)
def _stop_list(words: tuple) -> tuple:
    out = set()
    for w in words:
        w = str(w).lower()
        i, j = 0, len(w)
        while i < j and _edge(w[i]):
            i += 1
        while j > i and _edge(w[j - 1]):
            j -= 1
        if i < j:
            out.add(w[i:j])
    return tuple(sorted(out))


def stop_list(words) -> tuple:
    """Stop words as words are compared: lower-cased, punctuation and spaces stripped from the
    ends as :mod:`datacurate.text.words` strips them (FineWeb-2's Tibetan stop words end with the
    tsheg ``་``, which is a separator of our words; ``།`` alone is no word)."""
    return _stop_list(tuple(words))


class Rows:
    """Thresholds gathered per row: ``rows[key]`` is a (n,) array (``rows.idx``: each row's rule set)."""

    def __init__(self, rules: list[dict], idx: np.ndarray, unknown: set[str]):
        self.rules, self.idx, self.unknown = rules, idx, unknown

    def __getitem__(self, key: str) -> np.ndarray:
        vals = np.array([r.get(key, OFF) for r in self.rules])
        return vals[self.idx]

    def stop_word_hits(self, words: pa.Array, word_doc: np.ndarray, key: str = "gopher_quality.stop_words") -> np.ndarray:
        """Mask of ``words`` that are stop words of their document's language (lower-cased):
        each distinct word of the batch is looked up once per distinct stop-word list."""
        if len(words) == 0:
            return np.zeros(0, dtype=bool)
        enc = pc.dictionary_encode(pc.utf8_lower(words))
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        lists = [stop_list(r.get(key) or []) for r in self.rules]
        distinct = sorted(set(lists))
        # compared in Unicode's composed form (NFC) on both sides: a page that writes its accents
        # as combining marks (decomposed Vietnamese, "e" + U+0301) still matches its stop words
        words_nfc = pc.utf8_normalize(enc.dictionary, form="NFC")
        table = np.zeros((len(distinct), len(enc.dictionary)), dtype=bool)  # (lists, distinct words)
        for i, stop in enumerate(distinct):
            nfc = pa.array([unicodedata.normalize("NFC", w) for w in stop], words_nfc.type)
            table[i] = np.asarray(pc.is_in(words_nfc, value_set=nfc), dtype=bool)
        which = np.array([distinct.index(x) for x in lists], dtype=np.int64)[self.idx]  # per document
        return table[which[word_doc], np.asarray(enc.indices, dtype=np.int64)]

    def any(self, key: str) -> bool:
        return any(bool(r.get(key)) for r in self.rules)


def describe(table: RuleTable) -> list[str]:
    """The table as text (``datacurate stages heuristics``): each lid.176 language (and each of
    its other scripts), the FineWeb-2 config it takes, its main thresholds."""
    lid = fineweb2()["lid176"]
    cols = ["gopher_quality.min_mean_word_length", "gopher_quality.max_mean_word_length",
            "gopher_quality.min_alpha_words_ratio", "gopher_repetition.max_dup_line_frac",
            "fineweb.min_line_punct_ratio", "fineweb.max_list_ratio", "fineweb.max_dup_line_char_ratio",
            "langid.min_score"]
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
        v = [rules.get(k) for k in cols]
        fmt = [f"{v[0]:g}-{v[1]:g}"] + ["off" if x == OFF else ("" if x is None else f"{x:g}") for x in v[2:]]
        out.append(f"{key:<9}{src:<10}{fmt[0]:>7}{fmt[1]:>7}{fmt[2]:>9}{fmt[3]:>7}{fmt[4]:>7}{fmt[5]:>9}"
                   f"{fmt[6]:>7}{len(rules.get('gopher_quality.stop_words') or []):>6}")
    return out
