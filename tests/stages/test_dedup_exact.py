"""exact_dedup: Bloom filter sizing and behaviour, document and paragraph modes, incremental runs."""

import numpy as np
import pyarrow as pa
import pytest

from datacurate.stages.dedup_exact import BloomFilter, ExactDedup, bloom_size, keys

PROSE = [
    "The council met on Tuesday to discuss the new budget for the city parks.",
    "A storm moved across the valley late in the evening, and the river rose quickly.",
    "Researchers reported that the new alloy kept its strength at high temperatures.",
    "The museum opened a wing devoted to the history of printing in the region.",
]


def run(texts, **cfg):
    table = pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts})
    out = ExactDedup(**cfg)(table)
    return out["reject_reason"].to_pylist(), out


def test_bloom_size_matches_formula():
    bits, k = bloom_size(10_000_000, 1e-6)
    assert 34 <= bits / 8 / 2**20 <= 35  # 287.6 Mbit = 34.3 MiB
    assert k == 20


def test_bloom_has_no_false_negatives_and_near_target_fp_rate():
    rng = np.random.default_rng(0)
    n, p = 20_000, 0.01
    bits, k = bloom_size(n, p)
    bf = BloomFilter(bits, k)
    hi, lo = rng.integers(0, 2**63, n, dtype=np.uint64), rng.integers(0, 2**63, n, dtype=np.uint64)
    bf.add(hi, lo)
    assert bf.contains(hi, lo).all()
    qh, ql = rng.integers(0, 2**63, 200_000, dtype=np.uint64), rng.integers(0, 2**63, 200_000, dtype=np.uint64)
    fp = bf.contains(qh, ql).mean()
    assert p / 3 < fp < p * 3


def test_document_mode_drops_later_copies_only():
    texts = PROSE + [PROSE[1], "  the COUNCIL met on Tuesday   to discuss the new budget for the city parks. ", PROSE[1]]
    reasons, _ = run(texts)
    assert reasons[:4] == [None] * 4
    assert reasons[4:] == ["exact_dedup/duplicate"] * 3


def test_normalisation_can_be_turned_off():
    texts = [PROSE[0], PROSE[0].upper()]
    assert run(texts, normalize=False)[0] == [None, None]
    assert run(texts)[0] == [None, "exact_dedup/duplicate"]


def test_priority_column_picks_the_survivor():
    table = pa.table({"id": ["a", "b", "c"], "text": [PROSE[0]] * 3, "score": [0.2, 0.9, 0.5]})
    out = ExactDedup(priority_column="score")(table)
    assert out["reject_reason"].to_pylist() == ["exact_dedup/duplicate", None, "exact_dedup/duplicate"]


def test_chunked_bloom_gives_same_survivors_as_one_chunk():
    texts = [PROSE[i % 4] + (" extra" if i % 7 == 0 else "") for i in range(40)]
    a, _ = run(texts, chunk=3, expected_items=1000)
    b, _ = run(texts, chunk=100_000, expected_items=1000)
    assert a == b
    assert a.count(None) == len(set(t.lower() for t in texts))


def test_paragraph_mode_removes_seen_lines_and_rejects_mostly_seen_documents():
    texts = [
        "\n".join(PROSE[:3]),
        PROSE[3] + "\n" + PROSE[0],  # one of two lines seen: line removed, document kept
        PROSE[1] + "\n\n" + PROSE[2],  # all seen: rejected
    ]
    reasons, out = run(texts, mode="paragraph", paragraph_threshold=0.8)
    assert reasons == [None, None, "exact_dedup/paragraphs_seen"]
    assert out["text"][1].as_py() == PROSE[3]
    assert out["paragraphs_removed"].to_pylist() == [0, 1, 2]


def test_incremental_dedup_against_a_saved_filter(tmp_path):
    from datacurate.stages import dedup_exact as ex

    cfg = ex.ExactDedupConfig(expected_items=1000, num_shards=2)
    stage = ex.ExactDedup(cfg)
    bits, k = stage.filter_size()
    first = pa.table({"text": PROSE[:2], "_ord": pa.array([0, 1], pa.int64())})
    keys = ex.keys(first, cfg)
    for s in range(2):
        shard = ex.FilterShard(bits, k, None, s, 2)  # the actor class is a plain class too
        sub = keys.filter(pa.compute.equal(keys["shard"], s))
        if sub.num_rows:
            shard.check_add(f"shard-{s}", sub["hi"].to_numpy(), sub["lo"].to_numpy(), 10)
        shard.save(str(tmp_path / f"shard-{s:04d}"))
    ex.save_meta(str(tmp_path), cfg, bits, k)
    reasons, _ = run([PROSE[1], PROSE[2], PROSE[2]], expected_items=1000, num_shards=2, load_filter=str(tmp_path))
    assert reasons == ["exact_dedup/seen_before", None, "exact_dedup/duplicate"]


def test_missing_saved_filter_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved filter"):
        run(PROSE, load_filter=str(tmp_path / "nope"))


def test_empty_and_huge_texts():
    huge = " ".join(PROSE) * 20_000  # ~6 MB
    reasons, _ = run(["", "", huge, huge, "   "])
    assert reasons == [None, "exact_dedup/duplicate", None, "exact_dedup/duplicate", "exact_dedup/duplicate"]


def test_filter_shard_answers_a_repeated_task_as_the_first_time():
    """A task Ray runs again after the filter answered gets the first answer, not
    'all duplicates' from a filter that already holds its keys."""
    from datacurate.stages import dedup_exact as ex

    cfg = ex.ExactDedupConfig(expected_items=1000, num_shards=1)
    bits, k = ex.ExactDedup(cfg).filter_size()
    keys = ex.keys(pa.table({"text": [PROSE[0], PROSE[1], PROSE[0]], "_ord": pa.array([0, 1, 2], pa.int64())}), cfg)
    hi, lo = keys["hi"].to_numpy(), keys["lo"].to_numpy()
    shard = ex.FilterShard(bits, k, None, 0, 1)
    first = shard.check_add("shard-0", hi, lo, 10)
    assert first.tolist() == [0, 0, 1]
    assert shard.check_add("shard-0", hi, lo, 10).tolist() == [0, 0, 1]
    assert shard.check_add("other", hi, lo, 10).tolist() == [1, 1, 1]  # a new task does see them
    with pytest.raises(RuntimeError, match="other keys"):
        shard.check_add("shard-0", hi[:2], lo[:2], 10)


def test_url_key_keeps_the_newest_capture_of_each_normalised_url():
    urls = ["HTTP://Example.com:80/news?id=1#top", "http://example.com/news?id=1", "https://example.com/news?id=1",
            "http://EXAMPLE.com/news?id=1#comments", "http://example.com/news?id=2", None, "not a url"]
    dates = ["2023-01-05T10:00:00Z", "2024-06-01T08:00:00Z", "2024-07-01T00:00:00Z", "2022-12-31T23:59:59Z",
             "2020-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"]
    texts = [f"capture {i}" for i in range(len(urls))]  # texts all differ: only the URL makes duplicates
    table = pa.table({"id": [f"d{i}" for i in range(len(urls))], "text": texts, "url": urls, "date": dates})
    out = ExactDedup(key="url", priority_column="date")(table)
    # http://example.com/news?id=1 in three captures: the newest (2024-06-01) stays; https is another URL
    assert out["reject_reason"].to_pylist() == ["exact_dedup:url/duplicate", None, None, "exact_dedup:url/duplicate",
                                                None, None, None]
    by_order = ExactDedup(key="url")(table)  # no priority: the first in input order stays
    assert by_order["reject_reason"].to_pylist()[:4] == [None, "exact_dedup:url/duplicate", None,
                                                         "exact_dedup:url/duplicate"]
    assert run(PROSE + PROSE[:1])[0][-1] == "exact_dedup/duplicate"  # the default key is still the text


def test_a_saved_url_filter_remembers_only_live_captures(tmp_path):
    """Crawl 1 saw /a only as a 404 and /b live; crawl 2 loads its filter: /a's live capture is
    new (kept), /b's is seen before. A dead-only capture never rejects a later live one."""
    def crawl(urls, statuses, **cfg):
        table = pa.table({"id": [f"d{i}" for i in range(len(urls))], "text": [f"page {u}" for u in urls], "url": urls,
                          "http_status": pa.array(statuses, pa.int32())})
        return ExactDedup(key="url", status_column="http_status", num_shards=2, expected_items=1000,
                          **cfg)(table)["reject_reason"].to_pylist()

    saved = str(tmp_path / "filter")
    assert crawl(["http://example.org/a", "http://example.org/a", "http://example.org/b"], [404, 404, 200],
                 save_filter=saved) == [None, "exact_dedup:url/duplicate", None]  # dead captures still dedup
    assert crawl(["http://example.org/a", "http://example.org/b", "http://example.org/c"], [200, 200, 404],
                 load_filter=saved, save_filter=str(tmp_path / "second")) == [None, "exact_dedup:url/seen_before", None]
    # the second filter (the first merged in) remembers /a now that it was live, not /c
    assert crawl(["http://example.org/a", "http://example.org/c"], [200, 200],
                 load_filter=str(tmp_path / "second")) == ["exact_dedup:url/seen_before", None]


def test_url_key_config_errors():
    with pytest.raises(ValueError, match="mode: document only"):
        ExactDedup(key="url", mode="paragraph")
    cfg = ExactDedup(key="url", url_field="link").config
    with pytest.raises(KeyError, match="url_field 'link'"):
        keys(pa.table({"_ord": [0], "text": ["x"]}), cfg)


def test_url_key_ranks_the_live_capture_first_then_the_newest():
    """status_column: a 2xx capture beats any newer dead one (404, 301, 5xx); one without a
    status (a resource record) comes between; dates of every form compare as times."""
    u, v, w = "http://example.com/a", "http://example.com/b", "http://example.com/c"
    rows = [  # (url, http_status, date)
        (u, 404, "2024-06-01T00:00:00Z"),                   # newest, dead
        (u, 200, "2021-01-01T00:00:00.000000Z"),            # the live one: kept
        (u, 301, "2023-01-01T00:00:00Z"),
        (u, None, "2022-01-01T00:00:00Z"),                  # no HTTP: after the 2xx, before the dead
        (v, 404, "20140216050221"),                         # only dead captures: the newest stays
        (v, 503, "2014-02-16T05:02:21.5Z"),                 # half a second newer than the ARC date
        (w, None, "2020-01-01T00:00:00Z"),
        (w, 500, "2025-01-01T00:00:00Z"),
        (w, 200, "2019-01-01T00:00:00.000001Z"),            # two live ones: the newer,
        (w, 204, "2019-01-01T00:00:00.000002Z"),            # by a microsecond
    ]
    table = pa.table({"id": [f"d{i}" for i in range(len(rows))], "text": [f"capture {i}" for i in range(len(rows))],
                      "url": [r[0] for r in rows], "http_status": pa.array([r[1] for r in rows], pa.int32()),
                      "date": [r[2] for r in rows]})
    kept = [i for i, r in enumerate(ExactDedup(key="url", priority_column="date", status_column="http_status")(table)
                                    ["reject_reason"].to_pylist()) if r is None]
    assert kept == [1, 5, 9]
    by_date = ExactDedup(key="url", priority_column="date")(table)["reject_reason"].to_pylist()
    assert [i for i, r in enumerate(by_date) if r is None] == [0, 5, 7]  # the dead captures win on date alone
    as_text = table.set_column(table.column_names.index("http_status"), "http_status",
                               pa.array([None if r[1] is None else str(r[1]) for r in rows]))  # JSONL's "200"
    live = ExactDedup(key="url", priority_column="date", status_column="http_status")
    assert live(as_text)["reject_reason"].to_pylist() == live(table)["reject_reason"].to_pylist()
    with pytest.raises(ValueError, match="needs key: url"):
        ExactDedup(status_column="http_status")
    # input without the column (JSONL beside WARC) ranks as "no status": between a 2xx and a dead capture
    assert keys(pa.table({"_ord": [0], "text": ["x"], "url": [u]}),
                ExactDedup(key="url", status_column="http_status").config)["live"].to_pylist() == [1]
