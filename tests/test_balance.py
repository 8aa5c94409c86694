"""Tokenizer training text balanced over languages (datacurate.formats.balance) and
``datacurate train-tokenizer --alpha``: sampled shares follow (N_l / N)^alpha."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate.core.coerce import ConfigError
from datacurate.core.temperature import shares
from datacurate.formats.balance import balanced_texts, keep_fractions
from tests import multilingual as ml
from tests.cli_run import REPO, clean_env


def _run_dir(tmp_path, n_en=3000, n_sw=4):
    """A run directory whose kept/ holds many English documents and a few Swahili ones (real
    UDHR paragraphs, numbered so that every document differs), over two part files."""
    recs = {(r["lang"], r["script"]): r for r in ml.build_module().languages()}
    paras = {lang: [t for k, t in recs[(lang, "Latn")]["blocks"] if k == "p"] for lang in ("en", "sw")}
    rows = [{"text": f"{i}. {paras['en'][i % len(paras['en'])]}", "lang": "en"} for i in range(n_en)]
    rows += [{"text": f"{i}. {paras['sw'][i % len(paras['sw'])]}", "lang": "sw"} for i in range(n_sw)]
    (tmp_path / "kept").mkdir()
    half = len(rows) // 2
    pq.write_table(pa.Table.from_pylist(rows[:half]), tmp_path / "kept" / "part-a.parquet")
    pq.write_table(pa.Table.from_pylist(rows[half:]), tmp_path / "kept" / "part-b.parquet")
    return tmp_path


def test_keep_fractions():
    sizes = {"en": 1_000_000, "sw": 1_000}
    f = keep_fractions(sizes, 0.3)
    assert f["sw"] == 1.0 and 0 < f["en"] < 1
    kept = {d: sizes[d] * f[d] for d in sizes}
    q = shares(sizes, 0.3)
    assert kept["sw"] / sum(kept.values()) == pytest.approx(q["sw"])
    assert keep_fractions(sizes, 1.0) == {"en": pytest.approx(1.0), "sw": pytest.approx(1.0)}


def test_balanced_shares_follow_alpha(tmp_path):
    run = _run_dir(tmp_path)
    report: dict = {}
    texts = [t for batch in balanced_texts([str(run)], 0.3, report=report) for t in batch]
    assert set(report) == {"en", "sw"} and report["sw"]["kept_fraction"] == 1.0
    sw = sum(len(t.encode()) for t in texts if any(t.endswith(p) for p in _sw(run)))
    share = sw / sum(len(t.encode()) for t in texts)
    q = shares({d: v["bytes"] for d, v in report.items()}, 0.3)["sw"]
    natural = report["sw"]["bytes"] / (report["sw"]["bytes"] + report["en"]["bytes"])
    assert natural < 0.002 and q > 0.1  # 0.12 % of the bytes, a 12 % share after sampling
    assert abs(share - q) < 0.2 * q  # whole documents are drawn: the realised share is near, not exact
    assert texts == [t for b in balanced_texts([str(run)], 0.3) for t in b]  # deterministic


def _sw(run):
    t = pq.read_table(run / "kept").to_pylist()
    return {r["text"].split(". ", 1)[1] for r in t if r["lang"] == "sw"}


def test_balance_needs_parquet_with_the_column(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ConfigError, match="Parquet"):
        list(balanced_texts([str(tmp_path / "a.jsonl")], 0.3))
    pq.write_table(pa.table({"text": ["x"]}), tmp_path / "b.parquet")
    with pytest.raises(ConfigError, match="no column 'lang'"):
        list(balanced_texts([str(tmp_path / "b.parquet")], 0.3))


def test_cli_train_tokenizer_alpha(tmp_path):
    (tmp_path / "run").mkdir()
    run = _run_dir(tmp_path / "run")
    out = tmp_path / "tok.json"
    p = subprocess.run([sys.executable, "-m", "datacurate.cli", "train-tokenizer", str(run), "--vocab-size", "600",
                        "--alpha", "0.3", "--out", str(out)], env=clean_env(), capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "balanced over 2 values of lang (alpha 0.3)" in p.stdout and out.is_file()
