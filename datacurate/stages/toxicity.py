"""Stage ``toxicity``: a fastText toxicity classifier plus the LDNOOBW word-list rule.

Two rules (keys, defaults and reasons: the README's ``toxicity`` section). The default is
the classifier with a document threshold, Dolma-style: a document is rejected when more than
3 % of its sentences score at or above the model card's sentence threshold. On real pages
(``benchmarks/eval_toxicity.py``: 181 news articles, 1,096 Debian documentation pages, 124
Brown samples, a Mona Lisa page) that rejects 0.1 % of mainstream pages and no news article,
and catches 75 % of 20-sentence windows of held-out nlp-corpus text with one hand-labelled
explicit sentence, 91 % with two; C4's one-word rule rejects 5.7 % of the mainstream pages
(9.4 % of the news articles, and the Mona Lisa) for the same 75 % / 94 % recall. The word
list is off by default and stays available as C4's rule (``wordlist: {enabled: true}``).

* ``classifier``: a fastText model trained sentence by sentence on hand labels to find
  explicit offence (the explicit / implicit split of Waseem et al. 2017),
  classifiers/README.md; Dolma (Soldaini et al. 2024) likewise scored sentences with
  fastText classifiers trained on Jigsaw toxic comments. A document's ``toxicity_score``
  is made from its sentences' (or lines') P(toxic) by ``aggregate``: ``mean``, ``max`` or
  ``share`` (at or above the one-sentence decision threshold of the model's card). The
  shipped model's scores are not calibrated (its threshold is 0.9, not 0.5), so its mean
  P(toxic) is a ranking, not a share of toxic sentences; ``share`` is that share.
* ``wordlist``: C4 (Raffel et al. 2020) removed every page containing a word of the
  "List of Dirty, Naughty, Obscene or Otherwise Bad Words"; mC4 (Xue et al. 2021) did
  so per language, without word boundaries for ja / th / zh. The list is chosen per row
  by ``lang``; matching is case-insensitive and whole-word ("Scunthorpe" and "assessment"
  do not match). The lists ship in ``datacurate/resources/ldnoobw`` (CC BY 4.0).

Matching is one RE2 regex per language over the batch. RE2 has no look-around, so
a word boundary is a consumed non-word character; every non-word character of the
text (and of the entries) is doubled first (in NumPy, :mod:`charclass`), so that
adjacent matches each keep one and are all counted. Word lists are blunt: names ("Dick"), period usage and medical
terms match too; the classifier score is the finer signal.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.models.fasttext_model import FastTextScorer, load_card, score_histogram
from datacurate.core.schema import LANG, TEXT
from datacurate.stages.base import Score, Stage, first_reason
from datacurate.stages.classifier_keys import Calibrated
from datacurate.text.charclass import RegexClass, double
from datacurate.stages.quality import CLASSIFIERS, scored_rows

DEFAULT_MODEL = CLASSIFIERS / "toxicity.ftz"
DEFAULT_LISTS = Path(__file__).resolve().parent.parent / "resources" / "ldnoobw"
LANG_ALIASES = {"tl": "fil"}  # lid.176 code -> list name
NON_WORD = r"[^\pL\pN\pM_]"
META = set("\\.^$|?*+()[]{}")
# a sentence ends here: after . ! ? … (and the danda, Arabic, Urdu, Armenian, Ethiopic and
# Burmese ends) when white space follows, as in spaced scripts; after the full-width 。！？
# (with their closing quotes and brackets) whether or not white space follows: Chinese and
# Japanese put none between sentences
SENTENCE_END = ("([.!?\u2026\u0964\u0965\u061f\u06d4\u0589\u1362\u104b]+[\"'\u201d\u2019)\\]]*)\\s+"
                "|([\u3002\uff01\uff1f]+[\u300d\u300f\u201d\u2019\uff09)]*)\\s*")


@dataclass
class ClassifierRuleConfig:
    enabled: bool = True
    model: Optional[str] = opt(None, "fastText model; null = classifiers/toxicity.ftz")
    label: str = opt("toxic", "the model label whose probability is toxicity_score")
    max_score: float = opt(0.03, "reject above this document score (see aggregate); 0.03 of sentences at the card's "
                           "threshold: benchmarks/results/toxicity.json")
    languages: Optional[list[str]] = opt(["en"], "score rows with these lang values; null = all")
    granularity: Literal["sentence", "line", "document"] = opt("sentence", "the unit the model scores")
    aggregate: Literal["mean", "max", "share"] = opt("share", "sentence / line: a document's score from its units': "
                                                     "mean P(label) | max (worst unit) | share >= unit_threshold")
    unit_threshold: Optional[float] = opt(None, "aggregate share: a unit's decision threshold; null = the model card's")
    max_chars: int = opt(100_000, "characters of each document given to the model")

    def validate(self) -> None:
        if not 0.0 <= self.max_score <= 1.0:
            raise ValueError("max_score must be within [0, 1]")
        if self.unit_threshold is not None and not 0.0 < self.unit_threshold <= 1.0:
            raise ValueError("unit_threshold must be within (0, 1]")
        if self.unit_threshold is not None and self.aggregate != "share":
            raise ValueError("unit_threshold applies to aggregate: share only")
        if self.aggregate == "share" and self.granularity == "document":
            raise ValueError("aggregate: share needs granularity sentence or line")


@dataclass
class WordListRuleConfig:
    enabled: bool = opt(False, "C4's rule (with min_matches 1); off by default: it removed 9.4 % of real news "
                        "articles and the Mona Lisa page (benchmarks/results/toxicity.json)")
    lists: Optional[str] = opt(None, "directory of <lang>.txt lists, one entry per line; null = shipped LDNOOBW")
    default_language: str = opt("en", "list for rows with no lang, or a lang without a list")
    no_boundary_languages: list[str] = opt(["ja", "th", "zh"], "substring match (mC4)")
    min_matches: int = opt(1, "reject at this many matches (C4: 1)")

    def validate(self) -> None:
        if self.min_matches < 1:
            raise ValueError("min_matches must be >= 1")


@dataclass
class ToxicityConfig:
    classifier: ClassifierRuleConfig = field(default_factory=ClassifierRuleConfig)
    wordlist: WordListRuleConfig = field(default_factory=WordListRuleConfig)


def _is_word(ch: str) -> bool:
    return ch == "_" or unicodedata.category(ch)[0] in "LNM"


def _entry_regex(entry: str, boundaries: bool) -> str:
    out = []
    for ch in " ".join(entry.split()):
        if ch == " ":
            out.append(r"\s+")
        elif boundaries and not _is_word(ch):
            out.append(("\\" + ch if ch in META else ch) * 2)  # doubled, as in the text
        else:
            out.append("\\" + ch if ch in META else ch)
    return "".join(out)


class WordList:
    """Whole-word, case-insensitive match counts of per-language lists over a batch."""

    def __init__(self, config: WordListRuleConfig | None = None):
        self.config = config or WordListRuleConfig()
        folder = Path(self.config.lists) if self.config.lists else DEFAULT_LISTS
        if not folder.is_dir():
            raise FileNotFoundError(f"word-list directory not found: {folder}")
        words: dict[str, set[str]] = {}
        for f in sorted(folder.glob("*.txt")):  # fr-CA-u-sd-caqc.txt joins fr
            entries = {w.strip() for w in f.read_text(encoding="utf-8").splitlines() if w.strip()}
            words.setdefault(f.stem.split("-")[0], set()).update(entries)
        if self.config.default_language not in words:
            raise ValueError(f"no word list for default_language {self.config.default_language!r} in {folder}")
        self.patterns = {lang: self._pattern(lang, ws) for lang, ws in words.items()}
        self.non_word = RegexClass(NON_WORD)

    def _pattern(self, lang: str, words: set[str]) -> str:
        bounded = lang not in self.config.no_boundary_languages
        alts = "|".join(_entry_regex(w, bounded) for w in sorted(words, key=lambda w: (-len(w), w)))
        return f"(?i)(?:^|{NON_WORD})(?:{alts})(?:{NON_WORD}|$)" if bounded else f"(?i)(?:{alts})"

    def count(self, text: pa.Array | pa.ChunkedArray, langs: np.ndarray) -> np.ndarray:
        """Matches per row; ``langs`` (object array, None allowed) picks each row's list."""
        use = np.array([LANG_ALIASES.get(lang, lang) for lang in langs], dtype=object)
        use[~np.isin(use, list(self.patterns))] = self.config.default_language
        out = np.zeros(len(use), dtype=np.int32)
        for lang in np.unique(use.astype(str)):
            idx = np.flatnonzero(use == lang)
            sub = text.take(pa.array(idx)).fill_null("")
            if lang not in self.config.no_boundary_languages:
                sub = double(sub, self.non_word)  # as replace_substring_regex(sub, f"({NON_WORD})", r"\1\1")
            out[idx] = pc.count_substring_regex(sub, self.patterns[lang]).to_numpy(zero_copy_only=False)
        return out


class Toxicity(Stage):
    name = "toxicity"
    side_inputs = ("classifier.model", "wordlist.lists")
    local_side_inputs = ("classifier.model", "wordlist.lists")
    Config = ToxicityConfig
    uses_words = True
    columns = {"toxicity_score": pa.float32(), "toxicity_wordlist_hits": pa.int32()}
    # top_fraction / buckets: a score_rank stage after (the top = the least toxic)
    calibrated = Calibrated("toxicity_score", {"classifier": {"max_score": 1.0}}, lower_is_better=True)
    scores = {"toxicity_score": Score("toxicity: document score", "classifier.max_score", "above",
                                      applies=lambda c: c.classifier.enabled)}

    def __init__(self, config: ToxicityConfig | None = None, **params):
        super().__init__(config, **params)
        clf = self.config.classifier
        self.scorer = FastTextScorer(clf.model or DEFAULT_MODEL, clf.label, clf.max_chars) if clf.enabled else None
        self.unit_threshold = clf.unit_threshold
        if clf.enabled and clf.aggregate == "share" and self.unit_threshold is None:
            card = load_card(clf.model or DEFAULT_MODEL)  # the threshold its recipe chose, else its card's metrics'
            thr = card.get("decision_threshold", card.get("heldout", {})).get("threshold")
            if thr is None:
                from datacurate.core.coerce import ConfigError

                raise ConfigError(f"toxicity.classifier: the card of {clf.model or DEFAULT_MODEL} records no decision "
                                  "threshold; set unit_threshold")
            self.unit_threshold = float(thr)
        self.wordlist = WordList(self.config.wordlist) if self.config.wordlist.enabled else None

    def metrics(self, table: pa.Table) -> dict:
        hits = table.column("toxicity_wordlist_hits").fill_null(0).to_numpy(zero_copy_only=False)
        return {"toxicity_score_hist": score_histogram(table.column("toxicity_score")),
                "toxicity_wordlist_docs": int((hits > 0).sum())}

    def _score(self, text: pa.ChunkedArray | pa.Array, langs=None) -> np.ndarray:
        clf = self.config.classifier
        if clf.granularity == "document":
            return np.nan_to_num(self.scorer.score(text, langs), nan=0.0)
        text = pc.utf8_slice_codeunits(text.fill_null(""), 0, clf.max_chars)
        if clf.granularity == "sentence":
            text = pc.replace_substring_regex(text, SENTENCE_END, "\\1\\2\n")
        units = pc.split_pattern(text, "\n")
        units = pa.concat_arrays(units.chunks) if isinstance(units, pa.ChunkedArray) else units
        starts = units.offsets.to_numpy()[:-1] - units.offsets[0].as_py()  # every row has >= 1 unit
        if langs is not None:  # each unit its document's language
            langs = langs.take(pa.array(np.repeat(np.arange(len(starts)), np.diff(units.offsets.to_numpy()))))
        per_unit = self.scorer.score(units.flatten(), langs)  # NaN: an empty unit
        if not len(per_unit):
            return np.zeros(0, np.float32)
        if clf.aggregate == "max":
            return np.nan_to_num(np.fmax.reduceat(per_unit, starts), nan=0.0)
        if clf.aggregate == "share":  # 1 at or above the threshold, else 0; empty units stay NaN (not counted)
            per_unit = np.where(np.isnan(per_unit), np.nan, (per_unit >= self.unit_threshold).astype(np.float32))
        n = np.add.reduceat((~np.isnan(per_unit)).astype(np.float32), starts)
        return np.add.reduceat(np.nan_to_num(per_unit, nan=0.0), starts) / np.maximum(n, 1.0)

    def annotate(self, table: pa.Table):
        n = table.num_rows
        text = table.column(TEXT)
        rules = []
        todo = scored_rows(table, self.config.classifier.languages) & (self.scorer is not None)
        scores = np.zeros(n, dtype=np.float32)
        idx = np.flatnonzero(todo)
        if len(idx):
            langs = table.column(LANG).take(pa.array(idx)) if LANG in table.column_names else None
            scores[idx] = self._score(text.take(pa.array(idx)), langs)
            rules.append(("toxicity/model_score", todo & (scores > self.config.classifier.max_score)))
        hits = np.zeros(n, dtype=np.int32)
        if self.wordlist is not None:
            langs = (table.column("lang").to_numpy(zero_copy_only=False) if "lang" in table.column_names
                     else np.full(n, None, dtype=object))
            hits = self.wordlist.count(text, langs)
            rules.append(("toxicity/wordlist", hits >= self.config.wordlist.min_matches))
        cols = {"toxicity_score": pa.array(scores, pa.float32(), mask=~todo),
                "toxicity_wordlist_hits": pa.array(hits, pa.int32(), mask=np.full(n, self.wordlist is None))}
        return cols, first_reason(n, rules)
