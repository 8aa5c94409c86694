"""Words for every script: whitespace where a script spaces its words, a segmenter where not.

Chinese, Japanese, Thai, Lao, Khmer, Myanmar and Tibetan write words without spaces
between them, so a whitespace split counts a sentence as one "word" (Gopher's mean word
length rejects the page, a MinHash shingle is a clause, a 13-gram a paragraph). Korean
spaces its words, but a Korean word carries its particles and endings (사람은 = 사람 + 은),
and FineWeb-2's Korean config counts morphemes (its stop words are 의 는 에 을 ...): its
Hangul words are cut into morphemes by Kiwi, as datatrove does.
:func:`split_words` splits on whitespace as :func:`textstats.split_whitespace` does, then
cuts every run of an unspaced script inside a token into words with a segmenter chosen by
the row's language (``lang``, lid.176's codes), or by the run's script where the row's
language does not say (a Chinese name inside an English page, a Thai quote in a Lao one).
datatrove does the same per document with one tokenizer per language
(``utils/word_tokenizers.py``: jieba for Chinese, SudachiPy via spaCy for Japanese,
PyThaiNLP for Thai, LaoNLP, khmer-nltk, botok); here whitespace stays vectorised in Arrow
and only the runs of unspaced scripts go through Python.

Cost: a batch with no character of those scripts (one vectorised ASCII check, then one
RE2 scan of the non-ASCII rows) returns ``split_whitespace``'s result unchanged, so
English costs what it did. Where a batch has such runs, each distinct run of the batch is
segmented once. The segmenters (:mod:`datacurate.text.segmenters`) load lazily, once per
process; :func:`check_segmenters` turns a missing one into a config error before work starts.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import ConfigError
from datacurate.text import segmenters as seg
from datacurate.text import textstats as ts

# Unicode blocks of scripts written without spaces between words. CJ: Han (with the
# iteration marks 々〆〇) and kana run together, as Japanese mixes them within a word.
_SCRIPTS = {
    "cj": "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f",
    "thai": "\u0e00-\u0e7f",
    "lao": "\u0e80-\u0eff",
    "tibetan": "\u0f00-\u0fff",
    "myanmar": "\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f",
    "khmer": "\u1780-\u17ff\u19e0-\u19ff",
    # Korean spaces its words, but its rules count morphemes (segmenters.DEFAULT): each Hangul word is a run
    "hangul": "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff",
}
_ALL = "".join(_SCRIPTS.values())
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
# one group per script, then zero-width spaces (Khmer, Myanmar and Thai writers mark word
# breaks with them): a separator
_SEP = "\u200b\ufeff"
_RUNS = re.compile("|".join(f"([{chars}]+)" for chars in _SCRIPTS.values()) + f"|([{_SEP}]+)")
_RUN_SCRIPT = list(_SCRIPTS)
# one script's runs and separators (the fast path of a row whose unspaced runs are all of one
# script: re.split in C instead of a Python step per match), and a test for each script
_ONE = {script: re.compile(f"([{chars}]+)|([{_SEP}]+)") for script, chars in _SCRIPTS.items()}
_HAS = {script: re.compile(f"[{chars}]") for script, chars in _SCRIPTS.items()}


def _re2_class(chars: str) -> str:
    """The same character class in RE2's syntax (Arrow's regex kernels), ``\\x{...}`` escapes."""
    return "".join(f"\\x{{{ord(c):x}}}" if c != "-" else "-" for c in chars)


_RE2_UNSPACED = f"[{_re2_class(_ALL)}]"
_RE2_EDGE_PUNCT = r"^[\pP\pZ]+|[\pP\pZ]+$"

# The default language of each script (for a run the row's language does not cover) and
# the script of each language whose words are not spaced.
_SCRIPT_LANG = {"thai": "th", "lao": "lo", "tibetan": "bo", "myanmar": "my", "khmer": "km", "hangul": "ko"}
_LANG_SCRIPT = {"zh": "cj", "yue": "cj", "wuu": "cj", "gan": "cj", "ja": "cj", "th": "thai", "lo": "lao",
                "bo": "tibetan", "dz": "tibetan", "my": "myanmar", "km": "khmer", "ko": "hangul"}


UNSPACED_LANGS = frozenset(_LANG_SCRIPT)  # lid.176's languages whose words need a segmenter


# ISO 639-3 codes (GlotLID's and FineWeb-2's labels, ``cmn_Hani``) of those languages;
# Hakka and Min Nan in Han script take Chinese words, as in datatrove's assignments
_ISO3 = {"cmn": "zh", "zho": "zh", "hak": "zh", "nan": "zh", "jpn": "ja", "tha": "th", "lao": "lo",
         "khm": "km", "mya": "my", "bod": "bo", "dzo": "dz", "kor": "ko"}


def base_lang(lang) -> str | None:
    """lid.176's code of ``lang``: ``zh``, ``zh_Hant``, ``zh-Hans``, ``__label__zh``, ``cmn_Hani`` -> ``zh``."""
    if lang is None or not isinstance(lang, str) or not lang:
        return None
    lang = lang.removeprefix("__label__")
    code = re.split(r"[_\-]", lang, maxsplit=1)[0].lower() or None
    return _ISO3.get(code, code)


def segmenter_for(lang, table: dict | None = None) -> str | None:
    """The segmenter that cuts ``lang``'s words, or None where its script spaces words."""
    code = base_lang(lang)
    if code not in _LANG_SCRIPT:
        return None
    return {**seg.DEFAULT, **(table or {})}.get(code) or seg.DEFAULT[code]


def check_segmenters(langs, table: dict | None = None) -> None:
    """Raise :class:`ConfigError` (one line: the language, the package, the pip command) when
    a segmenter that ``langs`` need is not importable or unknown. Call it before any work."""
    for lang in langs or ():
        name = segmenter_for(lang, table)
        if name is None:
            continue
        if name not in seg.SEGMENTERS:
            known = ", ".join(sorted(seg.SEGMENTERS))
            raise ConfigError(f"words: language {lang!r}: unknown segmenter {name!r} (known: {known})")
        problem = seg.unavailable(name)
        if problem:
            raise ConfigError(f"words: language {lang!r} needs the word segmenter {name!r}, which cannot be loaded "
                              f"({problem}); install it with: pip install {seg.SEGMENTERS[name].pip}")


def _langs_at(langs, idx: np.ndarray, n: int) -> list:
    """lid.176's code of the language of rows ``idx`` (``langs``: None, one code, or one per row)."""
    if langs is None or isinstance(langs, str):
        return [base_lang(langs)] * len(idx)
    if len(langs) != n:
        raise ValueError(f"words: {len(langs)} languages for {n} texts")
    if isinstance(langs, (pa.Array, pa.ChunkedArray)):
        picked = langs.take(pa.array(idx)).to_pylist()
    else:
        picked = [langs[i] for i in idx]
    return [base_lang(x) for x in picked]


def _run_lang(script: str, run: str, row_lang: str | None) -> str:
    if _LANG_SCRIPT.get(row_lang) == script:
        return row_lang
    if script == "cj":
        return "ja" if _KANA.search(run) else "zh"
    return _SCRIPT_LANG[script]


def unspaced_rows(texts: pa.Array) -> np.ndarray:
    """Mask of rows holding any character of a script written without spaces (vectorised)."""
    n = len(texts)
    ascii_ = np.asarray(pc.string_is_ascii(texts).fill_null(True), dtype=bool)
    out = np.zeros(n, dtype=bool)
    rest = np.flatnonzero(~ascii_)
    if len(rest):
        found = pc.match_substring_regex(pc.take(texts, pa.array(rest)), _RE2_UNSPACED)
        out[rest] = np.asarray(found.fill_null(False), dtype=bool)
    return out


def spaced(texts: pa.Array, langs=None, table: dict | None = None) -> pa.Array:
    """``texts`` with every run of an unspaced script replaced by its words, one space between
    and around them (zero-width spaces become spaces). Rows without such a run come back as
    they were, so whatever splits text on spaces or separators afterwards (MinHash, DSIR's
    features, decontamination's n-grams, fastText) finds words in every script.

    ``langs``: None, one lid.176 code, or one per row (None / ``und`` allowed);
    ``table`` overrides :data:`segmenters.DEFAULT` per language (``{"th": "icu"}``).
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    rows = unspaced_rows(texts)
    if not rows.any():
        return texts
    idx = np.flatnonzero(rows)
    new = _Cutter(table).space_all(texts.take(pa.array(idx)).to_pylist(), _langs_at(langs, idx, len(texts)))
    return pc.replace_with_mask(texts, pa.array(rows), pa.array(new, type=texts.type))


def chunks(text: str, spaced_text: str, k: int) -> list[str]:
    """``text`` cut after every ``k`` words and the spaces after them, words as in
    ``spaced_text`` (:func:`spaced` of it: spaces inserted, zero-width spaces made spaces, a
    Tibetan tsheg dropped); the pieces concatenate back to ``text``."""
    where, i = [], 0  # where[j]: the position in text of spaced_text[j]'s character, -1 if inserted
    for c in spaced_text:
        if i < len(text) and c == " " and text[i] in _SEP:
            where.append(i)
            while i < len(text) and text[i] in _SEP:
                i += 1
        elif i < len(text) and c == text[i]:
            where.append(i)
            i += 1
        elif c == " ":
            where.append(-1)
        else:  # characters the segmenter dropped (a tsheg): skip to this one
            i = text.find(c, i)
            if i < 0:  # not text with spaces put in: one piece, as before
                return [text]
            where.append(i)
            i += 1
    cuts = [m.start() for n, m in enumerate(re.finditer(r"\S+", spaced_text)) if n and n % k == 0]
    bounds = [0] + [where[j] for j in cuts] + [len(text)]
    return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def split_words(texts: pa.Array, langs=None, table: dict | None = None) -> ts.Pieces:
    """Every document's tokens in order (the shape of :func:`textstats.split_whitespace`):
    whitespace tokens, with each run of an unspaced script cut into its words
    (:func:`spaced`; ``langs`` and ``table`` as there)."""
    return ts.split_whitespace(spaced(texts, langs, table))


def _spacing(c: str) -> bool:
    return c.isspace() or c in _SEP


class _Cutter:
    """Segments the runs of one batch: each distinct (segmenter, language, run) once, all
    runs of one segmenter in a few calls (:func:`segmenters.segment_runs`)."""

    def __init__(self, table: dict | None):
        self.table = table
        self.groups: dict[tuple, dict[str, int]] = {}  # (segmenter, language, script) -> {run: index}
        self.names: dict[str, str] = {}  # language -> segmenter

    def one_script(self, text: str, lang: str | None):
        """The row as (key, parts, run indices) when its unspaced runs are all of one script
        and their language does not depend on each run (a Chinese / Japanese guess for Han
        text in a row of another language does), else None. ``parts`` is ``re.split`` of
        :data:`_ONE`: text between matches, then each match's run and separator groups."""
        present = [script for script in _RUN_SCRIPT if _HAS[script].search(text)]
        if len(present) != 1:
            return None
        script = present[0]
        if script == "cj" and _LANG_SCRIPT.get(lang) != "cj":
            return None
        run_lang = lang if _LANG_SCRIPT.get(lang) == script else _SCRIPT_LANG[script]
        name = self.names.get(run_lang)
        if name is None:
            name = self.names[run_lang] = segmenter_for(run_lang, self.table)
        key = (name, run_lang, script)
        runs = self.groups.setdefault(key, {})
        parts = _ONE[script].split(text)
        idx = [None if r is None else runs.setdefault(r, len(runs)) for r in parts[1::3]]
        return key, parts, idx

    def find(self, text: str, lang: str | None) -> list[tuple]:
        """(start, end, group, index of the run in its group) of every run; group None: a separator."""
        found = []
        for m in _RUNS.finditer(text):
            if m.lastindex > len(_RUN_SCRIPT):  # zero-width spaces
                found.append((m.start(), m.end(), None, 0))
                continue
            script, run = _RUN_SCRIPT[m.lastindex - 1], m.group()
            run_lang = _run_lang(script, run, lang)
            name = self.names.get(run_lang)
            if name is None:
                name = self.names[run_lang] = segmenter_for(run_lang, self.table)
            key = (name, run_lang, script)
            runs = self.groups.setdefault(key, {})
            found.append((m.start(), m.end(), key, runs.setdefault(run, len(runs))))
        return found

    def space_all(self, texts: list[str], langs: list) -> list[str]:
        found = [self.one_script(t, lang) or self.find(t, lang) for t, lang in zip(texts, langs)]
        spaced_runs = {key: [" ".join(w) for w in _segment(key, list(runs))] for key, runs in self.groups.items()}
        out = []
        for text, runs in zip(texts, found):
            if isinstance(runs, tuple):  # one script: the same text as the general path below
                out.append(_respace(*runs, spaced_runs))
                continue
            parts, last = [], 0
            for start, end, key, i in runs:
                parts.append(text[last:start])
                if key is None:
                    parts.append(" ")
                else:
                    before = " " if start > 0 and not _spacing(text[start - 1]) else ""
                    after = " " if end < len(text) and not _spacing(text[end]) else ""
                    parts.append(before + spaced_runs[key][i] + after)
                last = end
            parts.append(text[last:])
            out.append("".join(parts))
        return out


def _respace(key: tuple, parts: list, idx: list, spaced_runs: dict) -> str:
    """A one-script row put back together: each run as its words, a space before / after it
    where the text beside it is not white space, separators as one space (as ``space_all``)."""
    words = spaced_runs[key]
    out = [parts[0]]
    for j, i in enumerate(idx):
        after = parts[3 * j + 3]
        if i is None:  # a separator
            out.append(" ")
        else:
            before = parts[3 * j]
            out.append((" " if before and not _spacing(before[-1]) else "") + words[i]
                       + (" " if after and not _spacing(after[0]) else ""))
        out.append(after)
    return "".join(out)


_WARNED: set = set()


def _segment(key: tuple, runs: list[str]) -> list[list[str]]:
    """The words of each run by segmenter ``key[0]``; the runs whole (and one warning per
    process) where it is missing."""
    name, lang, script = key
    try:
        cut = seg.segment_runs(name, lang, runs)
    except ImportError as e:
        if name not in _WARNED:
            _WARNED.add(name)
            warnings.warn(f"words: segmenter {name!r} for {lang!r} cannot be loaded ({e}); "
                          f"its runs stay whole (pip install {seg.SEGMENTERS[name].pip})", stacklevel=4)
        return [[run] for run in runs]
    if script == "tibetan":  # the tsheg (syllable mark) is a separator, not part of a word
        cut = [[w.strip("\u0f0b\u0f0c") for w in words] for words in cut]
    return [[w for w in (w.strip() for w in words) if w] for words in cut]


def words_of(texts: pa.Array, langs=None, table: dict | None = None) -> ts.Pieces:
    """Words as :func:`textstats.words_of` counts them (punctuation stripped from the ends,
    punctuation-only tokens dropped), from :func:`split_words`. Rows without an unspaced
    script give exactly ``textstats.words_of``; pieces of segmented rows also lose Unicode
    punctuation (``「」（）《》``) at their ends."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    tokens = split_words(texts, langs, table)
    stripped = pc.utf8_trim(tokens.values, ts.PUNCT)
    rows = unspaced_rows(texts)
    if rows.any():
        wide = rows[tokens.doc]
        more = pc.replace_substring_regex(stripped, _RE2_EDGE_PUNCT, "")
        stripped = pc.if_else(pa.array(wide), more, stripped)
    tokens = ts.Pieces(stripped, tokens.doc, tokens.offsets, tokens.n_docs)
    return tokens.select(np.asarray(pc.greater(pc.utf8_length(stripped), 0).fill_null(False)))
