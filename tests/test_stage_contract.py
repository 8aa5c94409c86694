"""A stage is one module plus one registry line: a stage defined here, in the test file, and
registered with :func:`datacurate.registry.register` runs through the real engine (local
Ray) and shows up in the funnel, ``stats.json``, ``report.html`` and ``datacurate stages``
with no other file changed, because the engine, the report and the CLI read what its class
declares (columns, score with threshold, report section, metrics)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from datacurate.core.coerce import opt
from datacurate.stages.base import Score, Stage, first_reason


@dataclass
class ShoutConfig:
    max_score: float = opt(0.5, "reject documents whose share of capital letters is above this")


class Shout(Stage):
    """Stage ``shout``: the share of capital letters; shouting documents are rejected."""

    name = "shout"
    Config = ShoutConfig
    columns = {"shout_score": pa.float32()}
    scores = {"shout_score": Score("shout: share of capital letters", "max_score", "above")}

    def annotate(self, table: pa.Table):
        text = table.column("text").combine_chunks()
        letters = np.asarray(pc.count_substring_regex(text, r"\pL"), dtype=np.float64)
        upper = np.asarray(pc.count_substring_regex(text, r"\p{Lu}"), dtype=np.float64)
        score = upper / np.maximum(letters, 1)
        return ({"shout_score": pa.array(score, pa.float32())},
                first_reason(len(score), [("shout/too_loud", score > self.config.max_score)]))

    def metrics(self, table: pa.Table) -> dict:
        return {"loud_letters": int(sum(sum(c.isupper() for c in t) for t in table.column("text").to_pylist()))}

    @classmethod
    def report_section(cls, view) -> str:
        n = view.metrics.get("loud_letters")
        return "" if n is None else view.draw.section("Shouting", f"<p>{n:,} capital letters in the documents seen</p>")


@pytest.fixture
def shout():
    from datacurate.registry import STAGES, register

    register(Shout)
    yield Shout
    del STAGES["shout"]


def test_a_stage_declared_in_a_test_runs_and_shows_everywhere(shout, ray_session, tmp_path, capsys):
    from datacurate import cli
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline
    from datacurate.engine.stats import format_funnel

    quiet = "the harbour was calm this morning and the boats came home early with their nets full. " * 3
    docs = [{"id": f"q{i}", "text": quiet} for i in range(5)] + [{"id": "loud", "text": quiet.upper()}]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
    out = tmp_path / "out"
    cfg = load_config({"input": str(tmp_path / "in.jsonl"), "output": str(out), "ray": {"progress": False},
                       "stages": [{"shout": {"max_score": 0.4}}]})
    report = run_pipeline(cfg)

    funnel = format_funnel(report)
    assert "shout" in funnel and "shout/too_loud" in funnel
    stats = json.loads((out / "stats.json").read_text())
    st = stats["stages"]["shout"]
    assert (st["in"], st["kept"], st["rejected"]) == (6, 5, {"shout/too_loud": 1})
    assert st["metrics"] == {"loud_letters": sum(c.isupper() for c in quiet.upper())}
    kept = pa.concat_tables([pq.read_table(p) for p in sorted((out / "kept").glob("*.parquet"))])
    assert kept.column("shout_score").to_pylist() == [0.0] * 5

    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<figcaption>shout: share of capital letters" in page
    assert "reject above 0.4" in page  # the threshold of the run's resolved config, not a default
    assert "<h2>Shouting</h2>" in page and "capital letters in the documents seen" in page
    assert "shout: rejects by reason" in page

    assert cli.main(["stages"]) == 0
    listed = capsys.readouterr().out.split("\n\n")
    mine = next(block for block in listed if block.lstrip("\n").startswith("shout:"))
    assert "the share of capital letters" in mine
    assert "# adds columns: shout_score (float)" in mine
    assert "# scores: shout_score (rejects above max_score)" in mine
    assert "max_score: 0.5  (float)  # reject documents whose share of capital letters is above this" in mine
