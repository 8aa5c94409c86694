"""Config errors before work: a stage that needs a column (exact_dedup's ``key: url`` its
URL column, a ``priority_column``) on input that cannot carry it stops ``datacurate run``
at plan time with one line naming the stage, the column, the files and the fix: exit 2,
no traceback, nothing written. A directory mixing WARC and JSONL is read by format per
file; it is refused (that one line) only when a stage needs a column some of its files
cannot have."""

import shutil
from pathlib import Path

import orjson
import pytest
import yaml

from datacurate.configs.pipeline import load_config
from datacurate.engine.process import check_columns
from datacurate.formats.io import plan_reads
from tests.cli_run import run

REPO = Path(__file__).resolve().parent.parent
WARC = REPO / "sample_data" / "commoncrawl" / "sample.warc.gz"
RECIPE = REPO / "pipelines" / "commoncrawl.yaml"


def _jsonl(path: Path, n: int = 5, **fields) -> Path:
    docs = [orjson.loads(x) for x in (REPO / "sample_data/corpus/news.jsonl").read_bytes().splitlines()[:n]]
    path.write_bytes(b"".join(orjson.dumps({**d, **{k: f"{v}{i}" for k, v in fields.items()}}) + b"\n"
                             for i, d in enumerate(docs)))
    return path


def _one_line(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0]


def test_the_web_recipe_on_jsonl_fails_in_one_line_before_work(tmp_path):
    out = tmp_path / "out"
    line = _one_line(run(RECIPE, out, "--input", str(_jsonl(tmp_path / "news.jsonl"))))
    assert line.startswith("datacurate: error: exact_dedup:url: needs the column 'url' (key: url)")
    assert "news.jsonl: JSONL records without a 'url' field" in line and "read WARC / ARC input" in line
    assert not out.exists()  # before any work: nothing written


def test_a_mixed_directory_is_refused_only_for_the_files_that_lack_the_column(tmp_path):
    d = tmp_path / "crawl"
    d.mkdir()
    shutil.copy(WARC, d / "sample.warc.gz")
    _jsonl(d / "notes.jsonl")
    line = _one_line(run(RECIPE, tmp_path / "out", "--input", str(d)))
    assert "which 1 input file cannot have (notes.jsonl: JSONL records without a 'url' field)" in line


def test_a_priority_column_the_input_lacks(tmp_path):
    """JSONL records with URLs but no dates, under URL dedup ranking by date."""
    pipe = tmp_path / "p.yaml"
    pipe.write_text(yaml.safe_dump({"input": {"path": str(_jsonl(tmp_path / "pages.jsonl", url="http://a.example/"))},
                                    "output": str(tmp_path / "out"),
                                    "stages": [{"exact_dedup": {"key": "url", "priority_column": "date"}}]}))
    line = _one_line(run(pipe, tmp_path / "out"))
    assert "exact_dedup:url: needs the column 'date' (priority_column: date)" in line
    assert "pages.jsonl: JSONL records without a 'date' field" in line


def test_columns_from_the_input_or_an_earlier_stage_pass(tmp_path):
    """No error when the records carry the fields (a JSONL file next to a WARC file, both
    read by their formats), or when an earlier stage adds the priority column."""
    d = tmp_path / "crawl"
    d.mkdir()
    shutil.copy(WARC, d / "sample.warc.gz")
    _jsonl(d / "pages.jsonl", url="http://a.example/", date="2024-01-0")
    cfg = load_config(RECIPE, [], input_path=str(d), output_path=str(tmp_path / "out"))
    plan = plan_reads(cfg.input)
    assert {fmt for fmt, _ in plan.columns.values()} == {"warc", "jsonl"}
    check_columns(cfg.stages, plan.columns)
    ranked = {"input": {"path": str(d / "pages.jsonl")}, "output": str(tmp_path / "o2"),
              "stages": [{"langid": {}}, {"exact_dedup": {"key": "url", "priority_column": "lang_score"}}]}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(ranked))
    cfg = load_config(tmp_path / "r.yaml", [])
    check_columns(cfg.stages, plan_reads(cfg.input).columns)
    with pytest.raises(Exception, match="needs the column 'lang_score'"):
        cfg.stages.reverse()  # the column comes after the stage that needs it
        check_columns(cfg.stages, plan_reads(cfg.input).columns)


def test_a_part_without_an_extra_field_reads_as_nulls(tmp_path):
    """JSONL records with a ``url`` in some batches only: the parts of the others lack the
    column, and a global stage asking for it reads nulls there (before: ``ArrowInvalid: No
    match for FieldRef.Name(url)`` in the middle of the run)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datacurate.engine.ray.context import _read_files
    from datacurate.phases.context import read_part

    with_url, without = tmp_path / "part-a.parquet", tmp_path / "part-b.parquet"
    pq.write_table(pa.table({"_ord": [0, 1], "text": ["a", "b"], "url": ["http://x/", "http://x/"]}), with_url)
    pq.write_table(pa.table({"_ord": [2], "text": ["c"]}), without)
    t = read_part(str(without), ["_ord", "url"])
    assert t.column_names == ["_ord", "url", "_wpart"] and t["url"].to_pylist() == [None]
    both = _read_files(pa.table({"item": [str(with_url), str(without)]}), ["_ord", "url"])
    assert both["url"].to_pylist() == ["http://x/", "http://x/", None]
    assert both["_wpart"].to_pylist() == ["part-a.parquet"] * 2 + ["part-b.parquet"]
