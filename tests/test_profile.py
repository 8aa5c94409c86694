"""datacurate.report.profile: the report's counts made per batch add up to the counts of the
whole (any batching, any task split), hosts trimmed to the largest, and token estimates from
extracted text rather than HTML bytes."""

import json

import pyarrow as pa

from datacurate.core.dicts import merge
from datacurate.report.profile import OTHER, Rates, profile, trim

TABLE = pa.table({
    "text": ["<html>" + "x" * 200, "page one text", "kept words here", "short", "<html>404", "kept two"],
    "domain": ["web"] * 6,
    "url": ["http://a.example.com/1", "https://b.example.com/2", "http://www.other.org/", "not a url",
            "http://a.example.com/404", "http://c.co.uk/"],
    "http_status": pa.array([200, 200, 200, None, 404, 200], pa.int32()),
    "html_bytes": pa.array([None, 900, 1000, 50, None, 400], pa.int64()),
    "n_tokens": pa.array([None, None, 4, None, None, 3], pa.int32()),
    "reject_stage": ["input", "langid", None, "heuristics", "extract", None],
})
RAW = ("input", "url_filter", "extract")


def test_the_sum_of_slices_is_the_whole():
    whole = profile(TABLE, RAW, ())
    for size in (1, 2, 4):
        parts: dict = {}
        for start in range(0, TABLE.num_rows, size):
            merge(parts, profile(TABLE.slice(start, size), RAW, ()))
        assert json.dumps(parts, sort_keys=True) == json.dumps(whole, sort_keys=True)
    hosts = whole["host"]
    assert hosts["example.com"] == {
        "input": {"docs": 1, "tokens": 0, "unknown": 1, "bytes": 0, "raw": 206},
        "langid": {"docs": 1, "tokens": 0, "unknown": 1, "bytes": 13, "raw": 0},
        "extract": {"docs": 1, "tokens": 0, "unknown": 1, "bytes": 0, "raw": 9}}
    assert set(hosts) == {"example.com", "other.org", "c.co.uk", "(none)"}
    assert set(whole["http_status"]) == {"200", "404", "(none)"}
    # rates: tokens per byte of the tokenized rows; extracted bytes per page byte of the rows extract kept
    assert whole["_rates"] == {"tokens": 7, "token_bytes": 15 + 8, "payload_bytes": 900 + 1000 + 50 + 400,
                               "text_bytes": 13 + 15 + 5 + 8}


def test_tokens_are_estimated_from_extracted_text_not_html():
    r = Rates({"tokens": 100, "token_bytes": 400, "payload_bytes": 1000, "text_bytes": 250})
    assert r.tokens({"docs": 2, "tokens": 30, "unknown": 0}) == (30, False)
    # 400 bytes of HTML -> 100 bytes of text -> 25 tokens; 40 bytes of text -> 10 tokens
    assert r.tokens({"docs": 3, "tokens": 30, "unknown": 2, "bytes": 40, "raw": 400}) == (30 + 35, True)


def test_trim_keeps_the_largest_and_sums_the_rest():
    cell = lambda n: {"kept": {"docs": n, "tokens": 0, "unknown": n, "bytes": n, "raw": 0}}  # noqa: E731
    acc = {f"h{i}": cell(i + 1) for i in range(10)}
    out = trim(acc, top=3)
    assert list(out) == ["h9", "h8", "h7", OTHER] and out[OTHER]["kept"]["docs"] == sum(range(1, 8))
    again = trim({**out, "h0": cell(100)}, top=3)  # the run's sum trimmed again: (other hosts) stays last
    assert list(again) == ["h0", "h9", "h8", OTHER] and again[OTHER]["kept"]["docs"] == sum(range(1, 8)) + 8
