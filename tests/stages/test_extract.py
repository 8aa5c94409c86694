"""Stage ``extract``: reasons on a WARC-shaped batch, rows without WARC columns, the
default and native engines' F1 on real pages with reference bodies, bad bytes, and a
pathological page that times out while the rest of its batch is kept (native: ~1.4 CPU-s
for that page)."""

import os

import pyarrow as pa
import pytest

from datacurate.core.sandbox import CRASH, OK, Sandbox
from datacurate.stages.extract import Extract
from datacurate.text import extract_eval
from tests.conftest import REPO

ARTICLES = REPO / "benchmarks" / "data" / "article-extraction"

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


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse", "native"])
def test_rows_without_warc_columns_are_html(engine):
    out = Extract(engine=engine, timeout=None)(pa.table({"id": ["a", "b"], "text": [ARTICLE, "<p></p>"]}))
    assert out["reject_reason"].to_pylist() == [None, "extract/empty"]
    assert out["text"][0].as_py().count("the mayor opened the school") == 6


def test_default_engine_f1_on_real_pages():
    """The eight smallest pages of the shipped benchmark subset (scrapinghub's article-
    extraction benchmark), through the stage as configured by default."""
    pages = extract_eval.load_pages(ARTICLES)
    ids = sorted(pages, key=lambda k: len(pages[k][0]))[:8]
    out = Extract()(pa.table({"id": ids, "text": [pages[k][0] for k in ids]}))
    assert out["reject_reason"].null_count == 8
    counts = [extract_eval.shingle_tp_fp_fn(pages[k][1], t) for k, t in zip(ids, out["text"].to_pylist())]
    assert extract_eval.prf(counts)["f1"] >= 0.95


def test_native_engine_f1_on_real_pages():
    """All 46 shipped pages of scrapinghub's benchmark through the stage with ``engine:
    native`` (trafilatura scores 0.96 on them; resiliparse's main_content 0.93)."""
    pages = extract_eval.load_pages(ARTICLES)
    ids = sorted(pages)
    out = Extract(engine="native", timeout=None)(pa.table({"id": ids, "text": [pages[k][0] for k in ids]}))
    assert out["reject_reason"].null_count == len(ids)
    counts = [extract_eval.shingle_tp_fp_fn(pages[k][1], t) for k, t in zip(ids, out["text"].to_pylist())]
    assert extract_eval.prf(counts)["f1"] >= 0.94


def test_native_keeps_content_and_drops_chrome():
    page = ("<html><body><div id='nav-menu'><a href='/'>Home</a> <a href='/a'>About</a></div>"
            "<div class='sidebar'><p>Subscribe to our newsletter for more stories like this one today, it is free.</p></div>"
            "<main><h2>Results</h2><table><tr><td>Lena Schmidt</td><td>12.31 s</td></tr></table>"
            + "".join(f"<p>Line {i}: the committee met on Tuesday and agreed the budget after a long debate.</p>"
                      for i in range(4))
            + "<pre>x = 1\nprint(x)</pre><div class='comments'><p>Great article, thanks a lot for writing "
            "it all down for us!</p></div></main><footer>Imprint</footer></body></html>")
    out = Extract(engine="native", timeout=None)(pa.table({"id": ["a"], "text": [page]}))["text"][0].as_py()
    assert out.count("agreed the budget") == 4 and "Lena Schmidt" in out and "x = 1\nprint(x)" in out
    assert "Results" in out
    for chrome in ("Home", "Subscribe", "Great article", "Imprint"):
        assert chrome not in out


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse", "native"])
def test_bad_bytes_never_crash_a_batch(engine):
    """Undecodable bytes (replaced, as the WARC reader does), NULs and control characters,
    binary noise and broken markup: each row gets its text or a reason, the batch goes on."""
    junk = [b"\x89PNG\r\n\x1a\n\x00\x00".decode("latin-1") * 50,
            b"<p>\xff\xfe\xc3( \x1b[0m\x07 bad bytes</p>".decode("utf-8", "replace"),
            "<html><body>\x00\x00<p>nul</p>", "<<<<>>>></div></table></p>" * 100, "", ARTICLE]
    out = Extract(engine=engine, timeout=None)(pa.table({"id": list("abcdef"), "text": junk}))
    assert out.num_rows == 6 and out["reject_reason"][5].as_py() is None
    assert "the mayor opened the school" in out["text"][5].as_py()
    assert set(out["reject_reason"].to_pylist()) <= {None, "extract/empty", "extract/error"}


@pytest.mark.parametrize("engine,timeout", [("trafilatura", 1.0), ("resiliparse", 1.0), ("native", 1.0)])
def test_pathological_page_times_out_and_its_batch_is_kept(engine, timeout):
    st = Extract(engine=engine, timeout=timeout)
    out = st(pa.table({"id": ["a", "b", "c"], "text": [ARTICLE, pathological_page(), ARTICLE]}))
    assert out["reject_reason"].to_pylist() == [None, "extract/timeout", None]
    assert "the mayor opened the school" in out["text"][2].as_py()
    assert st.metrics(out)["worker_restarts"] == 1
    st.sandbox.close()


def test_sandbox_crash_is_that_item_only():
    box = Sandbox(crash_on_zero, timeout=30)
    assert box.map([1, 0, 2]) == [(OK, 2), (CRASH, None), (OK, 4)]
    box.close()


def test_eval_metrics_and_held_back_split():
    """The second set's metric is trafilatura's ``count_item``; the held-back quarter is a
    fixed function of set and page id."""
    item = {"with": ["the river rose", "opened  the school"], "without": ["Copyright 2024"]}
    assert extract_eval.snippet_counts(item, "At night the river\nrose. They opened the school.") == (2, 0, 0, 1)
    assert extract_eval.snippet_counts(item, "Copyright 2024 Example News") == (0, 1, 2, 0)
    assert extract_eval.snippet_prf([(2, 0, 0, 1), (0, 1, 2, 0)])["precision"] == 2 / 3
    ids = sorted(extract_eval.load_pages(ARTICLES))
    held = [k for k in ids if extract_eval.held_back("aeb", k)]
    assert held == [k for k in ids if extract_eval.held_back("aeb", k)] and 0.1 < len(held) / len(ids) < 0.4
