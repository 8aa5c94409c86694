"""A small run of benchmarks/eval_decontaminate.py: overlaps from a benchmark made of
standard-library docstrings planted in Brown prose, with the targets of issue 26 (the full
run's numbers are in the README)."""

import json

from tests.bench_scripts import run_script


def test_every_planted_overlap_found_no_clean_document_flagged(tmp_path):
    out = tmp_path / "decontaminate.json"
    run = run_script("eval_decontaminate.py", "--docs", 150, "--records", 1000, "--seed", 1, "--out", out)
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["ngram"]["docs"] == res["option"]["docs"] == res["near_miss"]["docs"] == 50
    assert res["ngram"]["flagged"] == res["ngram"]["docs"] and res["option"]["flagged"] == res["option"]["docs"], res
    assert res["near_miss"]["flagged"] == 0 and res["clean"]["flagged"] == 0, res["wrong_examples"]
    assert res["ngram"]["record_named"] >= 0.95 * res["ngram"]["docs"]
