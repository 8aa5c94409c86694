"""WARC, WET and ARC input: documents and their columns, charsets, non-document records
counted by type, damage as rejects, splits at gzip members, warcio's agreement, S3."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from datacurate.configs.input import InputConfig
from datacurate.formats.io import InputError, check_consumed, plan_reads, read_task
from datacurate.readers import warc

DATA = Path(__file__).parent / "data" / "warc"

# real prose: Hugo, Les Misérables (1862) and Natsume Sōseki, 吾輩は猫である (1905), both public domain;
# the French with the characters where windows-1252 and latin-1 differ (’ “ ” œ — €)
FRENCH = ("En 1815, M. Charles-François-Bienvenu Myriel était évêque de Digne. C’était un vieillard d’environ "
          "soixante-quinze ans ; il occupait le siège de Digne depuis 1806. « Sœur Baptistine » disait : “l’œuvre "
          "de monseigneur — ses pauvres d’abord”, et la dépense montait à 1 500 € par an. ") * 4
JAPANESE = ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
            "ニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。") * 4


def _html(text: str, meta: str | None = None) -> str:
    head = f'<meta charset="{meta}">' if meta else ""
    return f"<html><head>{head}<title>page</title></head><body><p>{text}</p></body></html>"


# (url, page text, charset of the bytes, charset in the HTTP header, in a <meta>)
PAGES = [
    ("http://example.org/fr-header", FRENCH, "cp1252", "windows-1252", None),
    ("http://example.org/fr-meta", FRENCH, "cp1252", None, "windows-1252"),
    ("http://example.org/fr-latin1-label", FRENCH, "cp1252", "iso-8859-1", None),  # as browsers: windows-1252
    ("http://example.org/fr-nowhere", FRENCH, "cp1252", None, None),
    ("http://example.org/ja-header", JAPANESE, "shift_jis", "Shift_JIS", None),
    ("http://example.org/ja-meta", JAPANESE, "shift_jis", None, "shift_jis"),
    ("http://example.org/ja-nowhere", JAPANESE, "shift_jis", None, None),
    ("http://example.org/utf8", FRENCH + JAPANESE, "utf-8", "utf-8", None),
]
PDF = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
       b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, "PNG")
    return buf.getvalue()


def _response(w: WARCWriter, url: str, body: bytes, ctype: str | None, status: str = "200 OK", **kw):
    headers = [("Content-Length", str(len(body)))] + ([("Content-Type", ctype)] if ctype else [])
    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    rec = w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http, **kw)
    w.write_record(rec)
    return rec


def build_warc(path: Path, gzipped: bool = True, extra_pages: int = 0) -> dict:
    """A WARC with every kind of record; {url: expected text} of its HTML pages."""
    expected = {}
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzipped)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "datacurate tests"}))
        for url, text, enc, header, meta in PAGES:
            req = w.create_warc_record(url, "request", payload=io.BytesIO(b""),
                                       http_headers=StatusAndHeaders(f"GET {url} HTTP/1.1", [("Host", "example.org")],
                                                                     is_http_request=True))
            w.write_record(req)
            ctype = f"text/html; charset={header}" if header else "text/html"
            _response(w, url, _html(text, meta).encode(enc), ctype)
            expected[url] = _html(text, meta)
        for i in range(extra_pages):
            url = f"http://example.org/more-{i}"
            _response(w, url, _html(f"{i} {FRENCH}").encode("utf-8"), "text/html; charset=utf-8")
            expected[url] = _html(f"{i} {FRENCH}")
        _response(w, "http://example.org/missing", _html("Not Found").encode(), "text/html", "404 Not Found")
        expected["http://example.org/missing"] = _html("Not Found")
        _response(w, "http://example.org/logo.png", _png(), "image/png")
        _response(w, "http://example.org/paper.pdf", PDF, "application/pdf")
        revisit = w.create_revisit_record("http://example.org/fr-header", "sha1:AAAA", "http://example.org/fr-header",
                                          "2024-01-01T00:00:00Z")
        w.write_record(revisit)
        w.write_record(w.create_warc_record("http://example.org/fr-header", "metadata",
                                            payload=io.BytesIO(b"fetchTimeMs: 12\n"),
                                            warc_content_type="application/warc-fields"))
    return expected


def read_all(paths, **options) -> tuple[pa.Table, list, dict]:
    cfg = InputConfig(path=[str(p) for p in (paths if isinstance(paths, list) else [paths])], **options)
    plan = plan_reads(cfg)
    counters: dict = {}
    tables = [t for task in plan for t in read_task(task.to_dict(), cfg, counters)]
    assert check_consumed(plan, counters) == []
    return pa.concat_tables(tables), plan, counters


@pytest.mark.parametrize("gzipped", [True, False])
def test_every_record_and_every_page_decoded(tmp_path, gzipped):
    path = tmp_path / ("crawl.warc.gz" if gzipped else "crawl.warc")
    expected = build_warc(path, gzipped)
    table, _, counters = read_all(path)
    rows = {r["url"]: r for r in table.to_pylist()}
    assert set(rows) == set(expected) | {"http://example.org/logo.png", "http://example.org/paper.pdf"}
    for url, html in expected.items():  # each page's characters right, whichever way its charset was given
        assert rows[url]["text"] == html, url
        assert rows[url]["reject_reason"] is None
    assert rows["http://example.org/missing"]["http_status"] == 404
    assert rows["http://example.org/fr-header"]["http_status"] == 200
    assert rows["http://example.org/logo.png"]["content_type"] == "image/png"
    assert rows["http://example.org/paper.pdf"]["content_type"] == "application/pdf"
    assert rows["http://example.org/paper.pdf"]["text"] == ""  # a binary payload: a document without text
    assert {r["warc_type"] for r in rows.values()} == {"response"}
    assert all(r["id"].startswith("<urn:uuid:") and r["date"] for r in rows.values())
    # the non-document records, counted by type
    assert counters["warc_records"] == {"warcinfo": 1, "request": len(PAGES), "revisit": 1, "metadata": 1}
    # the offset finds the record again
    with open(path, "rb") as f:
        r = rows["http://example.org/ja-meta"]
        f.seek(r["warc_offset"])
        rec = next(iter(ArchiveIterator(f)))
        assert rec.rec_headers.get_header("WARC-Record-ID") == r["id"]


def test_a_run_keeps_the_pages_right(ray_session, tmp_path):
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    (tmp_path / "in").mkdir()
    expected = build_warc(tmp_path / "in" / "crawl.warc.gz")
    out = tmp_path / "out"
    rep = run_pipeline(load_config({"input": str(tmp_path / "in"), "output": str(out), "ray": {"progress": False},
                                    "stages": []}), report=False)
    t = rep["totals"]
    assert t["read"] == len(expected) + 2 == t["kept"] + t["rejected"] and t["accounted"]
    kept = pq.read_table(out / "kept").to_pylist()
    by_url = {r["url"]: r for r in kept}
    for url, html in expected.items():
        assert by_url[url]["text"] == html
    assert by_url["http://example.org/missing"]["http_status"] == 404
    files = rep["input_files"]
    assert files["warc_records"]["request"] == len(PAGES)
    assert files["files"]["crawl.warc.gz"]["consumed"] == (tmp_path / "in" / "crawl.warc.gz").stat().st_size


def test_big_file_split_at_gzip_members(tmp_path):
    path = tmp_path / "big.warc.gz"
    build_warc(path, extra_pages=60)
    whole, plan1, _ = read_all(path)
    split, plan, counters = read_all(path, chunk_bytes=8_000)
    assert len(plan1) == 1 and len(plan) > 5
    assert [t.end for t in plan[:-1]] == [t.start for t in plan[1:]] and plan[-1].end == path.stat().st_size
    for t in plan[1:]:  # every cut is a member that starts a record
        with open(path, "rb") as f:
            f.seek(t.start)
            assert gzip.GzipFile(fileobj=f).read(5) == b"WARC/"
    cols = ["id", "url", "text", "warc_offset"]
    assert split.select(cols).to_pylist() == whole.select(cols).to_pylist()
    assert counters["files"]["big.warc.gz"]["consumed"] == path.stat().st_size


def test_damage_is_a_reject_and_the_records_around_it_survive(tmp_path):
    good = tmp_path / "good.warc.gz"
    build_warc(good)
    data = good.read_bytes()
    whole, _, _ = read_all(good)
    urls = whole.column("url").to_pylist()
    offsets = dict(zip(urls, whole.column("warc_offset").to_pylist()))

    # a corrupt gzip member in the middle: that record is a reject, all others survive
    hit = offsets["http://example.org/ja-header"]
    bad = bytearray(data)
    bad[hit + 40:hit + 80] = b"\x00" * 40
    (tmp_path / "corrupt.warc.gz").write_bytes(bytes(bad))
    t, _, _ = read_all(tmp_path / "corrupt.warc.gz")
    rejected = t.filter(pa.compute.is_valid(t.column("reject_reason"))).to_pylist()
    assert [(r["reject_reason"], r["warc_offset"]) for r in rejected] == [("input/corrupt_record", hit)]
    survivors = [u for u in t.column("url").to_pylist() if u]
    assert survivors == [u for u in urls if u != "http://example.org/ja-header"]

    # the last record cut short: a truncated_record reject; everything before it survives
    last = offsets["http://example.org/paper.pdf"]
    (tmp_path / "trunc.warc.gz").write_bytes(data[:last + 60])
    t, _, _ = read_all(tmp_path / "trunc.warc.gz")
    assert t.column("reject_reason").to_pylist()[-1] == "input/truncated_record"
    assert [u for u in t.column("url").to_pylist() if u] == urls[:-1]

    # an uncompressed WARC cut inside a record
    plain = tmp_path / "plain.warc"
    build_warc(plain, gzipped=False)
    raw = plain.read_bytes()
    (tmp_path / "plain-trunc.warc").write_bytes(raw[:raw.index(b"ja-nowhere") + 900])
    t, _, _ = read_all(tmp_path / "plain-trunc.warc")
    assert "input/truncated_record" in t.column("reject_reason").to_pylist()
    assert [u for u in t.column("url").to_pylist() if u][:6] == urls[:6]


def test_bad_records_and_files(tmp_path):
    path = tmp_path / "x.warc"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=False)
        _response(w, "http://example.org/a", _html("short").encode(), "text/html")
        rec = w.create_warc_record("", "resource", payload=io.BytesIO(b"no target"), warc_content_type="text/plain")
        rec.rec_headers.remove_header("WARC-Target-URI")
        w.write_record(rec)
        _response(w, "http://example.org/long", _html("long " * 100).encode(), "text/html")
    t, _, _ = read_all(path, max_doc_chars=200)
    assert t.column("reject_reason").to_pylist() == [None, "input/missing_url", "input/doc_too_large"]
    (tmp_path / "notes.warc").write_text("these are my notes, not a WARC\n")
    with pytest.raises(InputError, match=r"not a WARC or ARC file: .*notes.warc"):
        plan_reads(InputConfig(path=[str(tmp_path / "notes.warc")]))


# warcio reads each of these files; those it cannot read (a truncated record, wrong chunks) are left out
AGREE = ["example.warc.gz", "example.warc", "example.arc", "example.arc.gz", "example-iana.org-chunked.warc",
         "example-resource.warc.gz", "example-wget-bad-target-uri.warc.gz", "example-space-in-url.arc",
         "post-test.warc.gz", "whirlwind.warc.gz", "whirlwind.warc.wet.gz", "example-digest.warc",
         "example-space-in-target-uri.warc.gz", "node-warc-books.toscrape.warc", "wail-stringjs.warc",
         "wget-1.14-IAH-urls.warc.gz", "gowarc-test.warc.gz"]
# the producers (tests/data/warc/README.md): each file's warcinfo / filedesc names its writer
PRODUCERS = {"example.warc.gz": "Webrecorder Platform v3.7", "example-iana.org-chunked.warc": "warcprox 1.4",
             "example-space-in-target-uri.warc.gz": "Perma.cc", "example-wget-bad-target-uri.warc.gz": "Wget/1.19.4",
             "wget-1.14-IAH-urls.warc.gz": "Wget/1.14", "whirlwind.warc.gz": "Apache Nutch 1.19",
             "whirlwind.warc.wet.gz": "ia-web-commons", "node-warc-books.toscrape.warc": "node-warc (no warcinfo)",
             "wail-stringjs.warc": "WAIL/WAIL-Archiver", "gowarc-test.warc.gz": "CorentinB/warc (Go)",
             "example.arc": "live-web-example (ARC v1)"}


@pytest.mark.parametrize("name", AGREE)
def test_warcio_agrees_record_for_record(name):
    path = str(DATA / name)
    theirs = []
    with open(path, "rb") as f:
        for r in ArchiveIterator(f, arc2warc=True):
            body = r.content_stream().read()
            url = r.rec_headers.get_header("WARC-Target-URI") or ""
            status = (r.http_headers.get_statuscode() if r.http_headers and r.rec_type == "response"
                      and url.startswith(("http:", "https:")) else None)
            theirs.append((r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), status and int(status),
                           body if r.rec_type in warc.DOCUMENTS and (url or "http:").startswith(("http:", "https:"))
                           else None))
    plan = plan_reads(InputConfig(path=[path]))
    web = ("http:", "https:")  # warcio parses HTTP only under these schemes
    ours = [(r.warc_type, r.url, r.http_status if (r.url or "").startswith(web) else None,
             r.payload if r.warc_type in warc.DOCUMENTS and (r.url or "http:").startswith(web) else None)
            for task in plan for r in warc.records(task) if r.damage is None]
    assert [(t, u, s) for t, u, s, _ in ours] == [(t, u, s) for t, u, s, _ in theirs]
    assert [p for *_, p in ours] == [p for *_, p in theirs]


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_every_document_record_is_one_row_by_record_id(name):
    """Every response / resource / conversion record warcio reads, of a web URL, is exactly one
    row, matched by WARC-Record-ID (ARC: by offset, warcio makes its ids up); those of another
    scheme are counted by type and scheme, never rows."""
    path = DATA / name
    docs, others = [], {}
    with open(path, "rb") as f:
        it = ArchiveIterator(f, arc2warc=True)
        for r in it:
            url = r.rec_headers.get_header("WARC-Target-URI") or ""
            key = r.rec_headers.get_header("WARC-Record-ID") if ".arc" not in name else it.get_record_offset()
            if r.rec_type in warc.DOCUMENTS and url.lower().startswith(("http:", "https:", "ftp:")):
                docs.append(key)
            elif r.rec_type in warc.DOCUMENTS:
                kind = f"{r.rec_type} ({url.split(':', 1)[0].lower()}:)"
                others[kind] = others.get(kind, 0) + 1
    cfg, counters = InputConfig(path=[str(path)]), {}
    rows = [r for task in plan_reads(cfg) for t in read_task(task.to_dict(), cfg, counters) for r in t.to_pylist()]
    assert [r["warc_offset" if ".arc" in name else "id"] for r in rows] == docs
    assert all(r["reject_reason"] is None for r in rows)
    assert {k: v for k, v in counters["warc_records"].items() if k.split(" ")[0] in warc.DOCUMENTS} == others


def test_records_ended_by_a_single_crlf_are_read_once():
    """node-warc (and WAIL, which writes with it) ends each record with one CRLF, not two: 3
    request / response pairs are 3 rows and 3 requests, no damage (59 corrupt rows for 30 pairs before)."""
    raw = (DATA / "node-warc-books.toscrape.warc").read_bytes()
    assert raw.count(b"\r\nWARC/1.1\r\n") == 5 and b"\r\n\r\n\r\n\r\nWARC/1.1" not in raw
    table, _, counters = read_all(DATA / "node-warc-books.toscrape.warc")
    assert table.column("reject_reason").to_pylist() == [None] * 3
    assert counters["warc_records"] == {"request": 3}


def test_targets_of_no_web_scheme_are_counted_not_rows():
    """Heritrix's ``dns:`` lookups (an ARC of Heritrix 1.x) and a ``chrome-extension://`` file
    (WAIL): counted by type and scheme in stats.json and the funnel, never document rows."""
    table, _, counters = read_all(DATA / "heritrix-1-blackbook.arc")
    assert counters["warc_records"] == {"warcinfo": 1, "response (dns:)": 1}
    assert table.num_rows == 4 and all(u.startswith("http://www.archive.org/") for u in table.column("url").to_pylist())
    assert counters["archive_files"] == {"ARC": 1}
    table, _, counters = read_all(DATA / "wail-stringjs.warc")
    assert counters["warc_records"]["response (chrome-extension:)"] == 1
    assert not any(u.startswith("chrome-extension:") for u in table.column("url").to_pylist())
    from datacurate.report.sections import _records

    assert "response (dns:) (not a document)" in _records(4, {"response (dns:)": 1}, {"ARC": 1})


def test_a_wat_file_is_named_and_its_records_counted():
    cfg = InputConfig(path=[str(DATA / "whirlwind.warc.wat.gz")])
    plan = plan_reads(cfg)
    counters: dict = {}
    assert [t for task in plan for t in read_task(task.to_dict(), cfg, counters)] == []
    assert counters["archive_files"] == {"WAT": 1}
    with open(DATA / "whirlwind.warc.wat.gz", "rb") as f:  # as warcio counts them
        types = [r.rec_type for r in ArchiveIterator(f)]
    assert counters["warc_records"] == {t: types.count(t) for t in types} == {"warcinfo": 1, "metadata": 1}


def _understated(data: bytes) -> bytes:
    """A WARC whose response record's Content-Length is 100 bytes short of its block."""
    i = data.index(b"WARC-Type: response")
    j = data.index(b"Content-Length: ", i) + len(b"Content-Length: ")
    k = data.index(b"\r\n", j)
    return data[:j] + str(int(data[j:k]) - 100).encode() + data[k:]


def test_an_understated_content_length_is_one_row(tmp_path):
    import re

    bad = _understated((DATA / "example.warc").read_bytes())
    starts = [m.start() for m in re.finditer(rb"WARC/1\.0\r\n", bad)] + [len(bad)]
    (tmp_path / "u.warc").write_bytes(bad)
    (tmp_path / "u.warc.gz").write_bytes(b"".join(gzip.compress(bad[a:b]) for a, b in zip(starts, starts[1:])))
    for p in (tmp_path / "u.warc", tmp_path / "u.warc.gz"):
        table, _, counters = read_all(p)
        assert table.column("reject_reason").to_pylist() == ["input/corrupt_record"], p
        assert counters["warc_records"] == {"warcinfo": 2, "request": 2, "revisit": 1}


def test_arc_headers_without_a_length_are_rejects():
    t, _, counters = read_all(DATA / "bad.arc")  # warcio reads these as empty responses
    assert t.column("reject_reason").to_pylist() == ["input/corrupt_record", None, "input/corrupt_record"]
    assert counters["warc_records"] == {"warcinfo": 1}


def test_wet_records_are_conversion_documents():
    t, _, counters = read_all(DATA / "whirlwind.warc.wet.gz")
    (row,) = t.to_pylist()
    assert row["warc_type"] == "conversion" and row["http_status"] is None and row["content_type"] == "text/plain"
    assert row["url"] == "https://an.wikipedia.org/wiki/Escopete" and "Escopete" in row["text"]
    assert counters["warc_records"] == {"warcinfo": 1}


def test_s3_gives_the_same_rows(s3_server, tmp_path):
    from tests.s3 import make_bucket, upload_dir

    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "crawl.warc.gz"
    build_warc(path, extra_pages=20)
    local, _, _ = read_all(path, chunk_bytes=8_000)
    url = f"s3://{make_bucket('warc-in')}/crawl"
    upload_dir(tmp_path / "in", url)
    remote, plan, _ = read_all(url + "/crawl.warc.gz", chunk_bytes=8_000)
    assert len(plan) > 1
    assert remote.drop_columns(["_ord"]).to_pylist() == local.drop_columns(["_ord"]).to_pylist()


def test_the_sample_warc_reads_whole():
    t, _, counters = read_all(Path(__file__).parent.parent / "sample_data" / "commoncrawl" / "sample.warc.gz")
    assert t.num_rows == 18 and t.column("reject_reason").null_count == 18
    assert counters["warc_records"] == {"warcinfo": 3, "request": 3, "metadata": 1, "revisit": 1}
    text = {u.rsplit("/", 1)[-1]: x for u, x in zip(t.column("url").to_pylist(), t.column("text").to_pylist())}
    for name in ("apt-get", "apt-cache"):  # declared in the header, in a <meta>, nowhere: the same characters
        assert text[f"{name}-nowhere.html"] == text[f"{name}-header.html"] and "\ufffd" not in text[f"{name}-meta.html"]
    assert sorted(t.column("http_status").to_pylist()).count(404) == 1


def test_resource_records_are_documents_only_with_a_web_url():
    """wget's own arguments and log (resource records of metadata://gnu.org/...) are counted, not
    read as documents; a resource record of a web URL (a page without its HTTP headers) is one."""
    t, _, counters = read_all(DATA / "example-wget-bad-target-uri.warc.gz")
    assert t.column("warc_type").to_pylist() == ["response"] and t.column("url").to_pylist() == ["http://example.com/"]
    assert counters["warc_records"] == {"warcinfo": 1, "request": 1, "metadata": 1, "resource (metadata:)": 2}
    t, _, counters = read_all(DATA / "example-resource.warc.gz")
    assert t.column("warc_type").to_pylist() == ["resource"] and t.column("url").to_pylist() == ["http://example.com/"]
    assert t.column("reject_reason").to_pylist() == [None] and "Example Domain" in t.column("text")[0].as_py()
    assert counters["warc_records"] == {"warcinfo": 2}


def _arc_v2(v1: bytes) -> bytes:
    """An ARC v1 file rewritten as v2 (the Internet Archive's ARC spec): the version block
    says ``2`` and names ten fields; each header gains Result-code, Checksum, Location,
    Offset and Filename before its length. Payloads unchanged."""
    out, pos = [], 0
    while pos < len(v1):
        eol = v1.index(b"\n", pos)
        if eol == pos:  # the blank line between records
            pos += 1
            continue
        head = v1[pos:eol].split(b" ")
        url, (ip, date, ctype, length) = b" ".join(head[:-4]), head[-4:]
        body = v1[eol + 1:eol + 1 + int(length)]
        pos = eol + 1 + int(length) + 1
        if url.startswith(b"filedesc://"):
            body = (b"2 0 LiveWeb Capture\nURL IP-address Archive-date Content-type Result-code Checksum Location "
                    b"Offset Filename Archive-length\n")
            extra = [b"200", b"-", b"-", b"0", url[len(b"filedesc://"):]]
        else:
            status = body.split(b" ", 2)[1] if body.startswith(b"HTTP/") else b"-"
            extra = [status, b"sha1:QWERTY", b"-", str(sum(map(len, out))).encode(), b"example.arc"]
        out.append(b" ".join([url, ip, date, ctype, *extra, str(len(body)).encode()]) + b"\n" + body + b"\n")
    return b"".join(out)


@pytest.mark.parametrize("name", ["example.arc", "example-space-in-url.arc"])
def test_arc_v1_and_v2_headers_give_the_same_records(tmp_path, name):
    v1 = (DATA / name).read_bytes()
    (tmp_path / "v2.arc").write_bytes(_arc_v2(v1))
    assert b"\n2 0 " in (tmp_path / "v2.arc").read_bytes()
    with gzip.open(tmp_path / "v2.arc.gz", "wb") as f:  # one member for the whole file: still read
        f.write(_arc_v2(v1))
    want, _, _ = read_all(DATA / name)
    for p in (tmp_path / "v2.arc", tmp_path / "v2.arc.gz"):
        got, _, counters = read_all(p)
        cols = ["url", "date", "content_type", "http_status", "text", "reject_reason"]
        assert got.select(cols).to_pylist() == want.select(cols).to_pylist()
        assert counters["warc_records"] == {"warcinfo": 1}
    (row,) = want.to_pylist()
    assert row["url"].startswith("http://example.com/") and " " not in row["url"] and row["http_status"] == 200
    assert row["date"] == "2014-02-16T05:02:21.000000Z"  # the ARC date 20140216050221, in the one form


def test_dates_are_iso_8601_utc_to_the_microsecond(tmp_path):
    """WARC/1.0 (seconds), WARC/1.1 (fractions), other W3C-DTF forms and zones: one form."""
    path = tmp_path / "dates.warc"
    dates = {"2014-02-16T05:02:21Z": "2014-02-16T05:02:21.000000Z",
             "2014-02-16T05:02:21.5Z": "2014-02-16T05:02:21.500000Z",
             "2024-05-01T10:00:00.123456789Z": "2024-05-01T10:00:00.123456Z",
             "2024-05-01T12:00+02:00": "2024-05-01T10:00:00.000000Z",
             "2024-05-01": "2024-05-01T00:00:00.000000Z",
             "not a date": "not a date"}  # kept as written
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=False, warc_version="1.1")
        for i, d in enumerate(dates):
            _response(w, f"http://example.org/{i}", _html(str(i)).encode(), "text/html", warc_headers_dict={"WARC-Date": d})
    t, _, _ = read_all(path)
    assert t.column("date").to_pylist() == list(dates.values())


def test_two_files_with_the_same_records_give_distinct_row_ids(tmp_path):
    """A copy of a WARC beside it (the same WARC-Record-IDs): every row its own id, qualified by
    its file; one file alone keeps the bare WARC-Record-ID."""
    (tmp_path / "in").mkdir()
    for name in ("a.warc.gz", "b.warc.gz"):
        (tmp_path / "in" / name).write_bytes((DATA / "example.warc.gz").read_bytes())
    table, _, _ = read_all(tmp_path / "in")
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 2
    single, _, _ = read_all(DATA / "example.warc.gz")
    (bare,) = single.column("id").to_pylist()
    assert sorted(ids) == [f"a.warc.gz#{bare}", f"b.warc.gz#{bare}"]


def _peak_bytes(fn) -> int:
    """The most memory Python objects held while ``fn`` ran a second time (the first imports
    and fills caches; tracemalloc: bytes objects, not FastWARC's or Arrow's own buffers)."""
    import tracemalloc

    fn()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_a_decompression_bomb_is_inflated_only_to_the_cap(tmp_path, encoding):
    """32 MB of HTML compressed to a few KB: inflated to 4 x max_doc_chars bytes at most, the
    record rejected as input/doc_too_large, and the reader never holds the 32 MB."""
    import zlib

    import brotli

    page = b"<html><body>" + b"<p>All work and no play makes Jack a dull boy.</p>" * 650_000
    body = {"gzip": gzip.compress(page), "deflate": zlib.compress(page),
            "br": brotli.compress(page, quality=4)}[encoding]
    path = tmp_path / "bomb.warc.gz"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Encoding", encoding),
                                           ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record("http://example.org/bomb", "response", payload=io.BytesIO(body),
                                            http_headers=http))
        _response(w, "http://example.org/fine", _html("fine").encode(), "text/html")
    got = {}
    peak = _peak_bytes(lambda: got.update(rows=read_all(path, max_doc_chars=100_000)[0].to_pylist()))
    assert [r["reject_reason"] for r in got["rows"]] == ["input/doc_too_large", None]
    assert len(got["rows"][0]["text"]) <= 400_001
    assert peak < 8 << 20, peak  # the page is 32 MB


def test_binary_and_oversized_payloads_are_not_read_whole(tmp_path):
    """A 24 MB image is a row with empty text, its bytes never held; a 24 MB text payload over
    the cap is input/doc_too_large with only its first bytes held."""
    blob = os.urandom(24 << 20)
    path = tmp_path / "big.warc"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=False)
        _response(w, "http://example.org/photo.jpg", blob, "image/jpeg")
        _response(w, "http://example.org/log.txt", b"x" * (24 << 20), "text/plain")
        _response(w, "http://example.org/a", _html("a").encode(), "text/html")
    del blob
    got = {}
    peak = _peak_bytes(lambda: got.update(rows=read_all(path, max_doc_chars=100_000)[0].to_pylist()))
    assert [(r["text"] == "", r["reject_reason"]) for r in got["rows"]] == [
        (True, None), (False, "input/doc_too_large"), (False, None)]
    assert got["rows"][0]["content_type"] == "image/jpeg"
    assert peak < 8 << 20, peak


@pytest.mark.parametrize("name", ["example.arc", "example-space-in-url.arc", "bad.arc", "heritrix-1-blackbook.arc"])
def test_an_uncompressed_arc_is_read_in_windows(monkeypatch, name):
    """In windows of any size (smaller than a record, a header line, the file) the same rows."""
    from datacurate.readers.archive import arcfile

    want, _, counters = read_all(DATA / name)
    for window in (16, 100, 700, 5000):
        monkeypatch.setattr(arcfile, "WINDOW", window)
        got, _, got_counters = read_all(DATA / name)
        assert got.drop_columns(["_ord"]).to_pylist() == want.drop_columns(["_ord"]).to_pylist(), window
        assert got_counters["warc_records"] == counters["warc_records"]


def test_a_warc_gz_held_as_a_payload_adds_no_records(tmp_path):
    """A record whose payload is itself a .warc.gz, its member stored in deflate blocks (level 0:
    the inner gzip members appear as they are): wherever the planner cuts the file, the rows are
    warcio's three, not the inner archive's records (the cut is checked to be a member of the
    file's own chain: datacurate.readers.archive.plan._chained)."""
    import re

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    _response(w, "http://example.org/a", _html("before").encode(), "text/html")
    _response(w, "http://example.org/crawl.warc.gz", (DATA / "example.warc.gz").read_bytes(), "application/warc")
    _response(w, "http://example.org/b", _html("after").encode(), "text/html")
    plain = buf.getvalue()
    starts = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\nWARC-Type", plain)] + [len(plain)]
    path = tmp_path / "nested.warc.gz"
    path.write_bytes(b"".join(gzip.compress(plain[a:b], compresslevel=0) for a, b in zip(starts, starts[1:])))
    with open(path, "rb") as f:
        theirs = [r.rec_headers.get_header("WARC-Record-ID") for r in ArchiveIterator(f)]
    assert path.read_bytes().count(b"\x1f\x8b\x08") > 3  # the inner members are there to be found
    for chunk in (400, 800, 1500, 3000, 1 << 20):
        table, plan, counters = read_all(path, chunk_bytes=chunk)
        assert table.column("id").to_pylist() == theirs, chunk
        assert table.column("reject_reason").null_count == 3 and "warc_records" not in counters
