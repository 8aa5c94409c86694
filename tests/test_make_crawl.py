"""benchmarks/make_crawl.py: deterministic, Common Crawl-shaped WARC files that warcio reads."""

from __future__ import annotations

import json
from collections import Counter

from warcio.archiveiterator import ArchiveIterator

from tests.bench_scripts import make_crawl


def test_make_crawl_deterministic_and_crawl_shaped(tmp_path):
    a = make_crawl(400, tmp_path / "a", per_file=150)
    b = make_crawl(400, tmp_path / "b", per_file=150, workers=2)
    assert a == b and len(a["files"]) == 3
    for name in a["files"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    small = make_crawl(150, tmp_path / "c", per_file=150)  # a prefix of a larger crawl: the same pages
    assert (tmp_path / "c" / small["files"][0]).read_bytes() == (tmp_path / "a" / a["files"][0]).read_bytes()

    types, status, ident, urls = Counter(), Counter(), Counter(), Counter()
    for name in a["files"]:
        with open(tmp_path / "a" / name, "rb") as f:
            for r in ArchiveIterator(f):  # the reference reader, which checks each member's framing
                types[r.rec_type] += 1
                if r.rec_type == "response":
                    urls[r.rec_headers.get_header("WARC-Target-URI")] += 1
                    status[r.http_headers.get_statuscode()] += 1
                    ident[r.rec_headers.get_header("WARC-Identified-Payload-Type")] += 1
                    r.content_stream().read()
    assert types == {"warcinfo": 3, "request": 400, "response": 400, "metadata": 400}
    assert {"200", "404", "301"} <= set(status)
    assert ident["text/html"] < 400 and {"application/pdf", "image/png"} & set(ident)
    assert sum(1 for v in urls.values() if v == 2) == a["urls_captured_twice"] > 10
    assert len(a["languages"]) >= 8 and len(a["charsets"]) >= 5
    assert json.loads((tmp_path / "a" / "crawl.json").read_text()) == a
