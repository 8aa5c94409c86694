"""The word segmenters :mod:`datacurate.text.words` can use, each loaded lazily once per process.

A segmenter is ``fn(run, lang) -> list[str]`` over one run of an unspaced script (no
whitespace in it). :data:`DEFAULT` says which one each language gets; a pipeline may name
another per language. The choice is measured in ``benchmarks/bench_words.py`` (words/s and
agreement with datatrove's tokenizers, whose output FineWeb-2's per-language thresholds
were fitted on); see benchmarks/README.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable


@dataclass(frozen=True)
class Spec:
    module: str  # what must import
    pip: str  # what to install
    make: Callable[[], Callable[[str, str], list]]  # builds fn(run, lang) -> words


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

    tok = Dictionary().create()
    # mode A (shortest units) is spaCy's default for Japanese, which datatrove (FineWeb-2) uses
    return lambda run, lang: [m.surface() for m in tok.tokenize(run, SplitMode.A)]


def _pythainlp():
    from pythainlp.tokenize import word_tokenize

    return lambda run, lang: word_tokenize(run, engine="newmm-safe", keep_whitespace=False)


def _laonlp():
    from laonlp.tokenize import word_tokenize

    return lambda run, lang: word_tokenize(run)


def _khmer():
    import logging

    logging.getLogger("khmer-nltk").setLevel(logging.WARNING)
    from khmernltk import word_tokenize

    return lambda run, lang: word_tokenize(run, return_tokens=True)


SEGMENTERS = {
    "icu": Spec("icu4py.breakers", "icu4py", _icu),
    "rjieba": Spec("rjieba", "rjieba", _rjieba),
    "jieba": Spec("jieba", "jieba", _jieba),
    "sudachipy": Spec("sudachidict_core", "sudachipy sudachidict-core", _sudachi),
    "pythainlp": Spec("pythainlp", "pythainlp", _pythainlp),
    "laonlp": Spec("laonlp", "laonlp", _laonlp),
    "khmer-nltk": Spec("khmernltk", "khmer-nltk", _khmer),
}

# language (lid.176's code) -> segmenter. Tibetan: ICU cuts syllables at the tsheg; botok
# (datatrove's choice) downloads its dictionary from GitHub on first use, which fails offline.
DEFAULT = {
    "zh": "rjieba", "yue": "rjieba", "wuu": "rjieba", "gan": "rjieba",
    "ja": "icu", "th": "pythainlp", "lo": "icu", "km": "icu", "my": "icu", "bo": "icu", "dz": "icu",
}


@lru_cache(maxsize=None)
def load(name: str):
    """The segmenter ``name``, built on first use in this process (ImportError when missing)."""
    return SEGMENTERS[name].make()


def unavailable(name: str) -> str | None:
    """Why ``name`` cannot be loaded here, or None when it can."""
    try:
        importlib.import_module(SEGMENTERS[name].module)
    except ImportError as e:
        return str(e)
    return None
