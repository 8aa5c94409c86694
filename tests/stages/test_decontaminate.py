"""Stage ``decontaminate``: 12-gram near miss vs 13-gram hit, a multiple-choice option as
the overlap, case and punctuation, short texts matched whole, min_matches, fields, the
leak report, one-line errors for bad benchmarks; and runs through the engine (the
one-task path and the distributed phases) that write OUT/decontamination.json."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.stages.decontaminate import Decontaminate
from datacurate.stages.decontaminate import build_index, ngram_keys, words

QUESTION = ("In the spring of that year the county court ordered a careful survey of every road "
            "and bridge between the two towns")  # 22 words
OPTION = "the committee recommended that the new library should be built on the hill above the harbour"  # 16
SHORT = "a painter who worked mostly in oils and watercolours"  # 9 words: shorter than n, matched whole


@pytest.fixture
def quiz(write_jsonl):
    return write_jsonl("bench/quiz.jsonl", [
        {"id": "q1", "question": QUESTION, "choices": ["Yes", "No", OPTION, "Maybe"], "answer": "C"},
        {"id": "q2", "question": "Who was he?", "choices": [SHORT, "a sculptor"], "answer": "A"},
        {"id": "q3", "question": "An unrelated question that nobody in the corpus will ever ask about anything",
         "choices": ["x"], "answer": "A"},
    ])


def run(stage, texts):
    out = stage(pa.table({"text": texts}))
    return out.column("reject_reason").to_pylist(), out.column("decontaminate_record").to_pylist()


def words_of(text, a, b):
    return " ".join(text.split()[a:b])


def test_12_gram_near_miss_13_gram_hit(quiz):
    st = Decontaminate(benchmarks=[str(quiz)])
    twelve, thirteen = words_of(QUESTION, 3, 15), words_of(QUESTION, 3, 16)
    reasons, records = run(st, [f"Before: {twelve}. After.", f"Before: {thirteen}. After.", f"{twelve} x {words_of(QUESTION, 15, 23)}"])
    assert reasons == [None, "decontaminate/quiz", None]
    assert records == [None, "q1", None]


def test_multiple_choice_option_is_the_overlap(quiz):
    st = Decontaminate(benchmarks=[str(quiz)])
    reasons, records = run(st, [f"Minutes of the meeting: {OPTION}, and then lunch.", "yes no maybe"])
    assert reasons == ["decontaminate/quiz", None] and records == ["q1", None]


def test_case_and_punctuation_changes_still_match(quiz):
    st = Decontaminate(benchmarks=[str(quiz)])
    variant = ("IN THE SPRING of that year, the county court ordered a \"careful\" survey... of every road; "
               "and bridge\n\nbetween the two towns!")
    first13 = "In the spring -- of that year -- the County Court ordered a careful survey!"
    # punctuation is deleted, not a word break: "county-court" is one word, unlike the benchmark's two
    hyphen = "In the spring of that year the county-court ordered a careful survey of every"
    reasons, _ = run(st, [variant, first13, hyphen])
    assert reasons == ["decontaminate/quiz", "decontaminate/quiz", None]
    h1, _ = words(pa.array(["Don\u2019t STOP: e-mail."]))
    h2, _ = words(pa.array(["dont stop email"]))
    assert h1.tolist() == h2.tolist()


def test_short_texts_matched_whole(quiz):
    st = Decontaminate(benchmarks=[str(quiz)])
    eight = words_of(SHORT, 0, 8)
    reasons, records = run(st, [f"She was {SHORT}, born in 1850.", f"She was {eight}.", "a sculptor indeed"])
    assert reasons == ["decontaminate/quiz", None, None] and records == ["q2", None, None]
    off = Decontaminate(benchmarks=[str(quiz)], match_short=False)
    assert run(off, [f"She was {SHORT}."])[0] == [None]
    assert run(Decontaminate(benchmarks=[str(quiz)], min_words=10), [f"She was {SHORT}."])[0] == [None]
    assert build_index(off.config).lengths == [13]
    assert build_index(st.config).lengths == [9, 13]


def test_min_matches_counts_distinct_ngrams(quiz):
    st = Decontaminate(benchmarks=[str(quiz)], min_matches=2)
    one, two = words_of(QUESTION, 0, 13), words_of(QUESTION, 0, 14)
    out = st(pa.table({"text": [one, f"{one}. And again: {one}.", two]}))
    assert out.column("reject_reason").to_pylist() == [None, None, "decontaminate/quiz"]
    assert out.column("decontaminate_ngrams").to_pylist() == [1, 1, 2]
    assert out.column("decontaminate_record").to_pylist() == ["q1", "q1", "q1"]  # annotated below the threshold too


def test_fields_limit_what_is_indexed(quiz):
    st = Decontaminate(benchmarks=[str(quiz)], fields=["question"])
    reasons, _ = run(st, [OPTION, QUESTION])
    assert reasons == [None, "decontaminate/quiz"]


def test_leak_report_and_benchmark_choice(quiz, write_jsonl, write_parquet, tmp_path):
    other = write_parquet("other.parquet", {"prompt": [QUESTION, "a b c"], "qid": [7, 8]})
    st = Decontaminate(benchmarks={"second": str(other), "first": str(quiz)}, id_field="qid")
    texts = [QUESTION, f"{OPTION}.", f"again {OPTION}", "clean text"]
    out, metrics = st.run_table(pa.table({"text": texts}), out=str(tmp_path / "out"))  # the report: OUT/decontamination.json
    reasons, records = out.column("reject_reason").to_pylist(), out.column("decontaminate_record").to_pylist()
    # the question is in both: the benchmark with most n-grams, then the first by name
    assert reasons == ["decontaminate/first", "decontaminate/first", "decontaminate/first", None]
    assert records == ["0", "0", "0", None]  # no qid in quiz.jsonl: the record's position
    rep = json.loads((tmp_path / "out" / "decontamination.json").read_text())
    assert metrics["benchmarks"]["first"]["documents"] == 3 and not (tmp_path / "out" / "_work").exists()
    first, second = rep["benchmarks"]["first"], rep["benchmarks"]["second"]
    assert (first["records"], first["records_indexed"], first["records_too_short"]) == (3, 3, 0)
    assert (first["records_found"], first["documents"], first["found"]) == (1, 3, {"0": 3})
    assert (second["records"], second["records_indexed"], second["records_found"], second["documents"]) == (2, 1, 1, 1)
    assert second["found"] == {"7": 1} and second["ngrams"] == 22 - 13 + 1


def test_ngram_keys_all_lengths_in_one_pass():
    h, off = words(pa.array(["a b c d e", "", "x y"]))
    keys, doc, pos, k = ngram_keys(h, off, [2, 5])
    assert sorted(zip(doc.tolist(), pos.tolist(), k.tolist())) == [
        (0, 0, 2), (0, 0, 5), (0, 1, 2), (0, 2, 2), (0, 3, 2), (2, 5, 2)]
    same, _, _, _ = ngram_keys(*words(pa.array(["c d"])), [2])
    assert same[0] == keys[(doc == 0) & (pos == 2) & (k == 2)][0]


def test_bad_benchmarks_are_one_line_errors(tmp_path, write_jsonl):
    not_jsonl = write_jsonl("prose.jsonl", ["This is prose, not JSON."])
    arrays = write_jsonl("arrays.jsonl", [[1, 2, 3]])
    empty = write_jsonl("empty.jsonl", [b""])
    short = write_jsonl("short.jsonl", [{"q": "Too short.", "a": "B"}])
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 not really")
    (tmp_path / "nothing").mkdir()
    dup = write_jsonl("d2/quiz.jsonl", [{"q": QUESTION}])
    cases = [
        ([str(tmp_path / "missing.jsonl")], "benchmark not found"),
        ([str(tmp_path / "nothing")], "has no JSONL, JSON, Parquet or WARC files"),
        ([str(not_jsonl)], "is not JSONL \\(line 1 is not JSON\\)"),
        ([str(arrays)], "is not JSONL of objects"),
        ([str(empty)], "has no records"),
        ([str(short)], "no text of at least 8 words"),
        ([str(junk)], "is not a Parquet file"),
        ([str(write_jsonl("quiz.jsonl", [{"q": QUESTION}])), str(dup)], "two files make benchmark 'quiz'"),
    ]
    for spec, message in cases:
        with pytest.raises(ConfigError, match=message) as e:
            Decontaminate(benchmarks=spec).preflight(None, 0)
        assert "\n" not in str(e.value)
    p = tmp_path / "p.yaml"
    for stage, message in [("decontaminate: {}", "benchmarks: give benchmark files"),
                           ("decontaminate: {benchmarks: [x], n: 0}", "n must be within"),
                           ("decontaminate: {benchmarks: [x], min_words: 20}", "min_words must be within"),
                           ("decontaminate: {benchmark: [x]}", "did you mean 'benchmarks'")]:
        p.write_text(f"input: {tmp_path}\nstages:\n  - {stage}\n")
        with pytest.raises(ConfigError, match=message):
            load_config(p)


@pytest.mark.parametrize("small_input_docs", [20_000, 0])  # one task in-process; the distributed phases
def test_end_to_end_writes_the_leak_report(ray_session, tmp_path, write_jsonl, quiz, small_input_docs):
    from datacurate.engine import run_pipeline

    records = [{"id": f"d{i}", "text": f"Clean document number {i} about nothing in particular."} for i in range(6)]
    records[1]["text"] = f"A blog copied the quiz: {QUESTION}? {OPTION}."
    records[4]["text"] = f"Her aunt was {SHORT}."
    src = write_jsonl("in/docs.jsonl", records)
    out = tmp_path / "out"
    cfg = load_config({"input": str(src), "output": str(out),
                       "ray": {"progress": False, "small_input_docs": small_input_docs},
                       "stages": [{"decontaminate": {"benchmarks": [str(quiz)]}}]})
    report = run_pipeline(cfg, report=False)
    assert report["totals"]["read"] == 6 and report["totals"]["kept"] == 4 and report["totals"]["accounted"]
    rejected = pq.read_table(out / "rejected", columns=["id", "reject_reason", "decontaminate_record"]).to_pylist()
    assert sorted((r["id"], r["reject_reason"], r["decontaminate_record"]) for r in rejected) == [
        ("d1", "decontaminate/quiz", "q1"), ("d4", "decontaminate/quiz", "q2")]
    leak = json.loads((out / "decontamination.json").read_text())["benchmarks"]["quiz"]
    assert (leak["records"], leak["records_found"], leak["documents"], leak["found"]) == (3, 2, 2, {"q1": 1, "q2": 1})
    assert report["stages"]["decontaminate"]["metrics"]["benchmarks"]["quiz"]["records_found"] == 2


def test_punctuation_deleted_as_re2_would():
    import pyarrow.compute as pc

    from datacurate.text.charclass import removed
    from datacurate.stages.decontaminate import PUNCT

    texts = pa.array(["Don’t — stop!", "«Ça va?» 1,000 €, café.", "tab\there\x00\x85x", "", None, "日本語、テスト。😀 ok"])
    expect = pc.replace_substring_regex(pc.fill_null(texts, ""), PUNCT.pattern[4:-2], "")
    assert removed(texts, PUNCT).to_pylist() == expect.to_pylist()


def test_benchmarks_read_from_s3(s3_server, quiz):
    """``benchmarks: [s3://...]`` (a prefix and a file) index as the local files do."""
    from tests import s3

    s3.make_bucket("evals")
    s3.upload_dir(quiz.parent, "s3://evals/suite")
    local = build_index(Decontaminate(benchmarks=[str(quiz)]).config)
    for spec in ("s3://evals/suite", "s3://evals/suite/quiz.jsonl"):
        remote = build_index(Decontaminate(benchmarks=[spec]).config)
        assert remote.names == local.names == ["quiz"]
        assert remote.keys.tolist() == local.keys.tolist() and remote.rec.tolist() == local.rec.tolist()
    reasons, records = run(Decontaminate(benchmarks=["s3://evals/suite"]), [f"Notes: {OPTION}."])
    assert reasons == ["decontaminate/quiz"] and records == ["q1"]
