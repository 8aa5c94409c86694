"""Every input field survives: a record's fields other than text, id and domain come out
in kept/ and rejected/ under their own names (issue 24), through a map stage and a
global stage, for JSONL and Parquet, on a real local Ray."""

import json

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate import cli
from datacurate.configs.pipeline import ConfigError, StageSpec, load_config
from datacurate.engine import run_pipeline
from datacurate.engine.process import reserved_columns
from datacurate.formats.fields import JSON_FIELDS_KEY, RESERVED_REASON
from datacurate.configs.input import InputConfig
from datacurate.formats.io import plan_reads, read_task
from datacurate.stages.langid import LangIdConfig
from tests.texts import PROSE

STAGES = ["heuristics", {"exact_dedup": {"expected_items": 1000}}]
STAGE_COLUMNS = ["c4_lines_removed", "paragraphs_removed"]


def doc(i: int) -> str:
    return PROSE.replace("forty", f"{i + 41}")


def jsonl_records():
    """(file name, records): scalars, an object, a list, a field of mixed kinds across
    files ('5' here, 5 there), fields some records lack, one renamed field, and records
    the reader, heuristics and exact_dedup reject."""
    a = [{"id": f"a{i}", "text": doc(i), "url": f"https://x.org/{i}", "date": "2024-05-0" + str(i % 9 + 1),
          "meta": {"lang": "en", "n": i, "deep": {"k": [1, 2.5, None]}}, "tags": ["t", str(i)], "mixed": "5",
          "score": i + 0.5, "n": i, "ok": i % 2 == 0, "source": "cc"} for i in range(7)]
    a[3]["text"] = "Far too short to keep."  # heuristics
    a[5]["text"] = a[1]["text"]  # exact_dedup
    del a[6]["url"]
    b = [{"id": f"b{i}", "text": doc(100 + i), "mixed": 5, "n": 10 ** 12 + i, "extra_only_b": None,
          "big": 2 ** 63 + i} for i in range(4)]
    b[2]["mixed"] = [5]
    return [("a.jsonl", a), ("b.jsonl", b)]


def _rows(out, sub: str) -> tuple[list[pa.Schema], list[dict]]:
    files = sorted((out / sub).glob("*.parquet"))
    return [pq.read_schema(f) for f in files], [r for f in files for r in pq.read_table(f).to_pylist()]


def _decoded(row: dict, json_fields: list[str]) -> dict:
    return {k: json.loads(v) if k in json_fields and v is not None else v for k, v in row.items()}


def _check_outputs(out, records: dict, extras: list[str], native: dict | None = None):
    """Every record in exactly one of kept/ rejected/, with every field equal to what it
    held (JSON text decoded), the same schema in every part, columns in the run's order."""
    rows = {}
    for sub, tail in (("kept", []), ("rejected", ["reject_stage", "reject_reason"])):
        schemas, got = _rows(out, sub)
        assert schemas and all(s.equals(schemas[0], check_metadata=True) for s in schemas), sub
        assert schemas[0].names == ["id", "text", "domain", "source", *extras, *STAGE_COLUMNS, *tail]
        for name, typ in (native or {}).items():
            assert schemas[0].field(name).type == typ
        js = json.loads(schemas[0].metadata[JSON_FIELDS_KEY])
        for r in got:
            assert r["id"] not in rows
            rows[r["id"]] = (sub, _decoded(r, js), js)
    assert set(rows) == set(records)  # read == kept + rejected
    for id_, rec in records.items():
        sub, row, js = rows[id_]
        for name in extras:
            want = rec.get(name)
            assert row[name] == want and type(row[name]) is type(want), (id_, name, row[name], want)
    return rows


def test_jsonl_fields_survive_every_stage(ray_session, tmp_path, write_jsonl):
    files = jsonl_records()
    for name, recs in files:
        lines = [orjson.dumps(r) for r in recs]
        if name == "a.jsonl":
            lines.append(b'{"id": "broken", "url": ')
        write_jsonl(f"in/{name}", lines)
    cfg = load_config({"input": {"path": str(tmp_path / "in"), "batch_rows": 3, "rename": {"source": "orig_source"}},
                       "output": str(tmp_path / "out"), "ray": {"progress": False}, "stages": STAGES})
    report = run_pipeline(cfg, report=False)

    records = {r["id"]: {("orig_source" if k == "source" else k): v for k, v in r.items()}
               for _, recs in files for r in recs}
    records["a.jsonl:8"] = {}  # malformed: its line is its text, every extra field null
    extras = ["url", "date", "meta", "tags", "mixed", "score", "n", "ok", "orig_source", "extra_only_b", "big"]
    rows = _check_outputs(tmp_path / "out", records, extras)
    assert report["totals"]["read"] == len(records)
    assert rows["a3"][0] == "rejected" and rows["a5"][1]["reject_reason"].startswith("exact_dedup")
    assert rows["a.jsonl:8"][1]["reject_reason"] == "input/malformed_json"
    js = rows["a0"][2]
    assert js == ["meta", "tags", "mixed", "big"]  # nested, mixed kinds ("5" / 5 / [5]), past int64
    assert rows["a0"][1]["mixed"] == "5" and rows["b0"][1]["mixed"] == 5 and rows["b2"][1]["mixed"] == [5]
    schema = pq.read_schema(next((tmp_path / "out" / "kept").glob("*.parquet")))
    assert [schema.field(n).type for n in ("url", "score", "n", "ok", "extra_only_b")] == \
        [pa.string(), pa.float64(), pa.int64(), pa.bool_(), pa.null()]

    # a second run writes the same bytes (unification is deterministic)
    before = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*.parquet")}
    cfg.output.path = str(tmp_path / "again")
    run_pipeline(cfg, report=False)
    again = {p.relative_to(tmp_path / "again"): p.read_bytes() for p in (tmp_path / "again").rglob("*.parquet")}
    assert again == before


def test_parquet_fields_keep_their_arrow_types(ray_session, tmp_path):
    meta_t = pa.struct([("lang", pa.string()), ("n", pa.int32())])
    recs = {}
    for k, f, mixed in ((1, "p1", pa.array(["5", "x"])), (2, "p2", pa.array([5, 6], pa.int64()))):
        ids = [f"{f}-0", f"{f}-1"]
        texts = [doc(k), "Far too short to keep."]
        table = pa.table({"id": ids, "text": texts, "url": ["u0", None],
                          "meta": pa.array([{"lang": "en", "n": 1}, None], meta_t),
                          "tags": pa.array([["a"], []], pa.list_(pa.string())), "mixed": mixed})
        pq.write_table(table, tmp_path / f"{f}.parquet")
        for r in table.to_pylist():
            recs[r["id"]] = r
    cfg = load_config({"input": str(tmp_path / "p*.parquet"), "output": str(tmp_path / "out"),
                       "ray": {"progress": False}, "stages": STAGES})
    run_pipeline(cfg, report=False)
    rows = _check_outputs(tmp_path / "out", recs, ["url", "meta", "tags", "mixed"],
                          native={"meta": meta_t, "tags": pa.list_(pa.string()), "url": pa.string()})
    assert rows["p1-0"][2] == ["mixed"]  # string in one file, int64 in the other


def test_field_named_as_a_column_the_run_adds(tmp_path, write_jsonl):
    path = write_jsonl("x.jsonl", [{"id": "1", "text": "a text", "lang": "en"}])
    reserved = reserved_columns([StageSpec("langid", LangIdConfig())])
    with pytest.raises(ConfigError) as e:
        plan_reads(InputConfig(path=[str(path)]), reserved=reserved)
    assert str(e.value) == ("input: field 'lang' of x.jsonl collides with the column 'lang' that stage langid adds; "
                            "rename it with input.rename: {lang: orig_lang}")
    assert plan_reads(InputConfig(path=[str(path)], rename={"lang": "orig_lang"}), reserved=reserved)
    with pytest.raises(ConfigError, match="'text' is input.text_field"):
        plan_reads(InputConfig(path=[str(path)], rename={"text": "body"}), reserved=reserved)

    # past the sample of the first records: that record is rejected, its line kept
    late = [{"id": str(i), "text": "a text"} for i in range(1000)] + [{"id": "late", "text": "t", "source": "cc"}]
    cfg = InputConfig(path=[str(write_jsonl("late.jsonl", late))], batch_rows=10_000)
    table = pa.concat_tables(t for task in plan_reads(cfg, reserved=reserved) for t in read_task(task, cfg))
    last = table.slice(1000).to_pylist()[0]
    assert last["reject_reason"] == RESERVED_REASON and json.loads(last["text"]) == late[-1]
    assert last["source"] == "late.jsonl"


def test_collision_is_one_line_through_the_cli(tmp_path, write_jsonl, capsys):
    write_jsonl("in/d.jsonl", [{"id": "1", "text": PROSE, "source": "cc"}])
    code = cli.main(["run", "pipelines/heuristics_only.yaml", "--input", str(tmp_path / "in"),
                     "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "field 'source' of d.jsonl collides with the column 'source' that the reader adds" in err[0]
    assert "input.rename: {source: orig_source}" in err[0]
    assert not (tmp_path / "out").exists()
