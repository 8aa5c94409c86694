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

Per language: ``min_scores`` (or a ``thresholds`` YAML, as ``datacurate calibrate`` writes;
or ``fineweb2``, FineWeb-2's per-language cut-offs) gives each language its own minimum
score; ``min_score`` stays the default. FineWeb-2 (Penedo et al. 2025) sets each language's
cut-off at max(0.3, min(0.9, median - std)) of its scores: its figures were fitted on GlotLID's
scores, so for lid.176 fit your own (``datacurate calibrate``).

Script: ``lang_script`` is the document's dominant writing system (:mod:`datacurate.text.scripts`),
or the model's own where its labels carry one. It tells apart what lid.176 cannot: ``zh``
Hans / Hant, ``sr`` Cyrl / Latn, ``hi`` Deva / romanised (Latn).

A wider model plugs in through ``model:``: a GlotLID-style fastText file whose labels are
ISO 639-3 + script (``__label__fra_Latn``) is mapped onto lid.176's codes where one exists
(``lang = fr``, ``lang_script = Latn``; :func:`label_map`), else ``lang`` keeps the ISO 639-3
code (``aai``), which the per-language rules also know (FineWeb-2's configs are keyed so).
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
from datacurate.core.schema import LANG, LANG_SCRIPT, TEXT
from datacurate.stages.base import Score, Stage, first_reason, value_counts
from datacurate.text.langrules import fineweb2, read_thresholds
from datacurate.text.layout import layout_normalized
from datacurate.text.scripts import SCRIPTS, allowed_for, scripts_of

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "lid.176.ftz"


@dataclass
class LangIdConfig:
    languages: Optional[list[str]] = opt(None, "keep-list of ISO codes; null = annotate and keep every language")
    min_score: float = opt(0.65, "with a keep-list: reject when the top-1 probability is below this")
    model: Optional[str] = opt(None, "path to a fastText LID model; null = the shipped lid.176.ftz")
    max_chars: int = opt(100_000, "characters of each document given to the model (long docs: a prefix)")
    thresholds: Optional[str] = opt(None, "per-language minimum scores: a YAML `datacurate calibrate` wrote, or "
                                    "fineweb2 (FineWeb-2's, fitted on GlotLID scores); with it every row "
                                    "must reach its language's score, keep-list or not")
    min_scores: dict[str, float] = opt({}, "per-language minimum scores over thresholds:, e.g. {fr: 0.7, sr_Latn: 0.5}")
    max_threshold: Optional[float] = opt(None, "caps each minimum score thresholds: gives (not min_scores:); "
                                         "FineWeb-2's are on GlotLID's scale, which lid.176 does not reach for "
                                         "languages it confuses with a neighbour (README)")

    def validate(self) -> None:
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError("min_score must be within [0, 1]")
        if self.max_threshold is not None and not 0.0 <= self.max_threshold <= 1.0:
            raise ValueError("max_threshold must be within [0, 1]")
        if self.max_chars <= 0:
            raise ValueError("max_chars must be positive")
        bad = {k: v for k, v in self.per_language_scores().items() if not 0.0 <= float(v) <= 1.0}
        if bad:
            raise ValueError(f"per-language minimum scores must be within [0, 1]: {bad}")

    def per_language_scores(self) -> dict[str, float]:
        """``{lang or lang_Script: minimum score}`` from ``thresholds`` and ``min_scores``."""
        out: dict[str, float] = {}
        if self.thresholds == "fineweb2":
            table = fineweb2()
            for code, by_script in table["lid176"].items():
                for i, (script, key) in enumerate(by_script.items()):
                    score = table["configs"][key]["language_score"]
                    out[f"{code}_{script}"] = score
                    if i == 0:
                        out[code] = score
        elif self.thresholds:
            for lang, rules in read_thresholds(self.thresholds).items():
                if "langid.min_score" in rules:
                    out[lang] = float(rules["langid.min_score"])
        if self.max_threshold is not None:
            out = {k: min(v, self.max_threshold) for k, v in out.items()}
        out.update({str(k): float(v) for k, v in self.min_scores.items()})
        return out


def label_map(labels: list[str]) -> dict[str, tuple[str, Optional[str]]]:
    """A model's labels (``__label__`` stripped) -> (lang, script): lid.176's own codes as
    they are; ISO 639-3 + script labels (``fra_Latn``, GlotLID's) onto lid.176's code of that
    language where FineWeb-2's table has one (``fr``), else the ISO 639-3 code."""
    table = fineweb2()["lid176"]
    iso_to_lid = {}
    for code, by_script in table.items():
        for key in by_script.values():
            iso_to_lid.setdefault(key.split("_")[0], code)
    out = {}
    for lab in labels:
        base, sep, script = lab.partition("_")
        if sep and len(script) == 4 and script[:1].isupper():
            out[lab] = (iso_to_lid.get(base, base), script)
        else:
            out[lab] = (lab, None)
    return out


class LangId(Stage):
    name = "langid"
    side_inputs = ("model",)
    local_side_inputs = ("model",)
    Config = LangIdConfig
    columns = {LANG: pa.string(), "lang_score": pa.float32(), LANG_SCRIPT: pa.string()}
    scores = {"lang_score": Score("langid: top-1 language probability", "min_score",
                                  applies=lambda c: c.languages is not None and not c.min_scores and not c.thresholds)}
    counted = {"lang": ("language", "documents langid saw")}

    def __init__(self, config: LangIdConfig | None = None, **params):
        super().__init__(config, **params)
        self.model = load_fasttext(self.config.model or DEFAULT_MODEL)
        self.labels = label_map([lab.removeprefix("__label__") for lab in self.model.get_labels()])
        self.min_scores = self.config.per_language_scores()

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
        model_script = np.full(n, None, dtype=object)
        if len(idx):
            labels, probs = self.model.predict([lines[i] for i in idx], k=1)
            mapped = [self.labels.get(lab[0][9:], (lab[0][9:], None)) if lab else ("und", None) for lab in labels]
            langs[idx] = [m[0] for m in mapped]
            model_script[idx] = [m[1] for m in mapped]
            # the quantised model's softmax can exceed 1 by rounding (1.00003): clip
            scores[idx] = np.clip(np.array([p[0] if len(p) else 0.0 for p in probs], dtype=np.float32), 0.0, 1.0)
        model_script = pa.array(model_script, pa.string())  # the model's own script label, where it has one
        detected = scripts_of(text, allowed=self.allowed_scripts(langs))
        script = np.asarray(pc.coalesce(model_script, detected).to_numpy(zero_copy_only=False), dtype=object)
        reasons = None
        if self.config.languages is not None or self.min_scores:
            wrong = np.zeros(n, dtype=bool)
            if self.config.languages is not None:
                wrong = ~np.isin(langs.astype(str), list(set(self.config.languages)))
            reasons = first_reason(n, [
                ("langid/no_text", empty),
                ("langid/language", wrong),
                ("langid/low_score", scores < self.row_min_scores(langs, script)),
            ])
        cols = {LANG: pa.array(langs, pa.string()), "lang_score": pa.array(scores, pa.float32()),
                LANG_SCRIPT: pa.array(script, pa.string())}
        return cols, reasons

    def allowed_scripts(self, langs: np.ndarray) -> np.ndarray:
        """(n, len(SCRIPTS)) mask: the scripts FineWeb-2 has a config of for each row's language
        (every script for a language it has none of), one lookup per distinct language."""
        table = fineweb2()["lid176"]
        uniq, inv = np.unique(langs.astype(str), return_inverse=True)
        masks = np.stack([allowed_for(set(table.get(code) or {})) for code in uniq]) if len(uniq) else \
            np.ones((0, len(SCRIPTS)), dtype=bool)
        return masks[inv] if len(uniq) else np.ones((len(langs), len(SCRIPTS)), dtype=bool)

    def row_min_scores(self, langs: np.ndarray, script: np.ndarray) -> np.ndarray:
        """Each row's minimum score: its language + script's, its language's, else ``min_score``
        (one lookup per distinct language and script of the batch)."""
        pairs = np.char.add(np.char.add(langs.astype(str), "_"), script.astype(str))
        uniq, inv = np.unique(pairs, return_inverse=True)
        per = [self.min_scores.get(p, self.min_scores.get(p.rpartition("_")[0], self.config.min_score)) for p in uniq]
        return np.asarray(per, dtype=np.float32)[inv]

