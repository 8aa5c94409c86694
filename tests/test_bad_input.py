"""Acceptance: one real Ray run over a directory of every kind of bad input.

The run must complete, account for every record (read == kept + rejected, in
stats.json and in the Parquet it writes) and file each bad record under rejected/
with its ``input/...`` reason.
"""

import json

import orjson
import pyarrow.parquet as pq

from datacurate.config import load_config
from datacurate.engine import run_pipeline
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
    totals = report["totals"]
    assert totals["read"] == len(expected) == 14
    assert totals["read"] == totals["kept"] + totals["rejected"] and totals["accounted"]
    assert json.loads((out / "stats.json").read_text()) == report
    assert report["input_files"] == {"blank_lines": 2, "empty_files": 1}

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
    assert by_stage["input"]["in"] == 14 and by_stage["input"]["rejected_total"] == 9
    assert by_stage["langid"]["in"] == 5 and by_stage["langid"]["rejected"] == {"langid/language": 1}
    assert by_stage["heuristics"]["in"] == 4 and by_stage["heuristics"]["kept"] == 3


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
