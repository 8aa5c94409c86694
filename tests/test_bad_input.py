"""Acceptance: one real Ray run over a directory of every kind of bad input.

The run must complete, account for every record (read == kept + rejected, in
stats.json and in the Parquet it writes) and file each bad record under rejected/
with its ``input/...`` reason.
"""

import json

import orjson
import pyarrow.parquet as pq

from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from datacurate.engine.stats import format_funnel
from tests.texts import PROSE

GERMAN = ("Der Winter war in diesem Jahr so kalt wie seit vierzig Jahren nicht mehr. Die Fischerboote "
          "lagen im inneren Hafenbecken fest, und die Männer saßen jeden Morgen im Café an der Kirche. ") * 3

# (line as written, expected id, expected reject_reason: None = kept, "*" = rejected by a stage)
LINES = [
    (orjson.dumps({"id": "good-1", "text": PROSE, "domain": "news"}), "good-1", None),
    (orjson.dumps({"text": PROSE.replace("harbour", "port")}), "mixed.jsonl:2", None),
    (b"", None, None),  # blank: not a record
    (orjson.dumps({"id": "german", "text": GERMAN}), "german", "langid/language"),
    (orjson.dumps({"id": "short", "text": "Far too short to keep."}), "short", "heuristics"),
    (b'{"id": "broken", "text": "unterminated', "mixed.jsonl:6", "input/malformed_json"),
    (b'{"id": "latin1", "text": "caf\xe9 cr\xe8me"}', "mixed.jsonl:7", "input/invalid_utf8"),
    (orjson.dumps({"id": "no-text", "body": PROSE}), "no-text", "input/missing_text"),
    (orjson.dumps({"id": "null-text", "text": None}), "null-text", "input/null_text"),
    (orjson.dumps({"id": "int-text", "text": 12345}), "int-text", "input/non_string_text"),
    (orjson.dumps({"id": "list-text", "text": ["a", "list"]}), "list-text", "input/non_string_text"),
    (orjson.dumps({"id": "dict-text", "text": {"nested": "object"}}), "dict-text", "input/non_string_text"),
    (b'[{"id": "in-array", "text": "an array line"}]', "mixed.jsonl:13", "input/not_an_object"),
    (b"   ", None, None),
    (orjson.dumps({"id": 99, "text": PROSE.replace("winter", "season")}), "99", None),
]


def test_bad_input_run(ray_session, tmp_path):
    data = tmp_path / "in"
    (data / "nested").mkdir(parents=True)
    (data / "mixed.jsonl").write_bytes(b"\n".join(line for line, _, _ in LINES) + b"\n")
    (data / "nested" / "empty.jsonl").write_bytes(b"")
    for stray in ("d.csv", "notes.txt", "README.md"):  # not read: listed, never skipped in silence
        (data / stray).write_text("a,b\n")
    (data / "array.json").write_bytes(orjson.dumps([{"id": "arr-1", "text": PROSE}, "not a record"]))
    # one 50 MB document of real sentences (over the default 10M-character limit)
    huge = PROSE * (50_000_000 // len(PROSE) + 1)
    (data / "huge.jsonl").write_bytes(orjson.dumps({"id": "huge", "text": huge}) + b"\n")
    del huge

    out = tmp_path / "out"
    cfg = load_config({
        "input": str(data),
        "output": str(out),
        "ray": {"progress": False},
        "stages": [{"langid": {"languages": ["en"]}}, "heuristics"],
    })
    report = run_pipeline(cfg)

    expected = {eid: reason for _, eid, reason in LINES if eid is not None}
    expected["huge"] = "input/doc_too_large"
    expected.update({"arr-1": None, "array.json:2": "input/not_an_object"})
    totals = report["totals"]
    assert totals["read"] == len(expected) == 16
    assert totals["read"] == totals["kept"] + totals["rejected"] and totals["accounted"]
    assert json.loads((out / "stats.json").read_text()) == report
    files = report["input_files"]
    assert (files["blank_lines"], files["empty_files"]) == (2, 1)
    assert files["not_read"] == ["README.md", "d.csv", "notes.txt"] and files["empty"] == ["nested/empty.jsonl"]
    mixed = (data / "mixed.jsonl").stat().st_size
    assert files["files"]["mixed.jsonl"] == {"consumed": mixed, "bytes": mixed, "lines": 15, "records": 13, "rows": 13}
    assert "3 input files not read (stats.json)" in format_funnel(report)

    kept = pq.read_table(out / "kept", columns=["id"])
    rejected = pq.read_table(out / "rejected", columns=["id", "reject_stage", "reject_reason"])
    assert kept.num_rows + rejected.num_rows == totals["read"]
    assert totals["kept"] == kept.num_rows

    got = dict(zip(rejected.column("id").to_pylist(), rejected.column("reject_reason").to_pylist()))
    stage_of = dict(zip(rejected.column("id").to_pylist(), rejected.column("reject_stage").to_pylist()))
    kept_ids = kept.column("id").to_pylist()
    assert len(got) == rejected.num_rows and len(set(kept_ids)) == len(kept_ids)
    assert set(kept_ids) | set(got) == set(expected)  # nothing lost, nothing invented
    for id_, reason in expected.items():
        if reason is None:
            assert id_ in kept_ids, id_
        elif reason.startswith("input/"):
            assert (got.get(id_), stage_of.get(id_)) == (reason, "input"), id_
        elif reason == "heuristics":
            assert stage_of[id_] == "heuristics" and got[id_].startswith("gopher/"), id_
        else:
            assert (got.get(id_), stage_of.get(id_)) == (reason, reason.split("/")[0]), id_

    raw = pq.read_table(out / "rejected", columns=["id", "text"]).to_pydict()
    raw_text = dict(zip(raw["id"], raw["text"]))
    assert orjson.loads(raw_text["no-text"]) == {"id": "no-text", "body": PROSE}  # the raw record is kept
    assert orjson.loads(raw_text["null-text"]) == {"id": "null-text", "text": None}

    by_stage = report["stages"]
    assert list(by_stage) == ["input", "langid", "heuristics"]
    assert by_stage["input"]["in"] == 16 and by_stage["input"]["rejected_total"] == 10
    assert by_stage["langid"]["in"] == 6 and by_stage["langid"]["rejected"] == {"langid/language": 1}
    assert by_stage["heuristics"]["in"] == 5 and by_stage["heuristics"]["kept"] == 4


def test_wrong_text_field_fails_in_one_line(tmp_path, capsys):
    """Records whose text is under another field: the run stops before any work, in one
    line naming the fields the records have and the setting to change."""
    from datacurate.cli import main

    data = tmp_path / "content.jsonl"
    data.write_bytes(b"".join(orjson.dumps({"id": f"r{i}", "content": PROSE, "url": "u"}) + b"\n" for i in range(3)))
    assert main(["run", "pipelines/heuristics_only.yaml", "--input", str(data), "--output", str(tmp_path / "o"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == ("datacurate: error: input: no 'text' field in 100% of records of content.jsonl; "
                   "fields seen: id, content, url; set input.text_field=content\n")
    assert not (tmp_path / "o").exists()


def test_a_read_task_that_stops_short_fails_the_run_in_one_line(tmp_path):
    """A read task that consumes less than its file (a fault point makes the first one stop
    after its first batch, as a reader bug would): the run fails with one line naming the
    file, never "(ok)", and writes no stats.json."""
    from tests.cli_run import clean_env, run

    data = tmp_path / "in"
    data.mkdir()
    (data / "part-00000").write_bytes(b"".join(orjson.dumps({"id": f"r{i}", "text": PROSE}) + b"\n" for i in range(25)))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"input: {{path: '{data}/part-*', format: jsonl, batch_rows: 5}}\nstages: [heuristics]\n")
    res = run(pipeline, tmp_path / "out", "--quiet",
              env=clean_env(DATACURATE_FAULT="input:read:0:stop", DATACURATE_FAULT_DIR=str(tmp_path / "faults")))
    assert res.returncode == 2, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith(f"datacurate: error: input {data / 'part-00000'}: its read tasks consumed ")
    assert "(ok)" not in res.stdout + res.stderr and not (tmp_path / "out" / "stats.json").exists()
