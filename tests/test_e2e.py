"""End to end: pipelines/sample.yaml on sample_data/corpus through a real local Ray,
checked against the output contract; and the Python API against the stages alone."""

import gzip
import json
from collections import Counter
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from datacurate import pipeline as api
from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from datacurate.formats.io import detect_format
from datacurate.registry import STAGES
from datacurate.stages.heuristics import Heuristics
from datacurate.stages.langid import LangId

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "sample_data" / "corpus"
SAMPLE_COLUMNS = {"id": pa.string(), "text": pa.large_string(), "domain": pa.string(), "source": pa.string(),
                  "lang": pa.string(), "lang_score": pa.float32(), "c4_lines_removed": pa.int32()}


def corpus_lines(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    elif path.name.endswith(".zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    return [line for line in raw.split(b"\n") if line.strip()]


@pytest.fixture(scope="module")
def sample_run(ray_session, tmp_path_factory):
    out = tmp_path_factory.mktemp("sample")
    # the sample's train: section runs too (fewer steps: the loop has its own tests)
    cfg = load_config(REPO / "pipelines" / "sample.yaml", ["ray.progress=false", "train.steps=30",
                                                           "train.eval_every=15", "train.checkpoint_every=15"],
                      input_path=str(CORPUS), output_path=str(out))
    return cfg, run_pipeline(cfg), out


def test_sample_outputs(sample_run):
    cfg, report, out = sample_run
    kept_files = sorted((out / "kept").glob("part-*.parquet"))
    rejected_files = sorted((out / "rejected").glob("part-*.parquet"))
    assert kept_files and rejected_files
    assert not list(out.rglob("*.tmp*"))
    # base columns, the records' other fields (first seen in input order; meta is an object:
    # JSON text), then each stage's annotations in stage order; rejected adds the reason
    columns = {"id": pa.string(), "text": pa.large_string(), "domain": pa.string(), "source": pa.string(),
               "meta": pa.string(), "url": pa.string()}
    for spec in cfg.stages:
        columns.update(STAGES[spec.name].columns)
    assert SAMPLE_COLUMNS.items() <= columns.items()
    for f in kept_files:
        schema = pq.read_schema(f)
        assert dict(zip(schema.names, schema.types)) == columns and schema.names == list(columns), f
    for f in rejected_files:
        assert pq.read_schema(f).names == list(columns) + ["reject_stage", "reject_reason"], f
    for f in kept_files + rejected_files:
        assert pq.read_schema(f).metadata[b"datacurate.json_fields"] == b'["meta"]', f
    records = {r.get("id"): r for p in CORPUS.iterdir() for r in map(orjson.loads, corpus_lines(p))}
    rows = [r for f in kept_files for r in pq.read_table(f, columns=["id", "meta", "url"]).to_pylist()]
    assert sum(r["id"] in records for r in rows) > 100
    for row in rows:
        rec = records.get(row["id"], {"meta": json.loads(row["meta"]), "url": row["url"]})  # ids made by the reader
        assert json.loads(row["meta"]) == rec["meta"] and row["url"] == rec.get("url")
    kept = pq.read_table(out / "kept")
    rejected = pq.read_table(out / "rejected")
    assert rejected.column("reject_stage").null_count == 0
    assert rejected.column("reject_reason").null_count == 0
    assert kept.column("lang").null_count == 0 and kept.column("c4_lines_removed").null_count == 0

    totals = report["totals"]
    assert json.loads((out / "stats.json").read_text()) == report
    assert totals["accounted"] and totals["read"] == totals["kept"] + totals["rejected"]
    assert (totals["kept"], totals["rejected"]) == (kept.num_rows, rejected.num_rows)
    assert 0 < kept.num_rows and 0 < rejected.num_rows

    # every line of the corpus was read, and each is written exactly once
    files = [p for p in CORPUS.rglob("*") if p.is_file() and detect_format(p.name, "auto")]
    n_lines = sum(len(corpus_lines(p)) for p in files)
    assert totals["read"] == n_lines
    ids = kept.column("id").to_pylist() + rejected.column("id").to_pylist()
    assert len(set(ids)) == len(ids) == n_lines
    sources = {str(p.relative_to(CORPUS)) for p in files}
    assert set(kept.column("source").to_pylist()) | set(rejected.column("source").to_pylist()) == sources


def test_sample_stage_accounting(sample_run):
    cfg, report, out = sample_run
    stages = report["stages"]
    assert list(stages) == ["input"] + [s.name for s in cfg.stages]
    assert stages["input"]["in"] == report["totals"]["read"]
    previous_kept = None
    for name, st in stages.items():
        assert st["in"] == st["kept"] + st["rejected_total"] == st["kept"] + sum(st["rejected"].values()), name
        if previous_kept is not None:
            assert st["in"] == previous_kept, name
        previous_kept = st["kept"]
    assert previous_kept == report["totals"]["kept"]
    assert sum(st["rejected_total"] for st in stages.values()) == report["totals"]["rejected"]

    rejected = pq.read_table(out / "rejected", columns=["reject_stage", "reject_reason"])
    # stats count reasons by rule: the detail after ':' (a survivor id) is dropped
    by_rule = Counter(r.split(":", 1)[0] for r in rejected.column("reject_reason").to_pylist())
    assert by_rule == report["rejected_by_reason"]
    by_stage = Counter(rejected.column("reject_stage").to_pylist())
    assert dict(by_stage) == {n: st["rejected_total"] for n, st in stages.items() if st["rejected_total"]}
    assert set(by_stage) <= set(stages)
    assert all("/" in reason for reason in report["rejected_by_reason"])  # namespaced reasons
    # the sample keeps English: the multilingual man pages are rejected by langid, and
    # every language seen is counted in the stage metrics
    assert stages["langid"]["rejected_total"] > 100
    assert set(stages["langid"]["rejected"]) <= {"langid/language", "langid/low_score", "langid/no_text"}
    assert sum(stages["langid"]["metrics"]["lang"].values()) == stages["langid"]["in"]
    assert len(stages["langid"]["metrics"]["lang"]) > 5


def test_sample_decontamination_report(sample_run):
    """The shipped benchmark quotes four sample documents; the leak report names them."""
    cfg, report, out = sample_run
    leak = json.loads((out / "decontamination.json").read_text())["benchmarks"]["brown_reading"]
    st = report["stages"]["decontaminate"]
    assert leak["records"] == 8 and 1 <= leak["records_found"] <= 4 and leak["documents"] == st["rejected_total"]
    assert set(leak["found"]) <= {"brown-rc-01", "brown-rc-02", "brown-rc-04", "brown-rc-05"}


def test_sample_dsir_selects_target_like_text(sample_run):
    _, report, out = sample_run
    st = report["stages"]["dsir"]
    m = st["metrics"]
    # the sample selects 128-word pieces: half of the eligible ones
    assert m["selected"] == m["num_to_sample"] == round(0.5 * m["eligible"]) and m["units"] >= st["in"]
    assert st["rejected"].get("dsir/not_selected", 0) + st["rejected"].get("dsir/too_short", 0) == st["rejected_total"]
    kept = pq.read_table(out / "kept", columns=["dsir_log_weight", "dsir_chunks"])
    assert kept.column("dsir_log_weight").null_count == 0
    assert sum(kept.column("dsir_chunks").to_pylist()) == m["selected"] and st["kept"] == kept.num_rows
    assert m["kl_target_selected"] < min(m["kl_target_raw"], m["kl_target_random"])
    # the target is Brown "learned" + "fiction": fiction is selected most often
    frac = {d: v["fraction"] for d, v in m["domains"].items() if v["pool"] >= 50}
    assert max(frac, key=frac.get) == "fiction", frac


def test_sample_token_shards(sample_run):
    """tokenize + decompose: exact token accounting, shards readable with numpy.memmap alone."""
    import numpy as np
    import pyarrow.compute as pc

    cfg, report, out = sample_run
    tok, dec = report["stages"]["tokenize"]["metrics"], report["stages"]["decompose"]["metrics"]
    assert dec["tokens_in"] == tok["tokens"] == dec["tokens_in_buckets"] + dec["tokens_dropped"]
    kept = pq.read_table(out / "kept", columns=["n_tokens"])
    rejected = pq.read_table(out / "rejected", columns=["n_tokens", "reject_stage"])
    too_short = rejected.filter(pc.equal(rejected["reject_stage"], "decompose"))
    assert pc.sum(kept["n_tokens"]).as_py() + (pc.sum(too_short["n_tokens"]).as_py() or 0) == dec["tokens_in"]
    assert too_short.num_rows == dec["too_short"] == report["stages"]["decompose"]["rejected_total"]
    assert "_tokens" not in pq.read_schema(next((out / "kept").glob("*.parquet"))).names

    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    spec = next(s.config for s in cfg.stages if s.name == "decompose")
    assert manifest["totals"] == {k: dec[k] for k in manifest["totals"]}
    assert manifest["source_run"]["output"] == str(out)
    written = {d: 0 for d in manifest["domains"]}
    for b in manifest["buckets"].values():
        L = b["seq_len"]
        assert L & (L - 1) == 0 and 2**spec.min_log2 <= L <= 2**spec.max_log2
        for f in b["files"]:
            tokens = np.memmap(out / "shards" / f["tokens"], dtype=manifest["dtype"], mode="r", shape=(f["n"], L))
            domains = np.memmap(out / "shards" / f["domains"], dtype="<u2", mode="r", shape=(f["n"],))
            assert tokens.max() < manifest["tokenizer"]["vocab_size"]
            for i, name in enumerate(manifest["domains"]):
                written[name] += int((domains == i).sum()) * L
    assert sum(written.values()) == dec["tokens_written"] == manifest["totals"]["tokens_written"]
    # the natural mixture: every bucketed sequence is written once
    assert spec.mixture is None and manifest["mixture"]["source"] == "natural"
    assert dec["tokens_written"] == dec["tokens_in_buckets"]


def test_sample_trains_on_its_shards(sample_run):
    """One run from raw documents to a model: the train: section read the shards just written."""
    cfg, report, out = sample_run
    final = json.loads((out / "train" / "final.json").read_text())
    assert final == report["train"] and final["steps"] == 30 and final["tokens"] == 30 * 4096
    lines = [json.loads(x) for x in (out / "train" / "metrics.jsonl").read_text().splitlines()]
    evals = [x["eval_loss"] for x in lines if "eval_loss" in x]
    assert [x["step"] for x in lines if "eval_loss" in x] == [15, 30]
    assert evals[-1]["all"] < evals[0]["all"] < 9.0  # below ln(8192) = 9.01 and falling
    assert set(evals[-1]) - {"all"} <= set(json.loads((out / "shards" / "manifest.json").read_text())["domains"])
    assert (out / "train" / "checkpoints" / "latest" / "model.pt").is_file()


def test_sample_config_saved(sample_run):
    cfg, _, out = sample_run
    again = load_config(out / "config.yaml")
    assert again == cfg


# ----------------------------------------------------------------------------- Python API


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """The first 25 readable documents of each plain JSONL file of the sample corpus,
    as (path, [(id, text)]): ids missing in a record are derived as the reader does."""
    path = tmp_path_factory.mktemp("small") / "small.jsonl"
    lines = []
    for p in sorted(CORPUS.glob("*.jsonl")):
        good = []
        for line in corpus_lines(p):
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("text"), str):
                good.append(line)
        lines += good[:25]
    path.write_bytes(b"\n".join(lines) + b"\n")
    records = []
    for i, line in enumerate(lines, start=1):
        rec = orjson.loads(line)
        records.append((str(rec["id"]) if rec.get("id") is not None else f"small.jsonl:{i}", rec["text"]))
    return path, records


def test_python_api_matches_stages(ray_session, small_corpus, tmp_path):
    path, records = small_corpus
    langid, heuristics = LangId(languages=["en"]), Heuristics()
    report = api.Pipeline([langid, heuristics], ray={"progress": False}).run(str(path), str(tmp_path))
    assert report["totals"]["accounted"] and report["totals"]["read"] == len(records)

    # the stages called directly, by hand: langid on everything, heuristics on what it kept
    table = pa.table({"id": [i for i, _ in records], "text": pa.array([t for _, t in records], pa.large_string())})
    after_lang = langid(table)
    lang_reason = after_lang.column("reject_reason").to_pylist()
    alive = pa.array([r is None for r in lang_reason])
    after_heur = heuristics(after_lang.filter(alive))
    direct = dict(zip(table.column("id").to_pylist(), lang_reason))
    direct.update(zip(after_heur.column("id").to_pylist(), after_heur.column("reject_reason").to_pylist()))
    direct_text = dict(zip(after_heur.column("id").to_pylist(), after_heur.column("text").to_pylist()))
    assert set(direct.values()) - {None}, "the sample should reject something"

    # Pipeline.run (through Ray)
    kept = pq.read_table(tmp_path / "kept")
    rejected = pq.read_table(tmp_path / "rejected")
    ran = {i: None for i in kept.column("id").to_pylist()}
    ran.update(zip(rejected.column("id").to_pylist(), rejected.column("reject_reason").to_pylist()))
    assert ran == direct
    assert dict(zip(kept.column("id").to_pylist(), kept.column("text").to_pylist())) == {
        i: t for i, t in direct_text.items() if direct[i] is None}

    # Pipeline.apply (one batch, no Ray)
    applied = api.Pipeline([langid, heuristics]).apply(table)
    assert dict(zip(applied.column("id").to_pylist(), applied.column("reject_reason").to_pylist())) == direct
    assert applied.column("id").to_pylist() == table.column("id").to_pylist()  # row order kept
    stage_of = {i: s for i, s in zip(applied.column("id").to_pylist(), applied.column("reject_stage").to_pylist())}
    assert all((stage_of[i] is None) == (r is None) for i, r in direct.items())
    assert all(stage_of[i] == "langid" for i, r in direct.items() if r and r.startswith("langid/"))
