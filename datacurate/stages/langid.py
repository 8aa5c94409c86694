"""Stage ``langid``: language identification with fastText lid.176.

Model: lid.176 (Joulin et al., "Bag of Tricks for Efficient Text Classification",
2016; Grave et al. 2018), 176 languages, the quantised 917 KB ``.ftz`` shipped in
``datacurate/models`` (CC BY-SA 3.0). FineWeb (Penedo et al. 2024) and DCLM
(Li et al. 2024) keep English at a top-1 score >= 0.65; that is the default here.

fastText reads one line per example, so newlines are replaced by spaces first (as
the model's training data was one sentence per line), and it splits words at ASCII white
space only: the model reads the layout-normalised view of the text
(:mod:`datacurate.text.layout`: Unicode spaces as spaces, invisible format characters
out), so non-breaking spaces do not decide a page's language; ``text`` is unchanged.
Prediction runs in fastText's C++ ``multilinePredict`` over the whole batch. Documents with no non-space
character cannot be identified: they get ``lang = "und"`` and score 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.models.fasttext_model import load_fasttext
from datacurate.core.schema import TEXT
from datacurate.stages.base import Score, Stage, first_reason, value_counts
from datacurate.text.layout import layout_normalized

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "lid.176.ftz"


@dataclass
class LangIdConfig:
    languages: Optional[list[str]] = opt(None, "keep-list of ISO codes; null = annotate and keep every language")
    min_score: float = opt(0.65, "with a keep-list: reject when the top-1 probability is below this")
    model: Optional[str] = opt(None, "path to a fastText LID model; null = the shipped lid.176.ftz")
    max_chars: int = opt(100_000, "characters of each document given to the model (long docs: a prefix)")

    def validate(self) -> None:
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError("min_score must be within [0, 1]")
        if self.max_chars <= 0:
            raise ValueError("max_chars must be positive")


class LangId(Stage):
    name = "langid"
    side_inputs = ("model",)
    local_side_inputs = ("model",)
    Config = LangIdConfig
    columns = {"lang": pa.string(), "lang_score": pa.float32()}
    scores = {"lang_score": Score("langid: top-1 language probability", "min_score",
                                  applies=lambda c: c.languages is not None)}
    counted = {"lang": ("language", "documents langid saw")}

    def __init__(self, config: LangIdConfig | None = None, **params):
        super().__init__(config, **params)
        self.model = load_fasttext(self.config.model or DEFAULT_MODEL)

    def metrics(self, table: pa.Table) -> dict:
        return {"lang": value_counts(table.column("lang"))}

    def annotate(self, table: pa.Table):
        text = layout_normalized(pc.utf8_slice_codeunits(table.column(TEXT), 0, self.config.max_chars))
        flat = pc.replace_substring_regex(text, r"[\r\n\t\v\f\x{2028}\x{2029}]+", " ")
        lines = flat.to_pylist()
        empty = np.asarray(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(flat)), 0).fill_null(True))
        n = len(lines)
        langs = np.full(n, "und", dtype=object)
        scores = np.zeros(n, dtype=np.float32)
        idx = np.flatnonzero(~empty)
        if len(idx):
            labels, probs = self.model.predict([lines[i] for i in idx], k=1)
            langs[idx] = [lab[0][9:] if lab else "und" for lab in labels]  # strip "__label__"
            # the quantised model's softmax can exceed 1 by rounding (1.00003): clip
            scores[idx] = np.clip(np.array([p[0] if len(p) else 0.0 for p in probs], dtype=np.float32), 0.0, 1.0)
        reasons = None
        if self.config.languages is not None:
            keep = set(self.config.languages)
            wrong = ~np.isin(langs.astype(str), list(keep))
            reasons = first_reason(n, [
                ("langid/no_text", empty),
                ("langid/language", wrong),
                ("langid/low_score", scores < self.config.min_score),
            ])
        return {"lang": pa.array(langs, pa.string()), "lang_score": pa.array(scores, pa.float32())}, reasons
