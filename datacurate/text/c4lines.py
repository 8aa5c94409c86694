"""C4's line rules (Raffel et al. 2020, section 2.2), over every line of a batch at once.

Lines without terminal punctuation (per script: :data:`datacurate.text.rulestats.SCRIPT_ENDS`),
with fewer than 3 words, with a word over 1,000 characters, mentioning javascript or a
cookie / terms policy are removed; a document is rejected for "lorem ipsum", a ``{`` or fewer
than 5 sentences left. Thresholds per row (:class:`datacurate.text.langrules.Rows`): rows whose
language has ``c4.enabled`` false lose no line (FineWeb-2 applies no C4 rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.text import textstats as ts
from datacurate.text.langrules import Rows
from datacurate.text.rulestats import SCRIPT_ENDS, _b

C4_POLICY = ["terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies"]
TERMINAL_RE = f'[.!?"{SCRIPT_ENDS}]$'  # C4: a line must end in terminal punctuation
# sentences C4 counts: Latin-style ends followed by a space (or the end), and the other
# scripts' end marks wherever they stand (CJK puts no space after them)
SENTENCE_RE = f"[.!?]+[\"'\\)\\]]*(\\s|$)|[{SCRIPT_ENDS}]+"


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
