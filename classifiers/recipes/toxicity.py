"""Retrain ``classifiers/toxicity.ftz`` from scratch: offensive vs benign English text.

    .venv/bin/pip install -e ".[recipes]"                  # alt-profanity-check (+ scikit-learn)
    .venv/bin/python classifiers/recipes/toxicity.py       # ~45-55 s on one core

Labels are *distilled*: each sentence is labelled by ``alt-profanity-check`` (a
calibrated linear SVM on TF-IDF words shipped inside its wheel, trained on ~200k
human-labelled tweets and Wikipedia comments): ``toxic`` when its probability is >= 0.8,
``ok`` below 0.2; the ~2 % in between are the teacher's coin flips ("nuts", "Jesus
Christ", "silly") and are left out of training and of the primary held-out metric (the
card also reports F1 against the teacher at 0.5 on *every* held-out sentence). The
student is a fastText model, so the stage needs neither scikit-learn nor the teacher.

Units are single sentences, as Dolma scored toxicity per sentence (the stage's default
``granularity: sentence`` takes the maximum over a document's sentences): all 100k
nlp-corpus sentences (chat, SMS, lyrics, transcripts, reviews, with natural offensive
language) plus the sentences of the Brown corpus and the English man pages for benign
edited text. A unit's id names its exact sentence (``nlp/doc-17#120``), so hand labels
point at source text, not at this recipe's random draws.

The split is by source file (an nlp-corpus file of 1,000 sentences, a Brown sample, a
man page). Because the teacher's labels are a model's, the card also reports the
student against labels obtained independently of it: the LDNOOBW word list
(whole-word, English list) on every held-out sentence, and labels given by hand to 100
held-out sentences (``toxicity_handlabels.json``; guideline in classifiers/README.md).
"""

from __future__ import annotations

import argparse
import json
import random
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

HANDLABELS = Path(__file__).resolve().parent / "toxicity_handlabels.json"
LO, HI = 0.2, 0.8  # teacher probability: below LO -> ok, from HI -> toxic, between -> left out
SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def source_sentences() -> dict[str, list[str]]:
    """group -> its sentences, in order (nlp-corpus files, Brown samples, man pages)."""
    out = {g: s for g, s in sources.nlp_sentences()}
    for g, paras in sources.brown() + sources.man_pages():
        out[g] = [s for p in paras for s in SENT_RE.split(p) if s.strip()]
    return out


def text_of(uid: str, sents: dict[str, list[str]]) -> str:
    group, i = uid.split("#")
    return sents[group][int(i)]


def build(work: Path, sents: dict[str, list[str]], lo: float, hi: float) -> dict:
    from profanity_check import predict_prob

    records = [{"id": f"{g}#{i}", "text": t} for g in sorted(sents) for i, t in enumerate(sents[g])]
    p = predict_prob([r["text"] for r in records])
    for r, pr in zip(records, p):
        r["label"] = "toxic" if pr >= hi else "ok" if pr < lo else "ambiguous"
    sources.write_jsonl(work / "units.jsonl", records)
    return {"sentences": len(records), "toxic": int((p >= hi).sum()), "ok": int((p < lo).sum()),
            "ambiguous_left_out": int(((p >= lo) & (p < hi)).sum()),
            "from_nlp_corpus": sum(r["id"].startswith("nlp/") for r in records)}


def wordlist_labels(texts: list[str]) -> np.ndarray:
    from datacurate.stages.toxicity import WordList

    import pyarrow as pa

    hits = WordList().count(pa.array(texts, pa.large_string()), np.array(["en"] * len(texts), dtype=object))
    return hits > 0


def heldout_checks(model: Path, work: Path, seed: int, holdout_frac: float, sents) -> dict:
    """The student against the teacher at 0.5 on every held-out sentence (ambiguous ones
    included), and against label sets obtained independently of the teacher."""
    from profanity_check import predict_prob

    recs = [json.loads(x) for x in (work / "units.jsonl").open()]
    groups = np.array([r["id"].split("#")[0] for r in recs], dtype=object)
    test = heldout_mask(groups, holdout_frac, seed)
    texts = [r["text"] for r, t in zip(recs, test) if t]
    scorer = FastTextScorer(model, "toxic")
    student = np.nan_to_num(scorer.score(texts))
    teacher = predict_prob(texts)
    wl = wordlist_labels(texts)
    out = {"teacher_at_0.5_every_heldout_sentence": binary_metrics(student, teacher >= 0.5),
           "wordlist_labels": {
               "how": "every held-out sentence; label = any whole-word match of the English LDNOOBW list "
                      "(the stage's word rule); independent of the teacher, but blunt (names, period usage)",
               "student": binary_metrics(student, wl), "teacher": binary_metrics(teacher, wl)}}
    if HANDLABELS.is_file():
        hand = json.loads(HANDLABELS.read_text())
        ids = [h["id"] for h in hand["labels"]]
        y = np.array([h["toxic"] for h in hand["labels"]], dtype=bool)
        ht = [text_of(i, sents) for i in ids]
        out["hand_labels"] = {
            "how": hand["how"],
            "student": binary_metrics(np.nan_to_num(scorer.score(ht)), y),
            "teacher": binary_metrics(predict_prob(ht), y),
            "wordlist": binary_metrics(wordlist_labels(ht).astype(float), y)}
    return out


def handlabel_sample(work: Path, seed: int, holdout_frac: float, model: Path, n: int) -> None:
    """Print held-out nlp-corpus sentences to label by hand: half where the teacher, the
    student or the word list fires, half at random (a one-off; labels are then frozen)."""
    from profanity_check import predict_prob

    recs = [json.loads(x) for x in (work / "units.jsonl").open()]
    recs = [r for r in recs if r["id"].startswith("nlp/") and len(r["text"]) < 400]
    groups = np.array([r["id"].split("#")[0] for r in recs], dtype=object)
    recs = [r for r, t in zip(recs, heldout_mask(groups, holdout_frac, seed)) if t]
    texts = [r["text"] for r in recs]
    flag = (predict_prob(texts) >= 0.5) | wordlist_labels(texts) | (FastTextScorer(model, "toxic").score(texts) >= 0.5)
    rng = random.Random(f"{seed}-handlabel")
    pick = rng.sample([r for r, f in zip(recs, flag) if f], n // 2) + rng.sample(recs, n - n // 2)
    rng.shuffle(pick)
    for r in pick:
        print(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(sources.ROOT / "classifiers" / "toxicity.ftz"))
    ap.add_argument("--work", default=None, help="where the labelled JSONL goes (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--handlabel-sample", type=int, default=0, help="print N held-out sentences to label, then exit")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sents = source_sentences()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        made = build(work, sents, LO, HI)
        cfg = TrainConfig(
            output=args.out, name="toxicity", data=[str(work / "units.jsonl")], label_field="label",
            positive_label="toxic", negative_label="ok", seed=args.seed, lowercase=True, positive_weight=4,
            fasttext=FastTextParams(dim=32, epoch=20, lr=0.05, word_ngrams=1, min_count=1),
            quantize=QuantizeParams(cutoff=30_000),
            notes={
                "task": "offensive / profane vs benign English text, per sentence",
                "labels": f"distilled: alt-profanity-check predict_prob >= {HI} -> toxic, < {LO} -> ok, "
                          "in between left out (its calibrated linear SVM was trained on ~200k human-labelled "
                          "tweets and Wikipedia comments); no human labelled these sentences",
                "data": "single sentences: all nlp-corpus sentences, the Brown corpus (minus sample_data "
                        "target/) and the English man pages; toxic ones written 4x (positive_weight)",
                "limits": "English only; learns the teacher's notion (profanity, insults and slurs, mostly "
                          "lexical) with its errors: mild words ('crap', 'stupid') count, names like 'Dick' and "
                          "1960s usage can fire, implicit hate without slurs is missed; the primary held-out "
                          "metric leaves out the sentences the teacher is unsure of (see "
                          "heldout_checks for every sentence)",
                "recipe": "classifiers/recipes/toxicity.py",
            })
        card = train_classifier(cfg)
        card["data"] = json.loads(json.dumps(card["data"]).replace(str(work), "<work>"))
        card["data"]["built"] = made
        if args.handlabel_sample:
            handlabel_sample(work, args.seed, cfg.holdout_frac, Path(args.out), args.handlabel_sample)
            return
        card["heldout_checks"] = heldout_checks(Path(args.out), work, args.seed, cfg.holdout_frac, sents)
    card["recipe_seconds"] = round(time.perf_counter() - t0, 1)
    write_card(args.out, card)
    print(json.dumps({k: card[k] for k in ("size_bytes", "data", "heldout", "heldout_checks", "recipe_seconds")},
                     indent=1))


if __name__ == "__main__":
    main()
