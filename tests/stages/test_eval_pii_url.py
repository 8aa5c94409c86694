"""A small run of benchmarks/eval_pii_url.py: PII planted in real prose and a labelled
URL list, with the targets of issue 26 (the full run's numbers are in the README)."""

import json

from tests.bench_scripts import run_script


def test_pii_recall_and_url_decisions(tmp_path):
    """PII planted in real prose, and the URL filter on a labelled list (one run of the script)."""
    out = tmp_path / "pii_url.json"
    run = run_script("eval_pii_url.py", "--docs", 150, "--domains", 100, "--seed", 1, "--speed-urls", 1000,
                     "--parts", "pii", "url_filter", "--out", out)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(out.read_text())
    res = got["pii"]
    assert all(n >= 30 for n in res["planted"].values()), res["planted"]
    assert all(r >= 0.95 for r in res["recall"].values()), res
    assert res["look_alikes"] >= 150 and res["look_alikes_altered_share"] <= 0.01, res
    res = got["url_filter"]
    assert res["labelled_urls"] > 2000 and res["wrong"] == 0, res["wrong_examples"]
