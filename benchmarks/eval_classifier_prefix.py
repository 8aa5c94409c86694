"""Held-out separation of the quality classifier when it reads only a prefix of each document.

Production classifiers read a bounded input (FineWeb-Edu's scores the first 512 tokens,
Penedo et al. 2024), and fastText's cost grows with the text. This script measures what
such a bound costs here: it rebuilds the labelled examples of
``classifiers/recipes/quality.py`` (needs ``sample_data/.cache``, see that recipe), takes
the same held-out split as the shipped card (source documents, ``holdout_frac`` 0.2,
seed 0), and scores the held-out examples with the shipped model at several
``max_chars``. Reported per bound: ROC-AUC, precision / recall / F1 at the card's decision
threshold (0.5 for a card without one), ROC-AUC by
length tercile, and the share of held-out decisions (at that threshold) equal to the unbounded
model's; plus the same decision agreement on sample_data's English corpus documents.

    .venv/bin/python benchmarks/eval_classifier_prefix.py   # ~1 min
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "classifiers" / "recipes"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import quality as recipe  # noqa: E402  (classifiers/recipes/quality.py)

from datacurate.classify import FastTextScorer, binary_metrics, heldout_mask, roc_auc  # noqa: E402
from datacurate.models.fasttext_model import load_card  # noqa: E402

BOUNDS = [100_000, 5_000, 3_000, 2_000, 1_500, 1_000]


def heldout_examples(work: Path, card: dict) -> tuple[list[str], np.ndarray]:
    recipe.build(work, card["split"]["seed"])
    texts, y = [], []
    for name, label in (("positive.jsonl", True), ("negative.jsonl", False)):
        recs = [json.loads(x) for x in (work / name).open()]
        groups = np.array([r["id"].split("#")[0] for r in recs], dtype=object)
        held = heldout_mask(groups, card["split"]["holdout_frac"], card["split"]["seed"])
        texts += [r["text"] for r, h in zip(recs, held) if h]
        y += [label] * int(held.sum())
    return texts, np.array(y, dtype=bool)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT / "classifiers" / "quality.ftz"))
    ap.add_argument("--label", default="hq")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "classifier_prefix.json"))
    args = ap.parse_args()
    card = load_card(args.model)
    thr = card.get("decision_threshold", {}).get("threshold", 0.5)
    with tempfile.TemporaryDirectory() as tmp:
        texts, y = heldout_examples(Path(tmp), card)
    from bench_classifiers import english_texts  # sample_data's English documents

    corpus = english_texts()
    length = np.array([len(t) for t in texts])
    edges = np.quantile(length, [0.0, 1 / 3, 2 / 3, 1.0])
    out = {"model": Path(args.model).name, "heldout_examples": len(texts), "heldout_positive": int(y.sum()),
           "heldout_chars_mean": round(float(length.mean())), "heldout_chars_max": int(length.max()),
           "heldout_over_bound": {}, "corpus_docs": len(corpus),
           "corpus_chars_mean": round(float(np.mean([len(t) for t in corpus]))), "bounds": {}}
    full = full_corpus = None
    for bound in BOUNDS:
        scorer = FastTextScorer(args.model, args.label, bound)
        s = np.nan_to_num(scorer.score(texts), nan=0.0)
        sc = np.nan_to_num(scorer.score(corpus), nan=0.0)
        if full is None:
            full, full_corpus = s, sc
        m = binary_metrics(s, y, thr)
        m["roc_auc_by_length_tercile"] = {
            f"{int(lo)}-{int(hi)} chars": round(roc_auc(s[(length >= lo) & (length <= hi)],
                                                        y[(length >= lo) & (length <= hi)]), 4)
            for lo, hi in zip(edges[:-1], edges[1:])}
        m["heldout_decisions_as_unbounded"] = round(float(np.mean((s >= thr) == (full >= thr))), 4)
        m["corpus_decisions_as_unbounded"] = round(float(np.mean((sc >= thr) == (full_corpus >= thr))), 4)
        out["heldout_over_bound"][bound] = int((length > bound).sum())
        out["bounds"][bound] = m
        print(bound, json.dumps(m), file=sys.stderr)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
