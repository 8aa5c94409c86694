"""The ``datacurate`` command line, run as a subprocess (two real runs, each with its
own embedded Ray), plus in-process checks that a bad config never reaches Ray."""

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datacurate import cli
from tests.texts import PROSE

REPO = Path(__file__).resolve().parent.parent
DOCS = [
    {"id": "en", "text": PROSE},
    {"id": "de", "text": "Der Winter war in diesem Jahr so kalt wie seit vierzig Jahren nicht mehr."},
    {"id": "short", "text": "The boats stayed in the harbour all winter."},
]


def datacurate(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "datacurate.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_stages_lists_stages_and_parameters(capsys):
    res = datacurate("stages")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "langid:" in out and "heuristics:" in out
    for param in ("languages", "min_score", "max_chars", "gopher_quality:", "min_words", "gopher_repetition:",
                  "max_dup_line_frac", "c4:", "filter_no_terminal_punct", "fineweb:", "max_list_ratio"):
        assert param in out, param
    assert "min_score: 0.65" in out
    # some stages by name; an unknown name is one line with a did-you-mean
    from datacurate.cli import main

    assert main(["stages", "langid", "dsir"]) == 0
    shown = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in shown.splitlines() if ln and not ln.startswith(" ")] == ["langid", "dsir"]
    assert main(["stages", "langidd"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "datacurate: error: stages: unknown stage 'langidd' (did you mean 'langid'?)"


@pytest.mark.parametrize("yaml_text, message", [
    ("input: data.jsonl\nstages:\n  - heuristics: {gopher_quality: {min_word: 20}}\n", "did you mean 'min_words'"),
    ("input: data.jsonl\nstages:\n  - langidd: {}\n", "unknown stage 'langidd'"),
    ("input: data.jsonl\nstages: [langid: {languages: [en}]\n", "invalid YAML"),
    ("stages: [langid]\n", "no input path"),
    ("input: /nonexistent/data.jsonl\nstages: [langid]\n", "input not found"),
])
def test_run_bad_config_fails_fast(tmp_path, yaml_text, message, monkeypatch, capsys):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml_text)
    res = datacurate("run", str(pipeline), "--output", str(tmp_path / "out"), timeout=60)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("datacurate: error:") and message in lines[0], res.stderr
    assert res.stdout == ""

    # the same in-process: it fails before Ray is started and before any output is written
    from datacurate.engine.ray import cluster

    def no_ray(*a, **k):
        raise AssertionError("Ray must not start for a bad config")

    monkeypatch.setattr(cluster, "init_ray", no_ray)
    assert cli.main(["run", str(pipeline), "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith("datacurate: error:")
    assert not (tmp_path / "out").exists()


def test_bad_override_and_stats_of_nothing(tmp_path):
    res = datacurate("run", "pipelines/langid_only.yaml", "--set", "langid.min_scor=0.5", timeout=60)
    assert res.returncode == 2 and "did you mean 'min_score'" in res.stderr
    res = datacurate("stats", str(tmp_path), timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("datacurate: error: no stats.json")


def test_run_langid_on_jsonl_then_stats(write_jsonl, tmp_path):
    data = write_jsonl("in/docs.jsonl", DOCS)
    out = tmp_path / "out"
    res = datacurate("run", "pipelines/langid_only.yaml", "--input", str(data), "--output", str(out), "--quiet")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "read 3 = kept 2 + rejected 1 (ok)" in res.stdout
    rejected = pq.read_table(out / "rejected")
    assert rejected.column("id").to_pylist() == ["de"]
    assert rejected.column("reject_reason").to_pylist() == ["langid/language"]
    assert sorted(pq.read_table(out / "kept").column("id").to_pylist()) == ["en", "short"]

    stats = datacurate("stats", str(out), timeout=60)
    assert stats.returncode == 0, stats.stderr
    assert "langid/language" in stats.stdout and "read 3 = kept 2 + rejected 1 (ok)" in stats.stdout
    assert stats.stdout.splitlines()[0].split() == ["stage", "in", "kept", "rejected", "seconds"]


def test_run_heuristics_on_parquet(write_parquet, tmp_path):
    data = write_parquet("in/docs.parquet", {"id": [d["id"] for d in DOCS], "text": [d["text"] for d in DOCS]})
    out = tmp_path / "out"
    res = datacurate("run", "pipelines/heuristics_only.yaml", "--input", str(data), "--output", str(out),
                     "--quiet", "--set", "heuristics.gopher_quality.min_words=10")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "read 3 = kept 1 + rejected 2 (ok)" in res.stdout
    rejected = pq.read_table(out / "rejected")
    # with min_words lowered to 10 the German sentence fails on English stop words instead
    assert dict(zip(rejected.column("id").to_pylist(), rejected.column("reject_reason").to_pylist())) == {
        "de": "gopher/stop_words", "short": "gopher/too_few_words"}
    assert pq.read_table(out / "kept").column("id").to_pylist() == ["en"]
    assert (out / "stats.json").is_file() and (out / "config.yaml").is_file()
    assert "min_words: 10" in (out / "config.yaml").read_text()


def test_funnel_says_how_many_reasons_it_folded():
    from datacurate.engine.stats import finalize, format_funnel

    reasons = {f"heuristics/rule_{i:02d}": 100 - i for i in range(15)}
    stats = {"read": sum(reasons.values()), "kept": 0, "rejected": dict(reasons), "tasks": 1,
             "stages": {"heuristics": {"in": sum(reasons.values()), "kept": 0, "rejected": dict(reasons)}}}
    text = format_funnel(finalize(stats, ["heuristics"], 1.0))
    assert "heuristics/rule_11" in text and "heuristics/rule_12" not in text
    assert "... 3 more reasons (stats.json)" in text
    assert text.split("... 3 more reasons (stats.json)")[1].split("\n")[0].strip() == f"{88 + 87 + 86:,}"


def test_outputs_line_lists_every_output(tmp_path, monkeypatch, capsys):
    """The closing outputs: line names what global stages wrote (shards, a saved filter)."""
    import datacurate.engine

    def fake_run(cfg, **kw):
        return {"totals": {"read": 1, "kept": 1, "rejected": 0, "accounted": True, "wall_seconds": 0.0},
                "stages": {"exact_dedup": {"in": 1, "kept": 1, "rejected": {}, "rejected_total": 0, "seconds": 0.0,
                                           "metrics": {"filter_saved_to": "/o/exact_dedup_filter"}},
                           "decompose": {"in": 1, "kept": 1, "rejected": {}, "rejected_total": 0, "seconds": 0.0,
                                         "metrics": {"shards": "/o/shards"}}}}

    monkeypatch.setattr(datacurate.engine, "run_pipeline", fake_run)
    assert cli.main(["run", "pipelines/heuristics_only.yaml", "--input", str(tmp_path), "--output", "/o", "--quiet"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == ("outputs: /o/kept, /o/rejected, /o/stats.json, /o/exact_dedup_filter, /o/shards, "
                    "/o/report.html")
