"""The statistics the Gopher and FineWeb rules judge, for every document of a batch.

Vectorised over Arrow (:mod:`datacurate.text.textstats`); ``heuristics`` compares them
with each row's thresholds and ``datacurate calibrate`` fits thresholds on them, so both
read the same numbers. Definitions: Gopher (Rae et al. 2021, appendix A.1.1 and table A1),
FineWeb (Penedo et al. 2024; datatrove's ``FineWebQualityFilter``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.text import textstats as ts

BULLETS = "•‣●○▪◦∙·*-–"
# sentence ends of the scripts that are not written with . ! ? (FineWeb-2: "sentence ends per
# script"): CJK 。！？ (and the halfwidth ｡), Devanagari / Bengali danda । ॥, Urdu ۔, Arabic
# ؟, Ethiopic ። ፧, Myanmar ။, Tibetan ། (shad), Khmer ។, Armenian ։. A union: no script uses
# another's end mark, so each document is judged by its own script's.
SCRIPT_ENDS = "\u3002\uff01\uff1f\uff61\u0964\u0965\u06d4\u061f\u1362\u1367\u104b\u0f0d\u17d4\u0589"
# terminal punctuation only (as datatrove's FineWeb filter): a closing quote alone is not an end
FINEWEB_STOP_RE = f"[.!?\u2026{SCRIPT_ENDS}]$"
# a sentence end anywhere in a text: . ! ? … before a space, a closing quote or bracket or the
# end (not "3.5", "example.com"), a script's own end mark (。 । ។ ။ ...: no space follows them),
# or, in Thai and Lao, a space between two letters of the script: Thai and Lao writers end a
# sentence (or clause) with a space where other scripts put a mark, and put none between words
SENTENCE_END_RE = (f"[.!?\u2026]+(?:\\s|$|[\"'\u201d\u00bb)\\]])|[{SCRIPT_ENDS}]+"
                   "|[\u0e00-\u0eff][ \t]+[\u0e00-\u0eff]")


def _b(arr) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False), dtype=bool)


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


def fineweb_values(texts: pa.Array, n_words: np.ndarray, short_line_length) -> dict:
    """FineWeb's statistics of every document (Penedo et al. 2024; datatrove's FineWebQualityFilter)."""
    lines = ts.split_pattern(texts, "\n")
    ends = _b(pc.match_substring_regex(lines.values, FINEWEB_STOP_RE))
    short = lines.lengths() <= np.broadcast_to(short_line_length, (lines.n_docs,))[lines.doc]
    _, dup_chars = ts.duplicate_stats(lines)
    chars_no_nl = np.asarray(pc.utf8_length(texts), dtype=np.float64) - np.asarray(pc.count_substring(texts, "\n"))
    # runs of newlines count once: paragraph breaks are not list items
    newlines = np.asarray(pc.count_substring_regex(texts, r"\n+"), dtype=np.float64)
    sentence_ends = np.asarray(pc.count_substring_regex(texts, SENTENCE_END_RE), dtype=np.float64)
    return {"n_lines": lines.counts, "line_punct_ratio": ts.ratio(lines.per_doc(ends), lines.counts),
            "sentence_end_ratio": ts.ratio(sentence_ends, n_words, empty=np.inf),
            "short_line_ratio": ts.ratio(lines.per_doc(short), lines.counts),
            "char_dup_ratio": ts.ratio(dup_chars, chars_no_nl), "list_ratio": ts.ratio(newlines, n_words, empty=np.inf)}
