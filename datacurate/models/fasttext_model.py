"""fastText models: loading, and scoring a batch of documents in one C++ call.

The stages (langid, quality, toxicity) and the classifier training
(:mod:`datacurate.classify`) share this: the normalisation (:func:`normalize`) is the
same at training and inference, and a model's card (``<model>.json``) says which
normalisation it was trained with, so :class:`FastTextScorer` applies it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.text import words as wordseg
from datacurate.text.charclass import RegexClass, spaced


def load_fasttext(path: str | Path):
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None  # silence the load_model deprecation notice
    if not Path(path).is_file():
        raise FileNotFoundError(f"fastText model not found: {path}")
    return fasttext.load_model(str(path))


HIST_BINS = [f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in range(10)]


# fastText splits words at ASCII white space only; every other separator (and the
# newlines it must not see: one example per line) becomes spaces. Runs of spaces are
# left as they are: fastText reads them as one separator.
_SPACES = r"[\t\n\v\f\r\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"


@functools.cache
def _split_classes():
    """(punctuation and symbols, spaces): the classes of the punctuation split, per process."""
    return RegexClass(r"[\pP\pS]"), RegexClass(_SPACES)


def normalize(text: pa.Array | pa.ChunkedArray | list, lowercase: bool = False, max_chars: int = 100_000,
              split_punctuation: bool = False, langs=None) -> pa.Array:
    """One line per document; optionally lowercased, punctuation and symbols split off as tokens.

    Runs of scripts written without spaces (Chinese, Japanese, Thai ...) are cut into words
    (:func:`datacurate.text.words.spaced`, segmenter by ``langs``: None, one lid.176 code or
    one per row), or fastText would read a whole clause as one token; other text is as before."""
    if not isinstance(text, (pa.Array, pa.ChunkedArray)):
        text = pa.array(text, pa.large_string())
    t = wordseg.spaced(pc.utf8_slice_codeunits(text.fill_null(""), 0, max_chars), langs)
    if lowercase:
        t = pc.utf8_lower(t)
    if split_punctuation:  # = replace_substring_regex(t, "([\pP\pS])|" + _SPACES, " \1 "), 3x faster
        t = spaced(t, *_split_classes())
    else:
        t = pc.replace_substring_regex(t, _SPACES, " ")
    return pc.utf8_trim_whitespace(t)


def score_histogram(scores: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    """Counts in ten fixed bins 0.0-0.1 ... 0.9-1.0 of a score column (null or NaN = unscored, left out)."""
    s = scores.to_numpy(zero_copy_only=False).astype(np.float64)
    s = s[~np.isnan(s)]
    counts, _ = np.histogram(s, bins=np.linspace(0.0, 1.0, 11))
    return {b: int(c) for b, c in zip(HIST_BINS, counts)}


def load_card(model_path: str | Path) -> dict:
    card = Path(model_path).with_suffix(".json")
    return json.loads(card.read_text()) if card.is_file() else {}


class FastTextScorer:
    """P(``label``) for every document of a batch, in one C++ ``predict`` call."""

    def __init__(self, path: str | Path, label: str, max_chars: int = 100_000):
        self.model = load_fasttext(path)
        labels = [lab.removeprefix("__label__") for lab in self.model.get_labels()]
        if label not in labels:
            raise ValueError(f"{path}: no label {label!r} in the model (labels: {labels})")
        self.label, self.binary = "__label__" + label, len(labels) == 2
        # as trained (the card); a model without a card gets fastText's usual input
        norm = load_card(path).get("normalization", {})
        self.lowercase = bool(norm.get("lowercase", False))
        self.split_punctuation = bool(norm.get("split_punctuation", False))
        self.max_chars = max_chars

    def score(self, text: pa.Array | pa.ChunkedArray | list, langs=None) -> np.ndarray:
        """float32 scores; NaN where nothing is left after normalisation (empty text).
        ``langs``: each row's language (the word segmenter's), or None."""
        lines = normalize(text, self.lowercase, self.max_chars, self.split_punctuation, langs)
        empty = np.asarray(pc.equal(pc.utf8_length(lines), 0))
        out = np.full(len(lines), np.nan, dtype=np.float32)
        idx = np.flatnonzero(~empty)
        if len(idx):
            todo = lines.take(pa.array(idx)).to_pylist()
            if self.binary:  # two-class softmax: P(other) = 1 - P(top)
                labels, probs = self.model.predict(todo, k=1)
                top = np.array([p[0] for p in probs], dtype=np.float32)
                hit = np.array([lab[0] == self.label for lab in labels])
                out[idx] = np.clip(np.where(hit, top, 1.0 - top), 0.0, 1.0)
            else:
                labels, probs = self.model.predict(todo, k=-1)
                out[idx] = [dict(zip(lab, p)).get(self.label, 0.0) for lab, p in zip(labels, probs)]
        return out
