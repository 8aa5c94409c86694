"""Stage ``extract``: reasons on a WARC-shaped batch, rows without WARC columns, the
default engine's F1 on real pages with reference bodies, and a pathological page that
times out while the rest of its batch is kept."""

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from datacurate.stages.extract import Extract
from datacurate.text.sandbox import CRASH, OK, Sandbox

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import eval_extract  # noqa: E402

ARTICLE = ("<html><head><title>t</title></head><body><nav>Home | About | Contact</nav><article><h1>On rivers</h1>"
           + "".join(f"<p>Paragraph {i}: the river rose in the night and the town woke to water in its streets, "
                     "so the mayor opened the school as a shelter.</p>" for i in range(6))
           + "</article><footer>Copyright 2024 Example News</footer></body></html>")


def pathological_page() -> str:
    """4.7 MB on one line: 40k paragraphs (trafilatura: ~12 s here), then 5k more inside
    3,000 nested <div> (resiliparse: ~13 s)."""
    paras = lambda n: "".join(f"<div><p>Sentence {i} of a page that never ends, <b>bold</b> and "  # noqa: E731
                              f"<a href='/x{i}'>a link</a>.</p></div>" for i in range(n))
    return "<html><body>" + paras(40000) + "<div>" * 3000 + paras(5000) + "</div>" * 3000 + "</body></html>"


def crash_on_zero(x: int) -> int:
    if x == 0:
        os._exit(3)  # a crash in C looks like this to the parent
    return 2 * x


def test_reasons_on_a_warc_shaped_batch():
    t = pa.table({
        "id": list("abcdefgh"),
        "text": [ARTICLE, ARTICLE, "\x89PNG...", "%PDF-1.4 ...", "<html><body></body></html>", "Already text.",
                 ARTICLE, "  "],
        "content_type": ["text/html; charset=windows-1252", "text/html", "image/png", "application/pdf",
                         "text/html", "text/plain", None, "text/plain"],
        "http_status": [200, 404, 200, 200, 200, None, None, None],
        "warc_type": ["response", "response", "response", "response", "response", "conversion", "resource",
                      "conversion"],
    })
    st = Extract(timeout=None)
    out = st(t)
    assert out["reject_reason"].to_pylist() == [None, "extract/http_status", "extract/not_html", "extract/not_html",
                                                "extract/empty", None, None, "extract/empty"]
    text = out["text"].to_pylist()
    assert "the mayor opened the school" in text[0] and "<p>" not in text[0] and "Copyright" not in text[0]
    assert text[5] == "Already text."  # WET text passes unchanged
    assert text[1] == ARTICLE  # a rejected row keeps its input
    assert out["html"].null_count == 8 and out["html_bytes"][0].as_py() == len(ARTICLE.encode())
    m = st.metrics(out)
    assert m["content_types"] == {"text/html": 3, "image/png": 1, "application/pdf": 1, "text/plain": 2, "(none)": 1}
    assert m["extracted"] == 3 and m["passed_through"] == 2 and m["engine_used"] == {"trafilatura": 3}
    assert 0 < m["text_chars_out"] < m["html_bytes_in"]
    kept_html = Extract(timeout=None, keep_html=True)(t)
    assert kept_html["html"][0].as_py() == ARTICLE


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse"])
def test_rows_without_warc_columns_are_html(engine):
    out = Extract(engine=engine, timeout=None)(pa.table({"id": ["a", "b"], "text": [ARTICLE, "<p></p>"]}))
    assert out["reject_reason"].to_pylist() == [None, "extract/empty"]
    assert out["text"][0].as_py().count("the mayor opened the school") == 6


def test_default_engine_f1_on_real_pages():
    """The eight smallest pages of the shipped benchmark subset (scrapinghub's article-
    extraction benchmark), through the stage as configured by default."""
    pages = eval_extract.load_pages()
    ids = sorted(pages, key=lambda k: len(pages[k][0]))[:8]
    out = Extract()(pa.table({"id": ids, "text": [pages[k][0] for k in ids]}))
    assert out["reject_reason"].null_count == 8
    counts = [eval_extract.shingle_tp_fp_fn(pages[k][1], t) for k, t in zip(ids, out["text"].to_pylist())]
    assert eval_extract.prf(counts)["f1"] >= 0.95


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse"])
def test_pathological_page_times_out_and_its_batch_is_kept(engine):
    st = Extract(engine=engine, timeout=1.0)
    out = st(pa.table({"id": ["a", "b", "c"], "text": [ARTICLE, pathological_page(), ARTICLE]}))
    assert out["reject_reason"].to_pylist() == [None, "extract/timeout", None]
    assert "the mayor opened the school" in out["text"][2].as_py()
    assert st.metrics(out)["worker_restarts"] == 1
    st.sandbox.close()


def test_sandbox_crash_is_that_item_only():
    box = Sandbox(crash_on_zero, timeout=30)
    assert box.map([1, 0, 2]) == [(OK, 2), (CRASH, None), (OK, 4)]
    box.close()
