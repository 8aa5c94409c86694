"""Stage ``url_filter``: host normalisation, subdomains and look-alikes, UT1 and plain
lists, URL entries, missing and bad URLs, config errors; and one run through the engine
with the URL read from the input record's own field."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.stages.url_filter import UrlFilter


@pytest.fixture
def ut1(tmp_path):
    """A UT1-shaped tree: a folder per category with domains / urls files and a usage file."""
    root = tmp_path / "blacklists"
    (root / "adult").mkdir(parents=True)
    (root / "adult" / "domains").write_text("# adult sites\nevil.com\nBÜCHER.example\n\n198.51.100.7\n")
    (root / "adult" / "urls").write_text("good.org/bad/path\nhttp://www.mixed.net/Some/Page/\n")
    (root / "adult" / "usage").write_text("black\n")
    (root / "gambling").mkdir()
    (root / "gambling" / "domains").write_text("casino.net  # inline comment\nevil.com\n")
    return root


def reasons(stage, urls, column_type=pa.string()):
    table = pa.table({"text": ["x"] * len(urls), "url": pa.array(urls, column_type)})
    return stage(table).column("reject_reason").to_pylist()


@pytest.mark.parametrize("url, reason", [
    ("http://evil.com/", "url_filter/adult"),  # adult before gambling: the first category in sorted order
    ("https://evil.com", "url_filter/adult"),
    ("http://a.b.evil.com/x?y=1", "url_filter/adult"),  # subdomain
    ("http://notevil.com/", None),  # look-alikes
    ("http://evil.com.example.org/", None),
    ("http://evil.co/", None),
    ("http://evilcom.net/", None),
    ("http://evil.com:8080/page", "url_filter/adult"),  # port
    ("http://user:secret@evil.com/", "url_filter/adult"),  # user info
    ("http://evil.com@good.org/", None),  # user info, the host is good.org
    ("http://good.org/@evil.com", None),
    ("http://EVIL.Com./", "url_filter/adult"),  # case, trailing dot
    ("http://www.evil.com/", "url_filter/adult"),  # www.
    ("http://www.casino.net", "url_filter/gambling"),
    ("http://bücher.example/", "url_filter/adult"),  # IDN: Unicode in the URL, Unicode in the list
    ("http://xn--bcher-kva.example/", "url_filter/adult"),  # punycode in the URL
    ("http://shop.BÜCHER.example/", "url_filter/adult"),
    ("http://büchers.example/", None),
    ("http://198.51.100.7/x", "url_filter/adult"),  # an IP address entry: itself only
    ("http://10.198.51.100.7/", None),
    ("http://good.org/bad/path", "url_filter/adult"),  # url entries: the URL without its scheme
    ("https://www.good.org/bad/path/", "url_filter/adult"),
    ("http://good.org/bad/path/deeper?q=1#frag", "url_filter/adult"),
    ("http://good.org/bad/path?q=1", "url_filter/adult"),
    ("http://good.org/bad/pathology", None),
    ("http://good.org/bad", None),
    ("http://good.org/", None),
    ("http://mixed.net/Some/Page", "url_filter/adult"),
    ("http://mixed.net/some/page", None),  # paths are case-sensitive
    ("//casino.net/x", "url_filter/gambling"),  # scheme-relative
    ("casino.net/x", "url_filter/gambling"),  # no scheme
    ("  http://casino.net  ", "url_filter/gambling"),
    ("http://[2001:db8::1]:80/", None),
    ("not a url", "url_filter/bad_url"),
    ("http://exa mple.com/", "url_filter/bad_url"),
    ("http://evil.com:port/", "url_filter/bad_url"),
    ("mailto:someone@evil.com", "url_filter/bad_url"),
    ("http://", "url_filter/bad_url"),
    ("http://-evil.com/", "url_filter/bad_url"),
    ("", None),  # missing: keep
    (None, None),
])
def test_decisions(ut1, url, reason):
    assert reasons(UrlFilter(blocklist=[str(ut1)]), [url]) == [reason]


def test_missing_reject_and_absent_column(ut1):
    st = UrlFilter(blocklist=[str(ut1)], missing="reject")
    assert reasons(st, [None, "", "  ", "http://ok.org/"]) == ["url_filter/missing"] * 3 + [None]
    table = pa.table({"text": ["a", "b"]})  # no url column at all: every URL is missing
    assert st(table).column("reject_reason").to_pylist() == ["url_filter/missing"] * 2
    assert UrlFilter(blocklist=[str(ut1)])(table).column("reject_reason").to_pylist() == [None, None]


def test_non_string_urls_are_bad_urls_not_crashes(ut1):
    st = UrlFilter(blocklist=[str(ut1)])
    assert reasons(st, [1, None, 3], pa.int64()) == ["url_filter/bad_url", None, "url_filter/bad_url"]
    assert reasons(st, [["http://evil.com"], None], pa.list_(pa.string())) == ["url_filter/bad_url", None]
    table = pa.table({"text": ["a"], "link": ["http://casino.net/"]})
    assert UrlFilter(blocklist=[str(ut1)], url_field="link")(table).column("reject_reason").to_pylist() == [
        "url_filter/gambling"]


def test_layouts_and_categories(ut1, tmp_path):
    plain = tmp_path / "lists"
    plain.mkdir()
    (plain / "malware.txt").write_text("bad.example\nhttps://ok.example/phish/\n")
    st = UrlFilter(blocklist=[str(plain / "malware.txt"), str(ut1 / "gambling")])  # a plain file, a category folder
    assert st.blocklist.categories == ["gambling", "malware"]
    assert reasons(st, ["http://x.bad.example/", "http://ok.example/phish/1", "http://ok.example/", "http://casino.net",
                        "http://evil.com"]) == ["url_filter/malware", "url_filter/malware", None,
                                                "url_filter/gambling", "url_filter/gambling"]
    only = UrlFilter(blocklist=[str(ut1)], categories=["gambling"])
    assert reasons(only, ["http://bücher.example/", "http://casino.net/"]) == [None, "url_filter/gambling"]
    assert UrlFilter(blocklist=[str(ut1 / "adult" / "domains")]).blocklist.categories == ["adult"]


def write_pipeline(tmp_path, stage: str):
    p = tmp_path / "p.yaml"
    p.write_text(f"input: {tmp_path}\nstages:\n  - {stage}\n")
    return p


def test_config_errors_are_one_line(ut1, tmp_path):
    for stage, message in [
        ("url_filter: {}", "blocklist: give at least one file or directory"),
        ("url_filter: {blocklist: [/nonexistent/list]}", "no such file or directory: /nonexistent/list"),
        ("url_filter: {blocklist: x, missing: drop}", "is not one of"),
        ("url_filter: {blocklits: x}", "did you mean 'blocklist'"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(write_pipeline(tmp_path, stage))
    cfg = load_config(write_pipeline(tmp_path, f"url_filter: {{blocklist: [{ut1}]}}"),
                      ["url_filter.url_field=link", "url_filter.missing=reject"])
    assert cfg.stages[0].config.url_field == "link" and cfg.stages[0].config.missing == "reject"


def test_bad_blocklists_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing but a comment\n\n")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 20)
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9.example\n".encode("latin-1"))
    prose = tmp_path / "prose.txt"
    prose.write_text("This is not a list of domains.\nIt is a letter to a friend.\nbad.example\n")
    for path, message in [(empty, "no domain or URL"), (junk, "not a text file"), (latin, "not UTF-8"),
                          (prose, "2 of 3 entries are not domains or URLs")]:
        with pytest.raises(ConfigError, match=message) as e:
            UrlFilter(blocklist=[str(path)])
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="no domain or URL of categories"):
        UrlFilter(blocklist=[str(prose)], categories=["adult"])


def test_end_to_end_url_from_the_input_record(ray_session, tmp_path, write_jsonl, ut1):
    """The URL is the input record's own ``url`` field, carried through the engine to the stage."""
    from datacurate.engine import run_pipeline

    records = [
        {"id": "a", "text": "kept", "url": "https://news.example.org/story"},
        {"id": "b", "text": "blocked", "url": "https://www.evil.com/page"},
        {"id": "c", "text": "no url"},
        {"id": "d", "text": "bad", "url": 42},
        {"id": "e", "text": "gambling", "url": "http://casino.net"},
    ]
    src = write_jsonl("in.jsonl", records)
    out = tmp_path / "out"
    cfg = load_config({"input": str(src), "output": str(out), "ray": {"progress": False},
                       "stages": [{"url_filter": {"blocklist": [str(ut1)]}}]})
    report = run_pipeline(cfg)
    assert report["totals"]["read"] == 5 and report["totals"]["accounted"]
    rejected = pq.read_table(out / "rejected", columns=["id", "reject_reason"]).to_pylist()
    assert {r["id"]: r["reject_reason"] for r in rejected} == {
        "b": "url_filter/adult", "d": "url_filter/bad_url", "e": "url_filter/gambling"}
    assert sorted(pq.read_table(out / "kept", columns=["id"]).column("id").to_pylist()) == ["a", "c"]
