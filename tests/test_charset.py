"""Web pages decoded as a browser decodes them (datacurate/text/charset.py): WHATWG labels,
every source tried until one decodes, browser tables, utf-16 labels, U+FFFD counted
instead of a reject; and no charset label, Python's codec names and garbage included,
in the HTTP header or a <meta> tag, can end a run (``datacurate run`` on the web recipe)."""

from __future__ import annotations

import encodings
import encodings.aliases
import io
import json
import os
import pkgutil
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from datacurate.readers import warc
from datacurate.text import charset
from tests.cli_run import run as cli_run
from tests.test_warc import FRENCH, JAPANESE, _html, read_all

REPO = Path(__file__).resolve().parent.parent
ARTICLES = REPO / "benchmarks" / "data" / "article-extraction" / "html"
# the labels the issue names, which Python's codecs.lookup accepts and no browser does
NOT_TEXT_LABELS = ["hex", "base64", "rot13", "quoted-printable", "zlib", "bz2", "uu", "idna", "undefined",
                   "punycode", "unicode_escape", "raw_unicode_escape", "charmap", "utf-7", "mbcs", "oem"]
GARBAGE = ["", " ", "x" * 300, "utf-8; q=1", "utf-8\x7f", "../../etc/passwd", "\"utf-8", "'", "null", "none",
           "charset=utf-8", "text/html", "utf-8,iso-8859-1", "ütf-8", "🙂", "%75%74%66-8", "0", "-1", "utf--8"]


def python_codec_names() -> list[str]:
    """Every name Python's codecs answer to: the aliases, what they alias and the codec modules."""
    mods = {m.name for m in pkgutil.iter_modules(encodings.__path__)} - {"aliases"}
    return sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()) | mods)


# ----------------------------------------------------------------------------- the decoder alone


@pytest.mark.parametrize("label", NOT_TEXT_LABELS)
def test_labels_no_browser_knows_fall_through(label):
    page = _html(FRENCH).encode("utf-8")
    assert charset.lookup(label) is None
    for header, meta in ((label, None), (None, label), (label, label)):
        body = _html(FRENCH, meta).encode("utf-8") if meta else page
        d = charset.decode(body, header)
        assert (d.text, d.encoding, d.n_replacement_chars) == (body.decode("utf-8"), "utf-8", 0)


def test_browser_tables():
    # iso-8859-1 / latin1 / ascii are windows-1252, whose five bytes Python leaves undefined are the C1 controls
    body = _html(FRENCH).encode("cp1252") + b" \x81\x8d\x8f\x90\x9d"
    for label in ("iso-8859-1", "latin1", "ascii", "us-ascii", "windows-1252"):
        d = charset.decode(body, label)
        assert d.text == _html(FRENCH) + " \x81\x8d\x8f\x90\x9d" and d.encoding == "windows-1252"
        assert d.n_replacement_chars == 0 and not d.not_text
    # Shift_JIS is Windows-31J (NEC / IBM extensions: ① and ∵ are not in Python's shift_jis)
    ja = JAPANESE + "①∵"
    assert charset.decode(ja.encode("cp932"), "shift_jis").text == ja
    assert charset.codec("gb2312") == "gb18030" and charset.codec("euc-kr") == "cp949"


def test_a_label_the_bytes_contradict_gives_way_to_the_next_source():
    cp1252 = _html(FRENCH).encode("cp1252")
    d = charset.decode(cp1252, "utf-8")  # a header saying utf-8 over windows-1252 bytes
    assert d.text == _html(FRENCH) and d.encoding == "windows-1252" and d.n_replacement_chars == 0
    utf8 = _html(FRENCH + JAPANESE).encode("utf-8")
    d = charset.decode(utf8, "shift_jis")  # a header saying shift_jis over UTF-8 bytes: UTF-8
    assert d.text == utf8.decode("utf-8") and d.encoding == "utf-8"
    # a comment's <meta> is no declaration: the real one decides
    body = b"<!-- <meta charset=\"shift_jis\"> -->" + _html(FRENCH, "windows-1252").encode("cp1252")
    assert charset.prescan(body) == "windows-1252" and charset.decode(body).text == body.decode("cp1252")


def test_utf16_labels_as_browsers():
    utf8 = _html(FRENCH, "utf-16").encode("utf-8")
    # <meta charset=utf-16> on bytes without a BOM: UTF-8 (HTML standard, prescan)
    assert charset.prescan(utf8) == "utf-8"
    assert charset.decode(utf8).text == utf8.decode("utf-8")
    # an HTTP utf-16 header over ASCII-compatible bytes: never CJK garbage
    for label in ("utf-16", "utf-16le", "utf-16be", "unicode"):
        d = charset.decode(utf8, label)
        assert d.text == utf8.decode("utf-8") and d.encoding == "utf-8", label
    # ... over real UTF-16LE bytes without a BOM: UTF-16LE, as the standard says
    le = _html(FRENCH + JAPANESE).encode("utf-16-le")
    assert charset.decode(le, "utf-16").text == _html(FRENCH + JAPANESE)
    # a BOM wins over every label
    for bom_codec in ("utf-8-sig", "utf-16"):
        d = charset.decode(_html(JAPANESE).encode(bom_codec), "iso-8859-1")
        assert d.text == _html(JAPANESE), bom_codec


def test_replacement_counted_not_rejected():
    # a UTF-8 page cut inside its last character (as a capped crawl stores it): kept with one U+FFFD
    body = _html(FRENCH + JAPANESE).encode("utf-8")[:-len("</p></body></html>") - 1]
    d = charset.decode(body, "utf-8")
    assert d.encoding == "utf-8" and d.n_replacement_chars == 1 and d.text.endswith("\ufffd") and not d.not_text
    # a Shift_JIS page with one stray byte: Shift_JIS with one U+FFFD, not windows-1252 mojibake
    sj = _html(JAPANESE).encode("shift_jis").replace(b"<p>", b"<p>\x81\x7f", 1)
    d = charset.decode(sj, "shift_jis")
    assert d.encoding == "shift_jis" and d.n_replacement_chars == 1 and JAPANESE[:20] in d.text
    # bytes that are not text at all: a zlib stream, a PNG labelled text/html
    assert charset.decode(zlib.compress(_html(FRENCH).encode() * 20), "utf-8").not_text
    assert charset.decode(os.urandom(4096)).not_text


def test_the_reader_columns(tmp_path):
    """Through the WARC reader: ``charset`` and ``n_replacement_chars`` columns; no reject
    for an encoding, ``input/not_text`` for a compressed payload stored as text/html."""
    pages = {
        "http://example.org/cp1252-says-utf8": (_html(FRENCH).encode("cp1252"), "text/html; charset=utf-8"),
        "http://example.org/latin1-c1": (_html(FRENCH).encode("cp1252") + b"\x81", "text/html; charset=latin1"),
        "http://example.org/cut": (_html(JAPANESE).encode("utf-8")[:-20], "text/html; charset=utf-8"),
        "http://example.org/hex": (_html(FRENCH, "base64").encode("utf-8"), "text/html; charset=hex"),
        "http://example.org/gzip-twice": (zlib.compress(_html(FRENCH).encode()), "text/html"),
    }
    path = tmp_path / "c.warc.gz"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, (body, ctype) in pages.items():
            http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    rows = {r["url"]: r for r in read_all(path)[0].to_pylist()}
    got = {u: (r["charset"], r["n_replacement_chars"], r["reject_reason"]) for u, r in rows.items()}
    assert got == {
        "http://example.org/cp1252-says-utf8": ("windows-1252", 0, None),
        "http://example.org/latin1-c1": ("windows-1252", 0, None),
        "http://example.org/cut": ("utf-8", 1, None),
        "http://example.org/hex": ("utf-8", 0, None),
        "http://example.org/gzip-twice": ("windows-1252", 0, "input/not_text"),
    }
    assert rows["http://example.org/cp1252-says-utf8"]["text"] == _html(FRENCH)


def test_shipped_pages_decode_without_loss():
    """The 46 real article pages: each decodes with no U+FFFD, and as its own declared charset says."""
    import gzip

    for p in sorted(ARTICLES.glob("*.html.gz")):
        body = gzip.decompress(p.read_bytes())
        text, encoding, n_bad, reason = warc.decode(body, None, "text/html")
        assert reason is None and n_bad == 0, p.name
        declared = charset.prescan(body)
        if declared is not None:
            assert encoding == declared, p.name


# ----------------------------------------------------------------------------- no label ends a run


def bogus_warc(path: Path) -> dict:
    """A WARC with one page per Python codec name and garbage label, in the HTTP header and
    in a <meta> tag (and both); {url: label} of its responses."""
    news = [json.loads(line)["text"] for line in (REPO / "sample_data" / "corpus" / "news.jsonl").open()]
    urls = {}
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for i, label in enumerate(python_codec_names() + GARBAGE):
            for where in ("header", "meta", "both"):
                url = f"http://example.org/{where}/{i}"
                text = news[(3 * i + len(url)) % len(news)][:3000]
                meta = label if where != "header" else None
                body = (f'<html><head><meta charset="{meta}"></head><body><p>{text}</p></body></html>' if meta
                        else _html(text)).encode("utf-8")
                ctype = f"text/html; charset={label}" if where != "meta" else "text/html"
                try:
                    ctype.encode("latin-1")
                except UnicodeEncodeError:  # an HTTP header holds latin-1 bytes: the raw UTF-8 bytes of the label
                    ctype = ctype.encode("utf-8").decode("latin-1")
                http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
                w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
                urls[url] = label
    return urls


def test_no_label_ends_a_run(tmp_path):
    """Every Python codec name and garbage labels, through the header and a <meta> tag, in a
    real WARC, through ``datacurate run pipelines/commoncrawl.yaml``: exit 0, every response
    one row, none rejected for its bytes, each label unknown to browsers read as UTF-8."""
    (tmp_path / "in").mkdir()
    urls = bogus_warc(tmp_path / "in" / "bogus.warc.gz")
    out = tmp_path / "out"
    proc = cli_run(REPO / "pipelines" / "commoncrawl.yaml", out, "--input", str(tmp_path / "in"), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {}
    for kind in ("kept", "rejected"):
        if not (out / kind).exists():
            continue
        t = pq.read_table(out / kind)
        for r in t.select([c for c in ("url", "charset", "n_replacement_chars", "reject_stage")
                           if c in t.column_names]).to_pylist():
            assert r["url"] not in rows
            rows[r["url"]] = r
    assert set(rows) == set(urls)
    assert not [r for r in rows.values() if r.get("reject_stage") == "input"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["totals"]["read"] == len(urls) and stats["totals"]["accounted"] and stats["totals"]["kept"]
    for url, label in urls.items():
        if charset.lookup(label) is None:
            assert (rows[url]["charset"], rows[url]["n_replacement_chars"]) == ("utf-8", 0), (url, label)
