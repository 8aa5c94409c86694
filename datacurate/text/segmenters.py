"""The word segmenters :mod:`datacurate.text.words` can use, each loaded lazily once per process.

A segmenter is ``fn(run, lang) -> list[str]`` over one run of an unspaced script (no
whitespace in it). :data:`DEFAULT` says which one each language gets; a pipeline may name
another per language. The choice is measured in ``benchmarks/bench_words.py`` (words/s and
agreement with datatrove's tokenizers, whose output FineWeb-2's per-language thresholds
were fitted on); see benchmarks/README.md.
"""

from __future__ import annotations

import bisect
import importlib
import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable


@dataclass(frozen=True)
class Spec:
    module: str  # what must import
    pip: str  # what to install
    make: Callable[[], Callable[[str, str], list]]  # builds fn(run, lang) -> words
    # runs may share a call (joined by newlines): only where a run's words never depend on
    # its neighbours, or a run's words would depend on the batch it came in. SudachiPy
    # (start-of-input vs after a newline) and PyThaiNLP's newmm-safe (it cuts long input into
    # pieces) do not qualify; khmer-nltk's CRF reads the whole sequence
    joinable: bool = True
    batch: bool = False  # make() builds fn(runs, lang) -> [words of each run], one call for a batch's runs


def _icu():
    from icu4py.breakers import WordBreaker  # ICU's dictionary break iterator (CJ, Thai, Lao, Khmer, Myanmar)

    def cut(run: str, lang: str) -> list:
        return [run[s:e] for s, e in WordBreaker(run, lang).segments()]

    return cut


def _rjieba():
    import rjieba  # jieba's algorithm and dictionary, in Rust

    return lambda run, lang: rjieba.cut(run)


def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return lambda run, lang: jieba.lcut(run)


def _sudachi():
    from sudachipy import Dictionary, SplitMode

    d = Dictionary()
    tok = d.tokenizer() if hasattr(d, "tokenizer") else d.create()  # create(): SudachiPy < 0.7
    # mode A (shortest units) is spaCy's default for Japanese, which datatrove (FineWeb-2) uses
    return lambda run, lang: [m.surface() for m in tok.tokenize(run, SplitMode.A)]


def _pythainlp():
    from pythainlp.tokenize import word_tokenize

    return lambda run, lang: word_tokenize(run, engine="newmm-safe", keep_whitespace=True)


def _laonlp():
    from laonlp.tokenize import word_tokenize

    return lambda run, lang: word_tokenize(run)


def _khmer():
    import logging

    logging.getLogger("khmer-nltk").setLevel(logging.WARNING)
    from khmernltk import word_tokenize

    return lambda run, lang: word_tokenize(run, return_tokens=True)


_KIWI_MAX = 200  # characters of one space-separated Hangul word Kiwi analyses


def _kiwi():
    from kiwipiepy import Kiwi  # Korean morphemes: datatrove's Korean tokenizer, the units of FineWeb-2's Korean config

    # without the multi-word (proper noun) and typo dictionaries: 340 MB in the process, not
    # 520 MB, and the same morphemes on the test set's Korean
    kiwi = Kiwi(num_workers=1, load_multi_dict=False, load_typo_dict=False)

    def cut(runs: list, lang: str) -> list:
        # a Hangul "word" of hundreds of characters is no Korean word (garbage, a spaceless
        # page): whole, not analysed (Kiwi took 8 s on one run of 100,000 characters)
        short = [r for r in runs if len(r) <= _KIWI_MAX]
        cuts = dict(zip(short, kiwi.tokenize(short)))
        out = []
        for run in runs:
            if run not in cuts:
                out.append([run])
                continue
            toks = cuts[run]
            words, end = [], 0
            for t in toks:  # a contraction's morphemes share their span (했 = 하 + 었): the span once
                a, b = max(t.start, end), t.start + t.len
                if b > a:
                    words.append(run[a:b])
                    end = b
            if end < len(run):  # never lose a character: what the morphemes leave joins the last word
                words[-1:] = ["".join(words[-1:]) + run[end:]]
            out.append(words)
        return out

    return cut


SEGMENTERS = {
    "icu": Spec("icu4py.breakers", "icu4py", _icu),
    "rjieba": Spec("rjieba", "rjieba", _rjieba),
    "jieba": Spec("jieba", "jieba", _jieba),
    "sudachipy": Spec("sudachidict_core", "sudachipy sudachidict-core", _sudachi, joinable=False),
    "pythainlp": Spec("pythainlp", "pythainlp", _pythainlp, joinable=False),
    "laonlp": Spec("laonlp", "laonlp", _laonlp, joinable=False),  # PyThaiNLP's maximal matching inside
    "khmer-nltk": Spec("khmernltk", "khmer-nltk", _khmer, joinable=False),
    "kiwi": Spec("kiwipiepy_model", "kiwipiepy", _kiwi, joinable=False, batch=True),
}

# language (lid.176's code) -> segmenter, chosen by benchmarks/bench_words.py: where a
# segmenter agrees with datatrove's (the words FineWeb-2 fitted its per-language thresholds
# on: word-span F1 1.0 for rjieba, SudachiPy mode A, PyThaiNLP, LaoNLP), that one, the fastest
# such; Khmer, Burmese and Tibetan get ICU (khmer-nltk agrees with datatrove but runs at
# ~85k chars/s and pulls scikit-learn: an option; datatrove's Burmese pyidaungsu replaces the
# fastText module; botok downloads its dictionary on first use, which fails offline).
# ICU cuts Tibetan into syllables at the tsheg. Korean spaces its words, but FineWeb-2's
# Korean stop words and word lengths are Kiwi's morphemes (의 는 에 을, as datatrove splits
# Korean): each space-separated Hangul word is cut into its morphemes by Kiwi (kiwipiepy, a
# batch of a document batch's distinct words per call).
DEFAULT = {
    "zh": "rjieba", "yue": "rjieba", "wuu": "rjieba", "gan": "rjieba",
    "ja": "sudachipy", "th": "pythainlp", "lo": "laonlp",
    "km": "icu", "my": "icu", "bo": "icu", "dz": "icu",
    "ko": "kiwi",
}


@lru_cache(maxsize=None)
def load(name: str):
    """The segmenter ``name``, built on first use in this process (ImportError when missing)."""
    return SEGMENTERS[name].make()


_CALL_CHARS = 8192  # runs per call: SudachiPy refuses inputs over 49,149 bytes


def segment_runs(name: str, lang: str, runs: list[str]) -> list[list[str]]:
    """The words of each run, each run's alone. For a ``joinable`` segmenter the runs are joined
    by newlines, a few thousand characters a call, so its per-call cost (ICU's set-up) is
    paid per batch, not per run: each word is found in the joined text in order and goes to
    the run it starts in; a word spanning a newline is cut there. Where its words are not
    the text in order, that call's runs are segmented one by one."""
    fn, out, i = load(name), [], 0
    if SEGMENTERS[name].batch:
        return fn(runs, lang)
    if not SEGMENTERS[name].joinable:
        return [fn(run, lang) for run in runs]
    while i < len(runs):
        j, size = i + 1, len(runs[i])
        while j < len(runs) and size + len(runs[j]) < _CALL_CHARS:
            size += len(runs[j]) + 1
            j += 1
        out += _split_back(fn, lang, runs[i:j])
        i = j
    return out


def _split_back(fn, lang: str, runs: list[str]) -> list[list[str]]:
    if len(runs) == 1:
        return [fn(runs[0], lang)]
    joined = "\n".join(runs)
    toks = fn(joined, lang)
    if "".join(toks) == joined:  # the usual case: the words are the text, newlines included
        words: list[list[str]] = [[]]
        for tok in toks:
            if "\n" in tok:
                first, *rest = tok.split("\n")
                if first:
                    words[-1].append(first)
                words += [[part] if part else [] for part in rest]
            else:
                words[-1].append(tok)
        return words
    starts = list(itertools.accumulate((len(r) + 1 for r in runs[:-1]), initial=0))
    words = [[] for _ in runs]
    pos = 0
    for tok in toks:  # whitespace dropped (khmer-nltk): find each word in order
        at = joined.find(tok, pos)
        if at < 0 or (at > pos and joined[pos:at].strip()):  # not the text in order: one by one
            return [fn(r, lang) for r in runs]
        pos = at + len(tok)
        for part in tok.split("\n"):
            if part.strip():
                words[bisect.bisect_right(starts, at) - 1].append(part)
            at += len(part) + 1
    return words


def unavailable(name: str) -> str | None:
    """Why ``name`` cannot be loaded here, or None when it can."""
    try:
        importlib.import_module(SEGMENTERS[name].module)
    except ImportError as e:
        return str(e)
    return None
