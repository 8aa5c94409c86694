"""A small run of benchmarks/eval_pii_url.py: PII planted in real prose and a labelled
URL list, with the targets of issue 26 (the full run's numbers are in the README)."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import eval_pii_url  # noqa: E402


def test_pii_recall_and_look_alikes_on_planted_prose():
    res = eval_pii_url.eval_pii(n_docs=150, seed=1)
    assert all(n >= 30 for n in res["planted"].values()), res["planted"]
    assert all(r >= 0.95 for r in res["recall"].values()), res
    assert res["look_alikes"] >= 150 and res["look_alikes_altered_share"] <= 0.01, res


def test_url_decisions_exact_on_labelled_list():
    res = eval_pii_url.eval_urls(n_domains=100, seed=1, speed_urls=1000)
    assert res["labelled_urls"] > 2000 and res["wrong"] == 0, res["wrong_examples"]
