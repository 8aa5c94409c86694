"""A small run of benchmarks/eval_decontaminate.py: overlaps from a benchmark made of
standard-library docstrings planted in Brown prose, with the targets of issue 26 (the full
run's numbers are in the README)."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import eval_decontaminate  # noqa: E402


def test_every_planted_overlap_found_no_clean_document_flagged():
    res = eval_decontaminate.evaluate(n_docs=150, n_records=1000, seed=1)
    assert res["ngram"]["docs"] == res["option"]["docs"] == res["near_miss"]["docs"] == 50
    assert res["ngram"]["flagged"] == res["ngram"]["docs"] and res["option"]["flagged"] == res["option"]["docs"], res
    assert res["near_miss"]["flagged"] == 0 and res["clean"]["flagged"] == 0, res["wrong_examples"]
    assert res["ngram"]["record_named"] >= 0.95 * res["ngram"]["docs"]
