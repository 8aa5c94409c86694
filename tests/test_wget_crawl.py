"""The web recipe on a crawl made by GNU wget (an independent WARC writer): real pages
served on the loopback, some with charset labels no browser knows (``rot13``, ``hex``,
``base64``, ``unicode_escape``, garbage) in the HTTP header or a ``<meta>`` tag, links to
a page that is not there (a real 404) and to an image; wget writes request, response,
resource (its own log and arguments) and metadata records. ``datacurate run`` exits 0, and
every response record warcio finds in the file is one row, kept or rejected with its reason.

Pages: the 46 real article pages of ``benchmarks/data/article-extraction`` (MIT, see its
README) and valgrind's DocBook pages in ``tests/data/html`` (GPL-2.0+, see its README)."""

from __future__ import annotations

import gzip
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.cli_run import run as cli_run

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "pipelines" / "commoncrawl.yaml"
ARTICLES = REPO / "benchmarks" / "data" / "article-extraction" / "html"
DOCBOOK = REPO / "tests" / "data" / "html"
BOGUS = ["rot13", "hex", "base64", "unicode_escape", "x-no-such-charset", "zlib", "undefined"]


def _site(root: Path) -> list[str]:
    """Write the site: every page linked from index.html; returns the page names."""
    names = []
    for p in sorted(ARTICLES.glob("*.html.gz"))[:24]:
        name = p.name.removesuffix(".gz")
        (root / name).write_bytes(gzip.decompress(p.read_bytes()))
        names.append(name)
    for p in sorted(DOCBOOK.glob("*.html")):
        shutil.copy(p, root / p.name)
        names.append(p.name)
    for i, label in enumerate(BOGUS):  # the label in a <meta>; the handler puts some in the header too
        body = (f'<html><head><meta charset="{label}"><title>Label {label}</title></head><body><article>'
                + "".join(f"<p>Paragraph {k} of a page whose charset label is {label}: a browser ignores the "
                          f"label and reads the page as it would any other, so the words stay as written.</p>"
                          for k in range(8)) + "</article></body></html>")
        (root / f"label-{i}.html").write_text(body, encoding="utf-8")
        names.append(f"label-{i}.html")
    (root / "pixel.png").write_bytes(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                                                   "0000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"))
    links = "".join(f'<li><a href="{n}">{n}</a></li>' for n in names + ["missing-page.html", "pixel.png"])
    (root / "index.html").write_text(f"<html><body><h1>Index</h1><ul>{links}</ul></body></html>", encoding="utf-8")
    return names


class _Handler(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path):
        name = Path(str(path)).name
        if name.startswith("label-") and int(name[6:-5]) % 2 == 0:  # every other one: in the header too
            return f"text/html; charset={BOGUS[int(name[6:-5])]}"
        return super().guess_type(path)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def wget_crawl(tmp_path_factory) -> Path:
    if shutil.which("wget") is None:
        pytest.skip("GNU wget is not installed (scripts/test.sh installs it with apt-get: `apt-get install wget`)")
    site, d = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("wget")
    _site(site)
    handler = lambda *a, **k: _Handler(*a, directory=str(site), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        res = subprocess.run(["wget", "--recursive", "--level=1", "--no-parent", "--no-verbose", "-e", "robots=off",
                              "--delete-after", "--warc-file=crawl", f"http://127.0.0.1:{server.server_port}/"],
                             cwd=d, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    # wget exits 8 when a server answered an error (the 404 above): the WARC is whole
    assert res.returncode in (0, 8) and (d / "crawl.warc.gz").is_file(), res.stderr[-2000:]
    (d / "crawl").mkdir()
    (d / "crawl.warc.gz").rename(d / "crawl" / "crawl.warc.gz")
    return d / "crawl" / "crawl.warc.gz"


def test_the_web_recipe_on_a_wget_crawl_accounts_for_every_response(wget_crawl, tmp_path):
    with open(wget_crawl, "rb") as f:
        recs = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID"), r.rec_headers.get_header("WARC-Target-URI"),
                 r.http_headers.get_statuscode() if r.http_headers else None) for r in ArchiveIterator(f)]
    responses = {rid: (url, status) for kind, rid, url, status in recs if kind == "response"}
    # index, pages, the 404 and the image (wget may ask twice, a request without a response: counted, no row)
    assert len(responses) == 1 + 24 + 4 + len(BOGUS) + 2
    assert sum(1 for kind, *_ in recs if kind == "resource") >= 1  # wget's own log / arguments

    out = tmp_path / "out"
    res = cli_run(RECIPE, out, "--input", str(wget_crawl.parent), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = orjson.loads((out / "stats.json").read_bytes())
    totals = stats["totals"]
    assert totals["accounted"] and totals["read"] == len(responses) == totals["kept"] + totals["rejected"]
    rows = {}
    for kind in ("kept", "rejected"):
        cols = ["id", "url", "http_status"] + (["reject_reason"] if kind == "rejected" else [])
        for r in pq.read_table(out / kind, columns=cols).to_pylist():
            assert r["id"] not in rows
            rows[r["id"]] = r
    assert set(rows) == set(responses)  # every response, once, by its WARC-Record-ID
    for rid, (url, status) in responses.items():
        assert rows[rid]["url"] == url and str(rows[rid]["http_status"]) == status
    reasons = {r["url"].rsplit("/", 1)[1]: r.get("reject_reason") for r in rows.values()}
    assert reasons["missing-page.html"] == "extract/http_status" and reasons["pixel.png"] == "extract/not_html"
    # valgrind's pages, their words joined by U+00A0, are read as English (the layout view)
    assert all(reasons[p.name] != "langid/language" for p in DOCBOOK.glob("*.html"))
    # a bogus label decodes as the page's bytes say: no page lost to decoding, the text as written
    assert not [r for r in rows.values() if (r.get("reject_reason") or "").startswith("input/")]
    texts = [r for kind in ("kept", "rejected") for r in pq.read_table(out / kind, columns=["url", "text"]).to_pylist()]
    labelled = [r for r in texts if "/label-" in r["url"]]  # (their repeated sentences: rejected by the rules)
    assert len(labelled) == len(BOGUS) and all("a browser ignores the label" in r["text"] for r in labelled)
    assert sum(1 for r in texts if "/dist." in r["url"] and "\xa0" in r["text"]) == 4  # U+00A0 kept as written
    # request, warcinfo and metadata records and wget's own resource records: counted by type, not read
    counted = stats["input_files"]["warc_records"]
    assert counted.get("request") == sum(1 for kind, *_ in recs if kind == "request") >= len(responses)
    assert "resource (metadata:)" in counted
