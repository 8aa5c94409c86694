"""The web recipe, ``pipelines/commoncrawl.yaml``, end to end on the sample WARC (with one
older capture of a URL it holds appended): every document kept or rejected with its
reason, the other records counted by type, extracted text without markup and with the
characters of windows-1252 / Shift_JIS pages right; the same WARC on ``s3://`` gives the
same outputs; ``kill -9`` of the driver during ``extract`` and ``--resume`` give the
outputs of the uninterrupted run (shared by the three tests, made once)."""

from __future__ import annotations

import html
import io
import re
import signal
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from datacurate.phases import faults
from tests.cli_run import clean_env, run as cli_run
from tests.outputs import assert_same, snapshot

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "pipelines" / "commoncrawl.yaml"
SAMPLE = REPO / "sample_data" / "commoncrawl" / "sample.warc.gz"
# four read tasks (split at gzip members), so extract runs as several tasks and a kill meets some unfinished
OVERRIDES = ["input.chunk_bytes=20000"]
OLD = "https://DEBIAN.example:443/html/Introduction.html#top"  # the sample's Introduction.html, normalised
# a second crawl, newer than the sample, where The-Basics.html (a 200 in the sample) answered 404
DEAD = "https://debian.example/html/The-Basics.html#second-crawl"
D = "https://debian.example/"
REASONS = {
    "https://an.wikipedia.org/wiki/Escopete": "langid/language",  # Aragonese
    "http://example.com/": "gopher/too_few_words",
    **{f"{D}man/{p}-{w}.html": "langid/language" for p in ("fr/apt-get", "ja/apt-cache")
       for w in ("header", "meta", "nowhere")},
    D + "html/Introduction.html": None,
    D + "html/The-Basics.html": None,
    D + "base-passwd/users-and-groups.html": None,
    D + "html/Using-libffi.html": "extract/empty",  # menus only
    D + "html/Types.html": "extract/empty",
    D + "html/Simple-Example.html": "c4/curly_bracket",  # a C program
    D + "html/Closure-Example.html": "c4/curly_bracket",
    D + "missing.html": "extract/http_status",
    D + "file.png": "extract/not_html",
    D + "shared-mime-info-spec.pdf": "extract/not_html",
    OLD: "exact_dedup:url/duplicate",  # an older capture of a URL: never extracted
    DEAD: "exact_dedup:url/duplicate",  # the newer capture is a 404: the older 200 stays (above)
}
TAG = re.compile(r"</?(html|head|body|title|meta|div|span|p|a|pre|table|tr|td|ul|li|h\d|br|img|script|style)\b[^>]*>",
                 re.I)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    """Two crawls: the sample WARC and, after it, a capture of one of its URLs from 2019;
    a later crawl (its own WARC/1.1 file, dates with fractions) where another answered 404."""
    d = tmp_path_factory.mktemp("crawl")
    with open(d / "crawl.warc.gz", "wb") as f:
        f.write(SAMPLE.read_bytes())
        w = WARCWriter(f, gzip=True)
        body = b"<html><body><p>An older version of this page, with other words in it.</p></body></html>"
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(OLD, "response", payload=io.BytesIO(body), http_headers=http,
                                            warc_headers_dict={"WARC-Date": "2019-05-01T10:00:00Z"}))
    with open(d / "crawl-2.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        body = b"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"
        http = StatusAndHeaders("404 Not Found", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(DEAD, "response", payload=io.BytesIO(body), http_headers=http,
                                            warc_headers_dict={"WARC-Date": "2031-01-02T03:04:05.123456Z"}))
    return d


def _run_here(inp: str, out: Path) -> dict:
    cfg = load_config(RECIPE, OVERRIDES + ["ray.progress=false"], input_path=inp, output_path=str(out))
    return run_pipeline(cfg, report=False)


@pytest.fixture(scope="module")
def clean(ray_session, crawl, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "out"
    return _run_here(str(crawl), out), out


def _rows(out: Path) -> dict:
    rows = {}
    for kind in ("kept", "rejected"):
        for r in pq.read_table(out / kind).to_pylist():
            assert r["url"] not in rows
            rows[r["url"]] = r
    return rows


def _payloads() -> dict:
    """url -> the HTTP payload of the sample's responses, as warcio reads them."""
    with open(SAMPLE, "rb") as f:
        return {r.rec_headers.get_header("WARC-Target-URI"): r.content_stream().read()
                for r in ArchiveIterator(f) if r.rec_type == "response"}


def test_every_record_kept_or_rejected_with_its_reason(clean):
    rep, out = clean
    t = rep["totals"]
    assert t["read"] == len(REASONS) == t["kept"] + t["rejected"] and t["accounted"]
    assert rep["input_files"]["warc_records"] == {"warcinfo": 3, "request": 3, "metadata": 1, "revisit": 1}
    rows = _rows(out)
    assert {u: r.get("reject_reason") for u, r in rows.items()} == REASONS
    # the two exact_dedup stages are counted apart, and each saved its own filter
    st = rep["stages"]
    assert st["exact_dedup:url"]["in"] == len(REASONS) and st["exact_dedup:url"]["rejected"] == {"exact_dedup:url/duplicate": 2}
    assert rows[DEAD]["http_status"] == 404 and rows[DEAD]["date"] == "2031-01-02T03:04:05.123456Z"
    assert rows[D + "html/The-Basics.html"]["date"] < rows[DEAD]["date"]  # the older, live capture was kept
    assert st["exact_dedup"]["in"] == 3 and st["exact_dedup:url"]["metrics"]["filter_saved_to"] != \
        st["exact_dedup"]["metrics"]["filter_saved_to"]
    assert (out / "exact_dedup_filter" / "filter.json").is_file() and (out / "exact_dedup_url_filter" / "filter.json").is_file()
    assert st["extract"]["metrics"]["content_types"] == {"text/html": 16, "image/png": 1, "application/pdf": 1}
    assert rep["stages"]["decompose"]["metrics"]["sequences_written"] > 0


def test_extracted_text_has_no_markup_and_the_right_characters(clean):
    _, out = clean
    rows = _rows(out)
    kept = [r for r in rows.values() if r.get("reject_reason") is None]
    for r in kept:
        assert len(r["text"]) > 1000 and not TAG.search(r["text"]), r["url"]
    assert "Compilers for high level languages" in rows[D + "html/Introduction.html"]["text"]
    # windows-1252 and Shift_JIS pages, charset in the HTTP header / a <meta> / nowhere: langid
    # rejects them after extraction, with the extracted text; its characters are the page's
    payloads = _payloads()
    for page, codec, sample in (("fr/apt-get", "cp1252", "paquets"), ("ja/apt-cache", "shift_jis", "キャッシュ")):
        truth = html.unescape(re.search(r"<pre>(.*)</pre>", payloads[f"{D}man/{page}-header.html"].decode(codec),
                                        re.S).group(1))
        want = Counter(c for c in truth if ord(c) > 127)
        assert sum(want.values()) > 50
        for where in ("header", "meta", "nowhere"):
            r = rows[f"{D}man/{page}-{where}.html"]
            assert r["reject_stage"] == "langid" and sample in r["text"] and not TAG.search(r["text"])
            assert Counter(c for c in r["text"] if ord(c) > 127) == want, (page, where)


def test_the_same_warc_on_s3_gives_the_same_outputs(clean, crawl, s3_server, tmp_path):
    from tests.s3 import make_bucket, upload_dir

    url = f"s3://{make_bucket('cc-in')}/crawl"
    upload_dir(crawl, url)
    out = tmp_path / "out"
    _run_here(url, out)
    a, b = snapshot(clean[1]), snapshot(out)
    for s in (a, b):
        s["stats"].pop("config_sha256")  # the input path differs
    assert a == b


def test_kill_9_during_extract_then_resume(ray_session, crawl, tmp_path):
    """The recipe up to extract (the later stages' resume is test_faults'): the driver
    SIGKILLed when extract's first task is done and others are under way."""
    raw = yaml.safe_load(RECIPE.read_text())
    raw["stages"] = raw["stages"][:[next(iter(e)) for e in raw["stages"]].index("extract") + 1]
    pipeline = tmp_path / "to_extract.yaml"  # its relative paths resolve against the repository root (cwd)
    pipeline.write_text(yaml.safe_dump(raw))
    clean = tmp_path / "clean"
    run_pipeline(load_config(pipeline, OVERRIDES + ["ray.progress=false"], input_path=str(crawl),
                             output_path=str(clean)), report=False)
    args = ["--input", str(crawl), *[a for o in OVERRIDES for a in ("--set", o)]]
    out, fdir = tmp_path / "out", tmp_path / "faults"
    res = cli_run(pipeline, out, *args, env=clean_env(DATACURATE_FAULT="extract:map:0:kill-driver",
                                                      DATACURATE_FAULT_DIR=str(fdir)))
    assert faults.fired("extract", "map", 0, str(fdir)), res.stderr[-3000:]
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stderr[-3000:])
    assert not (out / "stats.json").exists()
    res = cli_run(pipeline, out, *args, "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    done, total = map(int, re.search(r"resume: segment 1: skipped (\d+) of (\d+) map tasks", res.stderr).groups())
    assert 0 < done < total  # extract's tasks were part done
    assert_same(clean, out)
