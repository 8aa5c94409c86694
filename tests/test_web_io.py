"""Cheap on object storage and the driver, measured on a real S3-compatible server (moto,
tests/s3.py) by the requests it answers: a WARC on s3:// is read in ranges of 8 MB, not
one GET per 64 KB the parser asks; planning a single-stream ``.warc.gz`` reads a bounded
window past the first cut, not the whole file; URL dedup reads no text."""

import base64
import gzip
import io
import random

import pyarrow as pa
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from datacurate.formats import storage
from datacurate.configs.input import InputConfig
from datacurate.formats.io import plan_reads, read_task
from datacurate.stages.dedup_exact import ExactDedup
from tests import s3


def _warc(n: int = 120, seed: int = 0) -> bytes:
    """``n`` HTML responses of ~20 KB (random, so compression keeps ~3/4): gzip per record."""
    rng, buf = random.Random(seed), io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    for i in range(n):
        words = base64.b64encode(rng.randbytes(15_000)).decode()
        body = f"<html><body><p>page {i}</p><p>{words}</p></body></html>".encode()
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(f"http://site.example/{i}", "response", payload=io.BytesIO(body),
                                            http_headers=http))
    return buf.getvalue()


def _single_stream(members: bytes) -> bytes:
    """The same records as one gzip stream (as some crawlers write): no member to split at."""
    return gzip.compress(gzip.decompress(members))


@pytest.fixture
def requests(monkeypatch, s3_server):
    """(method, path, Range header) of every request the S3 server answers from now on."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    seen = []
    monkeypatch.setattr(MotoRequestHandler, "log_request",
                        lambda self, code="-", size="-": seen.append((self.command, self.path,
                                                                       self.headers.get("Range"))))
    return seen


def _gets(seen, key: str) -> list[int]:
    """Bytes asked by each GET of ``key`` (a ranged GET: its range; else -1)."""
    out = []
    for method, path, rng in seen:
        if method == "GET" and path.split("?")[0].endswith(key):
            a, _, b = (rng or "bytes=-").removeprefix("bytes=").partition("-")
            out.append(int(b) - int(a) + 1 if a and b else -1)
    return out


def _rows(path: str, cfg: InputConfig) -> list[tuple]:
    return [row for t in plan_reads(cfg) for b in read_task(t, cfg)
            for row in zip(*(b.column(c).to_pylist() for c in ("id", "url", "text", "reject_reason")))]


def test_a_warc_on_s3_is_read_in_large_ranges(requests, tmp_path):
    data = _warc()
    (tmp_path / "crawl.warc.gz").write_bytes(data)
    s3.make_bucket("webio")
    s3.client().put_object(Bucket="webio", Key="a/crawl.warc.gz", Body=data)
    url, cfg = "s3://webio/a/crawl.warc.gz", InputConfig(path=["s3://webio/a/crawl.warc.gz"], chunk_bytes=64 << 20)
    [task] = plan_reads(cfg)
    requests.clear()
    rows = [r for b in read_task(task, cfg) for r in b.column("url").to_pylist()]
    gets = _gets(requests, "a/crawl.warc.gz")
    assert len(rows) == 120 and len(data) > 1_500_000
    assert 1 <= len(gets) <= 3, gets  # one 64 KB range a GET was ~40 here
    assert _rows(url, cfg) == _rows(str(tmp_path / "crawl.warc.gz"), InputConfig(path=[str(tmp_path / "crawl.warc.gz")]))


def test_planning_a_single_stream_warc_gz_reads_a_bounded_window(requests, tmp_path):
    members = _warc(300, seed=1)
    one = _single_stream(members)
    s3.make_bucket("webio")
    s3.client().put_object(Bucket="webio", Key="b/one.warc.gz", Body=one)
    s3.client().put_object(Bucket="webio", Key="b/members.warc.gz", Body=members)
    chunk = 256 << 10
    requests.clear()
    plan = plan_reads(InputConfig(path=["s3://webio/b/one.warc.gz"], chunk_bytes=chunk))
    asked = _gets(requests, "b/one.warc.gz")
    assert [(t.start, t.end) for t in plan] == [(0, len(one))]  # not splittable: one task
    assert -1 not in asked and sum(asked) < len(one) // 3, (sum(asked), len(one))  # before: the whole file
    split = plan_reads(InputConfig(path=["s3://webio/b/members.warc.gz"], chunk_bytes=chunk))
    assert len(split) >= len(members) // chunk  # members: split near every cut, as before
    local = tmp_path / "members.warc.gz"
    local.write_bytes(members)
    want = _rows(str(local), InputConfig(path=[str(local)]))
    strip = lambda rows: [r[1:] for r in rows]  # noqa: E731 - ids are the records' own, offsets differ
    assert strip(_rows("s3://webio/b/one.warc.gz", InputConfig(path=["s3://webio/b/one.warc.gz"],
                                                               chunk_bytes=chunk))) == strip(want)
    assert strip(_rows("s3://webio/b/members.warc.gz", InputConfig(path=["s3://webio/b/members.warc.gz"],
                                                                   chunk_bytes=chunk))) == strip(want)


def test_url_dedup_reads_no_text(monkeypatch):
    read = []
    real = storage.read_parquet
    monkeypatch.setattr(storage, "read_parquet", lambda path, columns=None: read.append(columns) or real(path, columns))
    urls = ["http://a.example/x", "http://a.example/x", "http://b.example/", None]
    table = pa.table({"id": list("abcd"), "text": ["<html>" + "x" * 10_000] * 4, "url": urls,
                      "date": ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-01-01T00:00:00Z", None]})
    out = ExactDedup(key="url", priority_column="date")(table)
    assert out["reject_reason"].to_pylist() == ["exact_dedup:url/duplicate", None, None, None]
    assert read and all("text" not in cols for cols in read if cols is not None), read
    ExactDedup()(table)  # the text key still reads it
    assert any(cols and "text" in cols for cols in read)


def test_range_buffer_reads_as_the_file(tmp_path):
    """Every mix of seeks and read sizes gives the bytes a local file gives."""
    data = random.Random(3).randbytes(300_000)
    (tmp_path / "f").write_bytes(data)

    class Plain(io.BytesIO):
        def size(self):
            return len(data)

    buf, rng = storage.RangeBuffer(Plain(data), block=50_000), random.Random(4)
    for _ in range(300):
        pos, n = rng.randrange(len(data) + 10), rng.choice([0, 1, 7, 4096, 60_000, 200_000, -1])
        buf.seek(pos)
        assert buf.read(n) == (data[pos:] if n < 0 else data[pos:pos + n])
        end = len(data) if n < 0 else min(len(data), pos + n)
        assert buf.tell() == max(end, pos)


def test_extract_counts_the_bytes_of_the_text_it_makes():
    """``text_bytes_out`` (UTF-8 bytes of the extracted text) beside ``html_bytes_in``: the
    ratio a token estimate applies to pages never extracted, instead of their HTML bytes."""
    from datacurate.stages.extract import Extract

    page = ("<html><body><article>" + "".join(f"<p>Paragraph {i}: the café by the river opened its doors again "
                                                "after the flood, and the town came back to it.</p>" for i in range(8))
            + "</article><nav>" + "<a href='/x'>menu</a>" * 200 + "</nav></body></html>")
    st = Extract(timeout=None)
    out = st(pa.table({"id": ["a", "b"], "text": [page, page.replace("river", "harbour")]}))
    m = st.metrics(out)
    kept = [t for t, r in zip(out["text"].to_pylist(), out["reject_reason"].to_pylist()) if r is None]
    assert len(kept) == 2 and m["text_bytes_out"] == sum(len(t.encode()) for t in kept)
    assert m["text_chars_out"] < m["text_bytes_out"] < m["html_bytes_in"] // 2
