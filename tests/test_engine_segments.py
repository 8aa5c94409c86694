"""Map work (engine/ray/segments.py): a worker builds its segment's stages once and runs
every item it gets through them, with the stats :func:`curate_task` gives, and builds them
again for another segment or run; and a global stage on one table (``stage(table)``) runs
the same ``run_global`` as a run."""

import copy
import json

import pyarrow as pa
import pyarrow.parquet as pq

from datacurate.configs.pipeline import load_config
from datacurate.engine import process
from datacurate.engine.ray.segments import segment_work
from datacurate.formats.io import plan_reads
from datacurate.core.schema import TOKENS
from datacurate.stages import heuristics
from datacurate.stages.export_tokens import ExportTokens
from datacurate.stages.tokenize import Tokenize
from tests.conftest import REPO


def _strip_seconds(d):
    if isinstance(d, dict):
        return {k: _strip_seconds(v) for k, v in d.items() if "seconds" not in k}
    return d


def test_segment_work_builds_its_stages_once_for_all_items(tmp_path, monkeypatch):
    cfg = load_config({"input": {"path": str(REPO / "sample_data" / "corpus" / "news.jsonl"), "chunk_bytes": 20_000},
                       "output": str(tmp_path / "out"), "stages": [{"heuristics": {}}]})
    tasks = plan_reads(cfg.input)
    assert len(tasks) >= 3
    built = []
    init = heuristics.Heuristics.__init__

    def counted(self, *a, **k):
        built.append(1)
        init(self, *a, **k)

    monkeypatch.setattr(heuristics.Heuristics, "__init__", counted)
    work, got = segment_work(cfg, 0), {}
    for t in tasks:  # as the tasks of one worker get them: each with its own (unpickled) config
        item = pa.table({"item": [json.dumps([f"t{t.index:06d}", json.dumps(t.to_dict())])]})
        for out in segment_work(copy.deepcopy(cfg), 0)(item):
            got[out["key"][0].as_py()] = json.loads(out["stats"][0].as_py())
    assert len(built) == 1 and segment_work(copy.deepcopy(cfg), 0) is work
    other = copy.deepcopy(cfg)
    other.stages[0].config.c4.min_sentences += 1  # another run: its own stages
    assert segment_work(other, 0) is not work and len(built) == 2
    seg = process.segments_of(cfg)[0]
    for t in tasks:  # the same as each task run alone (with its own stages)
        assert _strip_seconds(got[f"t{t.index:06d}"]) == _strip_seconds(process.curate_task(t.to_dict(), cfg, seg))


def test_export_tokens_on_one_table_writes_the_export(tmp_path):
    texts = ["The cat sat on the mat.", "A dog ran in the park today.", "Stocks fell sharply on Monday."]
    table = Tokenize()(pa.table({"id": ["a", "b", "c"], "domain": ["x", "y", "x"], "text": texts}))
    out, metrics = ExportTokens(format="hf", path=str(tmp_path / "hf")).run_table(table)
    assert out["reject_reason"].null_count == 3  # it annotates and rejects nothing
    assert metrics["documents"] == 3 and metrics["exported_to"] == str(tmp_path / "hf")
    exported = pq.read_table(tmp_path / "hf" / "data")
    assert exported["id"].to_pylist() == ["a", "b", "c"]
    assert exported["input_ids"].to_pylist() == table[TOKENS].to_pylist()
    assert json.loads((tmp_path / "hf" / "export.json").read_text())["documents"] == 3
