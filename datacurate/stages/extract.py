"""Stage ``extract``: HTML -> main text, the first and costliest step of a web corpus.

FineWeb (Penedo et al. 2024) extracts with trafilatura and DCLM (Li et al. 2024) with
resiliparse; both beat Common Crawl's own WET text downstream. Measured here on 181 real
article pages with reference bodies (scrapinghub's article-extraction benchmark, the
shingle F1 of that benchmark, one core; ``benchmarks/eval_extract.py``): trafilatura
with FineWeb's settings F1 0.964 at ~52 pages/s, resiliparse ``main_content`` 0.928 at
~680 pages/s (its precision is what it loses; no hybrid tried reached trafilatura's F1
at 5x its speed, see benchmarks/README.md). ``native``, our own rules over lexbor's DOM
(:mod:`datacurate.text.native`), scores above trafilatura on the long-tail set (F1 0.954
against 0.938) and within 0.005 on two of the four article sets, 0.0058 and 0.0111 below on
the two held-back quarters, at 6-11x its pages per CPU-second. Quality first, as FineWeb:
the default engine stays trafilatura until ``native`` is within 0.005 on every set.

Rows come from the WARC readers (``url``, ``date``, ``content_type``, ``http_status``,
``warc_type`` beside ``text``, the decoded payload) or from JSONL / Parquet, where a row
without those columns is taken as HTML. In order, a row is rejected for a non-2xx HTTP
status (``extract/http_status``), a content type other than HTML (``extract/not_html``:
images, PDFs, ...; a WET ``conversion`` record is text already and passes unchanged, and so
does a JSONL / Parquet record with ``records: text``),
an extraction that overran ``timeout`` (``extract/timeout``) or failed
(``extract/error``), or no text (``extract/empty``). Extraction runs in a child process
killed on timeout (:mod:`datacurate.core.sandbox`), so one pathological page costs
``timeout`` seconds and its batch goes on; a child that keeps dying before it takes
its batch is restarted :data:`~datacurate.core.sandbox.MAX_FUTILE` times, then the rest of
the batch is ``extract/error`` (``worker_gave_up`` counts them, one warning). Kept rows carry the extracted text; the HTML
is dropped unless ``keep_html`` (rejected rows keep their input text, the HTML).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import TEXT
from datacurate.stages.base import Stage, first_reason, value_counts
from datacurate.text import html as html_engines
from datacurate.core.sandbox import CRASH, ERROR, OK, TIMEOUT, Sandbox

HTTP_STATUS, NOT_HTML, TIMED_OUT, FAILED, EMPTY = (
    "extract/http_status", "extract/not_html", "extract/timeout", "extract/error", "extract/empty")
NO_TYPE = "(none)"


@dataclass
class TrafilaturaOptions:
    favor_precision: bool = opt(True, "FineWeb's setting: when unsure, leave a block out")
    favor_recall: bool = opt(False, "when unsure, keep a block")
    fast: bool = opt(False, "skip the readability / jusText fallbacks (faster, lower F1: see benchmarks/)")
    include_tables: bool = opt(True, "text of <table> elements")
    include_comments: bool = opt(False, "comment sections (FineWeb: no)")
    include_links: bool = opt(False, "keep link targets in the text")
    include_formatting: bool = opt(False, "keep bold / italic / headings as markdown")
    include_images: bool = opt(False, "image alt texts")


@dataclass
class ResiliparseOptions:
    main_content: bool = opt(True, "DCLM's setting: drop navigation, footers and other boilerplate blocks")
    preserve_formatting: bool = opt(True, "block elements on their own lines")
    list_bullets: bool = opt(False, "bullets / numbers before list items")
    alt_texts: bool = opt(False, "image alt texts")
    links: bool = opt(False, "link targets in the text")
    form_fields: bool = opt(False, "form field values")
    noscript: bool = opt(False, "<noscript> contents")
    comments: bool = opt(False, "comment sections as main content")


@dataclass
class NativeOptions:
    region: bool = opt(True, "keep only the best-scored region's prose (readability's step): drops teaser lists")


@dataclass
class ExtractConfig:
    engine: Literal["trafilatura", "resiliparse", "native"] = opt("trafilatura", "HTML -> text engine")
    trafilatura: TrafilaturaOptions = field(default_factory=TrafilaturaOptions)
    resiliparse: ResiliparseOptions = field(default_factory=ResiliparseOptions)
    native: NativeOptions = field(default_factory=NativeOptions)
    timeout: Optional[float] = opt(5.0, "seconds per document (extract/timeout); null = no limit, in process")
    html_types: list[str] = opt(["text/html", "application/xhtml+xml"],
                                "content types extracted; a null content_type counts as HTML")
    keep_html: bool = opt(False, "keep the input HTML in column html (kept rows)")
    records: Literal["html", "text"] = opt("html", "rows not read from a WARC (no warc_type: JSONL / Parquet "
                                                   "records): html = pages to extract, text = text already, passed "
                                                   "unchanged (one recipe then takes WARC and text inputs)")

    def validate(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("timeout must be positive (null: no limit)")
        self.html_types = [t.strip().lower() for t in self.html_types]

    def engine_options(self) -> dict:
        return asdict(getattr(self, self.engine))


def _column(table: pa.Table, name: str) -> pa.Array | None:
    """A column as one array, None when absent or all-null typed."""
    if name not in table.column_names or pa.types.is_null(table.schema.field(name).type):
        return None
    return table.column(name).combine_chunks()


def mime_types(table: pa.Table) -> pa.Array:
    """The lowercased media type of each row (``text/html; charset=x`` -> ``text/html``), null when unknown."""
    ct = _column(table, "content_type")
    if ct is None:
        return pa.nulls(table.num_rows, pa.string())
    mime = pc.utf8_lower(pc.utf8_trim_whitespace(pc.replace_substring_regex(ct.cast(pa.string()), r";.*$", "")))
    return pc.if_else(pc.equal(mime, ""), pa.scalar(None, pa.string()), mime)


class Extract(Stage):
    name = "extract"
    Config = ExtractConfig
    columns = {"html_bytes": pa.int64(), "html": pa.large_string()}

    @classmethod
    def rewrites_text(cls, config) -> bool:
        return True

    def __init__(self, config: ExtractConfig | None = None, **params):
        super().__init__(config, **params)
        c = self.config
        self.fn = functools.partial(html_engines.extract, engine=c.engine, options=c.engine_options())
        self.sandbox = (Sandbox(self.fn, c.timeout, warm="<html><body><p>warm</p></body></html>")
                        if c.timeout is not None else None)
        self._metrics: dict = {}

    def _run(self, pages: list[str]) -> list[tuple[str, object]]:
        if self.sandbox is not None:
            return self.sandbox.map(pages)
        out = []
        for p in pages:
            try:
                out.append((OK, self.fn(p)))
            except Exception as e:  # one page's failure is that page's reason
                out.append((ERROR, f"{type(e).__name__}: {e}"))
        return out

    def annotate(self, table: pa.Table):
        n = table.num_rows
        src = table.column(TEXT).combine_chunks()
        status = _column(table, "http_status")
        bad_status = np.zeros(n, bool) if status is None else np.asarray(pc.fill_null(pc.or_(
            pc.less(status.cast(pa.int64()), 200), pc.greater_equal(status.cast(pa.int64()), 300)), False))
        wtype = _column(table, "warc_type")
        converted = np.zeros(n, bool) if wtype is None else np.asarray(
            pc.fill_null(pc.equal(wtype.cast(pa.string()), "conversion"), False))
        if self.config.records == "text":  # a record of text, not a WARC capture: as a WET conversion
            converted |= np.ones(n, bool) if wtype is None else np.asarray(pc.is_null(wtype))
        mime = mime_types(table)
        not_html = np.asarray(pc.and_(pc.is_valid(mime), pc.invert(pc.is_in(mime, pa.array(self.config.html_types)))))
        not_html &= ~converted
        todo = np.flatnonzero(~bad_status & ~not_html & ~converted & np.asarray(pc.is_valid(src)))

        texts = np.array(src.to_pylist(), dtype=object)  # rejected and converted rows keep their input text
        timed_out, failed = np.zeros(n, bool), np.zeros(n, bool)
        used: dict[str, int] = {}
        restarts = self.sandbox.restarts if self.sandbox is not None else 0
        given_up = self.sandbox.given_up if self.sandbox is not None else 0
        for i, (st, value) in zip(todo, self._run([texts[i] for i in todo])):
            if st == OK:
                texts[i], engine = value
                used[engine] = used.get(engine, 0) + 1
            else:
                timed_out[i], failed[i] = st == TIMEOUT, st in (ERROR, CRASH)
        out_text = pa.array(texts, pa.large_string())
        empty = np.asarray(pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(out_text)), 0), True))
        reasons = first_reason(n, [(HTTP_STATUS, bad_status), (NOT_HTML, not_html), (TIMED_OUT, timed_out),
                                   (FAILED, failed), (EMPTY, empty)])
        html_bytes = pc.binary_length(src.cast(pa.large_binary())).cast(pa.int64())
        done = np.zeros(n, bool)
        done[todo] = True
        kept_done = done & ~np.asarray(pc.is_valid(reasons))
        self._metrics = {
            "content_types": value_counts(pc.fill_null(mime, NO_TYPE)),
            "extracted": int(done.sum()), "passed_through": int((converted & ~bad_status).sum()),
            "html_bytes_in": int(pc.sum(html_bytes.filter(pa.array(done))).as_py() or 0),
            "text_chars_out": int(pc.sum(pc.utf8_length(out_text.filter(pa.array(kept_done)))).as_py() or 0),
            # UTF-8 bytes of the extracted text: with html_bytes_in, what a page's HTML bytes come to as text
            # (a token estimate for pages never extracted scales their HTML by it, not counts HTML bytes as text)
            "text_bytes_out": int(pc.sum(pc.binary_length(out_text.filter(pa.array(kept_done)).cast(pa.large_binary())))
                                  .as_py() or 0),
            "engine_used": used,
            "worker_restarts": (self.sandbox.restarts - restarts) if self.sandbox is not None else 0,
            "worker_gave_up": (self.sandbox.given_up - given_up) if self.sandbox is not None else 0,
        }
        text = pc.if_else(pa.array(kept_done), out_text, src.cast(pa.large_string()))
        html = src.cast(pa.large_string()) if self.config.keep_html else pa.nulls(n, pa.large_string())
        return {TEXT: text, "html_bytes": html_bytes, "html": html}, reasons

    def metrics(self, table: pa.Table) -> dict:
        return self._metrics

    @classmethod
    def report_section(cls, view) -> str:
        m, draw = view.metrics, view.draw
        if not m.get("content_types"):
            return ""
        types = sorted(m["content_types"].items(), key=lambda kv: -kv[1])
        rejected = (view.stats.get("rejected") or {}).items()
        rows = [["pages extracted", m.get("extracted", 0)], ["text passed through (WET, records: text)", m.get("passed_through", 0)],
                ["HTML bytes in", m.get("html_bytes_in", 0)], ["text characters out", m.get("text_chars_out", 0)],
                ["characters out per HTML byte", round(m.get("text_chars_out", 0) / max(m.get("html_bytes_in", 0), 1), 4)],
                ["extraction workers restarted", m.get("worker_restarts", 0)]]
        rows += [[f"pages by {e}", k] for e, k in sorted((m.get("engine_used") or {}).items())]
        return draw.section("HTML extraction",
                            draw.hbars("extract: documents by content type", [(t, [k]) for t, k in types[:20]],
                                       ["documents"]),
                            draw.table(["reason", "documents"], [[r, k] for r, k in rejected]),
                            draw.table(["metric", "value"], rows))
