"""Readers: formats, path expansion, derived ids, read-task splitting, bad records."""

import orjson
import pyarrow as pa
import pytest

from datacurate.configs.pipeline import InputConfig
from datacurate.formats.io import SAMPLE_RECORDS, InputError, ReadTask, plan_reads, read_task
from datacurate.core.schema import REJECT_REASON, REJECT_STAGE

DOCS = [
    {"id": "a", "text": "First document.", "domain": "news"},
    {"text": "Second document, no id."},
    {"id": 7, "text": "Third document, integer id.", "domain": "web"},
]


def read_all(paths, **options) -> tuple[pa.Table, list, dict]:
    """Plan and read every task; return (all rows, the tasks, file counters)."""
    cfg = InputConfig(path=[str(p) for p in (paths if isinstance(paths, list) else [paths])], **options)
    tasks = plan_reads(cfg)
    counters: dict = {}
    tables = [t for task in tasks for t in read_task(task.to_dict(), cfg, counters)]
    table = pa.concat_tables(tables) if tables else pa.table({})
    return table, tasks, counters


def rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in ("id", "text", "domain", "source", REJECT_REASON))))


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz", "docs.jsonl.zst"])
def test_read_jsonl_formats(write_jsonl, name):
    table, tasks, _ = read_all(write_jsonl(name, DOCS))
    assert len(tasks) == 1 and tasks[0].fmt == "jsonl"
    assert rows(table) == [
        ("a", "First document.", "news", name, None),
        (f"{name}:2", "Second document, no id.", "unknown", name, None),
        ("7", "Third document, integer id.", "web", name, None),
    ]
    assert table.schema.field("text").type == pa.large_string()
    assert table.column(REJECT_STAGE).null_count == 3


def test_read_parquet(write_parquet):
    path = write_parquet("docs.parquet", {"id": ["a", None, "c"], "text": ["one", "two", "three"]}, row_group_size=2)
    table, tasks, _ = read_all(path)
    assert [(t.start, t.end, t.first_line) for t in tasks] == [(0, 1, 0), (1, 2, 2)]  # one task per row group
    # a missing id becomes <source>:<row>, rows counted from 0 across row groups
    assert rows(table) == [("a", "one", "unknown", "docs.parquet", None),
                           ("docs.parquet:1", "two", "unknown", "docs.parquet", None),
                           ("c", "three", "unknown", "docs.parquet", None)]


def test_directories_recurse_and_globs(write_jsonl, write_parquet, tmp_path):
    write_jsonl("data/a.jsonl", DOCS[:1])
    write_jsonl("data/sub/b.jsonl.gz", DOCS[1:2])
    write_parquet("data/sub/c.parquet", {"text": ["from parquet"]})
    (tmp_path / "data" / "README.md").write_text("not data")
    table, _, _ = read_all(tmp_path / "data")
    assert sorted(table.column("source").to_pylist()) == ["a.jsonl", "sub/b.jsonl.gz", "sub/c.parquet"]
    assert table.num_rows == 3

    globbed, _, _ = read_all(f"{tmp_path}/data/**/*.json*")  # README.md is not swept up
    assert sorted(globbed.column("source").to_pylist()) == ["a.jsonl", "sub/b.jsonl.gz"]
    assert set(globbed.column("id").to_pylist()) == {"a", "sub/b.jsonl.gz:1"}


def test_derived_ids_count_blank_lines_and_are_stable(write_jsonl):
    path = write_jsonl("d.jsonl", [{"text": "one"}, b"", b"   ", {"text": "four"}, {"id": "x", "text": "five"}])
    first, _, counters = read_all(path)
    again, _, _ = read_all(path)
    assert first.column("id").to_pylist() == ["d.jsonl:1", "d.jsonl:4", "x"]
    assert again.column("id").to_pylist() == first.column("id").to_pylist()
    assert counters["blank_lines"] == 2


def test_big_jsonl_split_into_read_tasks(write_jsonl):
    records = []
    for i in range(300):
        if i % 37 == 5:
            records.append(b"")  # blank lines shift line numbers across chunk borders
        rec = {"text": f"Document number {i} " + "x" * (i % 50)}
        if i % 3 == 0:
            rec["id"] = f"doc-{i}"
        records.append(rec)
    path = write_jsonl("big.jsonl", records)
    one, one_tasks, _ = read_all(path)
    many, many_tasks, _ = read_all(path, chunk_bytes=1000, batch_rows=16)
    assert len(one_tasks) == 1 and len(many_tasks) > 10
    assert [(t.start, t.end) for t in many_tasks] == sorted((t.start, t.end) for t in many_tasks)
    assert many_tasks[0].start == 0 and many_tasks[-1].end == path.stat().st_size
    assert all(a.end == b.start for a, b in zip(many_tasks, many_tasks[1:]))
    assert rows(many) == rows(one)
    assert one.num_rows == 300 and len(set(one.column("id").to_pylist())) == 300


def test_field_options(write_jsonl):
    path = write_jsonl("f.jsonl", [{"doc_id": "d1", "content": "hello there", "site": "blog", "text": "ignored"},
                                   {"content": "no id", "text": "ignored"}])
    table, _, _ = read_all(path, text_field="content", id_field="doc_id", domain_field="site", default_domain="misc")
    assert rows(table) == [("d1", "hello there", "blog", "f.jsonl", None),
                           ("f.jsonl:2", "no id", "misc", "f.jsonl", None)]


@pytest.mark.parametrize("spec", ["missing.jsonl", "nodir/", "*.nothing"])
def test_nonexistent_input(tmp_path, spec):
    with pytest.raises(InputError):
        plan_reads(InputConfig(path=[str(tmp_path / spec)]))


def test_unknown_extension_and_unreadable_parquet(tmp_path):
    (tmp_path / "data.txt").write_text("hello\n")
    with pytest.raises(InputError, match="format"):
        plan_reads(InputConfig(path=[str(tmp_path / "data.txt")]))
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="Parquet"):
        plan_reads(InputConfig(path=[str(tmp_path / "bad.parquet")]))


def test_jsonl_bad_records(write_jsonl):
    path = write_jsonl("bad.jsonl", [
        {"id": "ok", "text": "fine"},
        b'{"id": "broken", "text": ',
        b'{"id": "latin1", "text": "caf\xe9"}',
        {"id": "missing"},
        {"id": "null", "text": None},
        {"id": "int", "text": 42},
        {"id": "list", "text": ["a", "b"]},
        {"id": "dict", "text": {"a": 1}},
        b'["an", "array"]',
        b'"a string"',
        {"id": "big", "text": "x" * 101},
    ])
    table, _, _ = read_all(path, max_doc_chars=100)
    got = dict(zip(table.column("id").to_pylist(), table.column(REJECT_REASON).to_pylist()))
    assert got == {
        "ok": None,
        "bad.jsonl:2": "input/malformed_json",
        "bad.jsonl:3": "input/invalid_utf8",
        "missing": "input/missing_text",
        "null": "input/null_text",
        "int": "input/non_string_text",
        "list": "input/non_string_text",
        "dict": "input/non_string_text",
        "bad.jsonl:9": "input/not_an_object",
        "bad.jsonl:10": "input/not_an_object",
        "big": "input/doc_too_large",
    }
    stages = table.column(REJECT_STAGE).to_pylist()
    assert stages == [None] + ["input"] * 10
    # the raw text of a rejected record is kept for inspection
    assert table.column("text").to_pylist()[5] == "42"


def test_invalid_utf8_replace(write_jsonl):
    path = write_jsonl("r.jsonl", [b'{"id": "latin1", "text": "caf\xe9"}'])
    table, _, _ = read_all(path, invalid_utf8="replace")
    assert rows(table) == [("latin1", "caf\ufffd", "unknown", "r.jsonl", None)]


def test_parquet_bad_text_columns(write_parquet):
    no_text = write_parquet("no_text.parquet", {"id": ["a", "b"], "body": ["x", "y"], "n": [1, 2]})
    with pytest.raises(InputError, match=r"^input: no 'text' field in 100% of records of no_text.parquet; "
                                         r"fields seen: id, body, n; set input.text_field=body$"):
        plan_reads(InputConfig(path=[str(no_text)]))
    # read anyway (a task planned by hand): every row is a reject that keeps its record as JSON
    task = ReadTask(str(no_text), "no_text.parquet", "parquet", start=0, end=1, first_line=0)
    table = pa.concat_tables(read_task(task, InputConfig()))
    assert table.column(REJECT_REASON).to_pylist() == ["input/missing_text"] * 2
    assert [orjson.loads(t) for t in table.column("text").to_pylist()] == [{"id": "a", "body": "x", "n": 1},
                                                                            {"id": "b", "body": "y", "n": 2}]

    nulls = write_parquet("nulls.parquet", {"text": pa.array(["fine", None], pa.string()), "url": ["u0", "u1"]})
    table, _, _ = read_all(nulls, batch_rows=1)
    assert table.column(REJECT_REASON).to_pylist() == [None, "input/null_text"]
    assert table.column("id").to_pylist() == ["nulls.parquet:0", "nulls.parquet:1"]
    assert table.column("text").to_pylist() == ["fine", '{"text":null,"url":"u1"}']

    ints = write_parquet("ints.parquet", {"text": pa.array([1, None, 3], pa.int64())})
    table, _, _ = read_all(ints)
    assert table.column(REJECT_REASON).to_pylist() == ["input/non_string_text", "input/null_text",
                                                       "input/non_string_text"]
    assert table.column(REJECT_STAGE).to_pylist() == ["input"] * 3

    large = write_parquet("large.parquet", {"text": pa.array(["big text"], pa.large_string())})
    table, _, _ = read_all(large)
    assert table.column(REJECT_REASON).to_pylist() == [None]


def test_empty_file_counted(write_jsonl):
    table, tasks, counters = read_all(write_jsonl("empty.jsonl", []))
    assert len(tasks) == 1 and table.num_rows == 0
    assert counters["empty_files"] == 1 and counters["files"]["empty.jsonl"]["consumed"] == 0


@pytest.mark.parametrize("name", ["x.jsonl", "x.jsonl.gz", "x.jsonl.zst"])
def test_misnamed_text_field_fails_before_reading(write_jsonl, name):
    """A file whose text is under another field fails in one line that names the fields."""
    path = write_jsonl(name, [{"content": "A long enough body of text.", "url": "http://x"}] * 3)
    with pytest.raises(InputError) as e:
        plan_reads(InputConfig(path=[str(path)]))
    assert str(e.value) == (f"input: no 'text' field in 100% of records of {name}; fields seen: content, url; "
                            f"set input.text_field=content")


def test_text_field_check_threshold_and_sample(write_jsonl):
    """More than half missing fails (malformed lines do not count); half passes; only the
    first SAMPLE_RECORDS records of a file are looked at."""
    doc, other = {"id": "d", "text": "body"}, {"id": "o", "title": "a longer title than the id"}
    three_of_five = write_jsonl("60.jsonl", [doc, doc, other, other, other, b"{broken"])
    with pytest.raises(InputError, match=r"no 'text' field in 60% of records of 60.jsonl; fields seen: id, text, "
                                         r"title; set input.text_field=title$"):
        plan_reads(InputConfig(path=[str(three_of_five)]))
    assert plan_reads(InputConfig(path=[str(write_jsonl("50.jsonl", [doc, other] * 3))]))
    late = write_jsonl("late.jsonl", [doc] * SAMPLE_RECORDS + [other] * (SAMPLE_RECORDS + 1))
    table, _, _ = read_all(late)  # the misses after the sample are ordinary rejects
    assert table.column(REJECT_REASON).to_pylist().count("input/missing_text") == SAMPLE_RECORDS + 1
    only_ids = write_jsonl("ids.jsonl", [{"id": "a", "domain": "web"}] * 2)
    with pytest.raises(InputError, match=r"fields seen: id, domain; set input.text_field=NAME$"):
        plan_reads(InputConfig(path=[str(only_ids)]))


def test_corrupt_compressed_input_fails_in_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="cannot read .*bad.jsonl.gz"):
        plan_reads(InputConfig(path=[str(bad)]))


# ----------------------------------------------------------------------------- accounting from the input side


@pytest.mark.parametrize("name", ["part-00000", "docs.txt"])
def test_explicit_format_reads_a_file_of_any_name(write_jsonl, name):
    path = write_jsonl(name, [{"id": f"d{i}", "text": f"document {i}"} for i in range(25)])
    table, tasks, counters = read_all(path, format="jsonl")
    assert table.num_rows == 25 and tasks[0].end == path.stat().st_size
    assert counters["files"][name] == {"consumed": path.stat().st_size, "bytes": path.stat().st_size, "lines": 25,
                                       "records": 25, "rows": 25}


def test_a_task_that_stops_short_is_named(write_jsonl):
    from datacurate.formats.io import check_consumed

    path = write_jsonl("part-00000", [{"text": f"document {i}"} for i in range(25)])
    cfg = InputConfig(path=[str(path)], format="jsonl", batch_rows=5)
    plan = plan_reads(cfg)
    counters: dict = {}
    reader = read_task(plan[0], cfg, counters)
    next(reader)
    reader.close()  # a reader that stops after its first batch
    (problem,) = check_consumed(plan, counters)
    assert str(path) in problem and "consumed" in problem and "\n" not in problem


def test_json_arrays_read_as_records(tmp_path):
    (tmp_path / "arr.json").write_text(' [{"id": "a", "text": "one"}, {"text": "two"}, 3]')
    (tmp_path / "obj.json").write_text('{"id": "solo", "text": "alone"}')
    table, tasks, _ = read_all([tmp_path / "arr.json", tmp_path / "obj.json"])
    assert [t.fmt for t in tasks] == ["json", "jsonl"]  # one object: a JSON line
    assert rows(table) == [("a", "one", "unknown", "arr.json", None), ("arr.json:2", "two", "unknown", "arr.json", None),
                           ("arr.json:3", "3", "unknown", "arr.json", "input/not_an_object"),
                           ("solo", "alone", "unknown", "obj.json", None)]
    (tmp_path / "odd.data").write_text('[{"text": "named by the format"}]')
    table, _, _ = read_all(tmp_path / "odd.data", format="json")
    assert table.column("text").to_pylist() == ["named by the format"]
    (tmp_path / "broken.json").write_text('[{"text": "no end"')
    table, _, _ = read_all(tmp_path / "broken.json")
    assert table.column(REJECT_REASON).to_pylist() == ["input/malformed_json"]


def test_files_not_read_are_listed(write_jsonl, tmp_path):
    write_jsonl("data/a.jsonl", DOCS)
    for name in ("d.csv", "notes.txt", "README.md"):
        (tmp_path / "data" / name).write_text("x")
    (tmp_path / "data" / "empty.jsonl").write_text("")
    plan = plan_reads(InputConfig(path=[str(tmp_path / "data")]))
    assert plan.skipped == ["README.md", "d.csv", "notes.txt"] and plan.empty == ["empty.jsonl"]
    assert plan_reads(InputConfig(path=[f"{tmp_path}/data/*"])).skipped == ["README.md", "d.csv", "notes.txt"]
    with pytest.raises(InputError, match="no JSONL, JSON, Parquet or WARC files in"):
        plan_reads(InputConfig(path=[f"{tmp_path}/data/*.csv"]))


def test_readers_yield_columns_and_reasons_the_read_seam_adds_the_rest(write_jsonl, write_parquet):
    """Each reader yields id, text, domain, its extra fields and reject_reason only; io.frame,
    the one place, adds source, reject_stage (input where there is a reason) and _ord (task <<
    32 | row in the task, continuous over the reader's batches) in the common column order."""
    from datacurate.formats.io import READERS
    from datacurate.readers.base import Tally
    from datacurate.core.schema import ORD, SOURCE

    jsonl = write_jsonl("mixed.jsonl", DOCS + ["{not json"] + [{"text": f"doc {i}", "lang": "x"} for i in range(5)])
    parquet = write_parquet("p.parquet", {"text": ["one", None, "three"], "tag": [1, 2, 3]}, row_group_size=3)
    for path in (jsonl, parquet, "tests/data/warc/example.warc.gz"):
        cfg = InputConfig(path=[str(path)], batch_rows=2)
        for task in plan_reads(cfg):
            raw = list(READERS[task.fmt].read(task, cfg, {}, Tally()))
            assert len(raw) >= 2 or task.fmt == "warc"
            for t in raw:
                assert t.column_names[:3] == ["id", "text", "domain"] and t.column_names[-1] == REJECT_REASON
                assert not {SOURCE, ORD, REJECT_STAGE} & set(t.column_names)
            framed = pa.concat_tables(list(read_task(task, cfg)))
            names = framed.column_names
            assert names[:4] == ["id", "text", "domain", SOURCE] and names[-3:] == [REJECT_STAGE, REJECT_REASON, ORD]
            assert framed.column(ORD).to_pylist() == [(task.index << 32) + i for i in range(framed.num_rows)]
            assert set(framed.column(SOURCE).to_pylist()) == {task.source}
            reasons, stages = framed.column(REJECT_REASON).to_pylist(), framed.column(REJECT_STAGE).to_pylist()
            assert stages == ["input" if r else None for r in reasons]
            assert framed.drop_columns([SOURCE, REJECT_STAGE, ORD]).equals(pa.concat_tables(raw))
    assert "input/malformed_json" in read_all(jsonl)[0].column(REJECT_REASON).to_pylist()
