"""Modern edited prose and real page boilerplate for the quality recipe, from real HTML pages.

Every function returns ``[(group, main paragraphs, boilerplate lines)]``: ``group`` names the
page (the held-out split keeps a page on one side), the main paragraphs are its edited prose
and the boilerplate lines are everything else a reader of the page sees (navigation, sidebars,
tables of contents, footers, cookie and sign-up notices, related-story headlines).

* Debian documentation packages (``apt-get download``, pinned, nothing installed), each
  page's main content by its markup (Sphinx ``[role=main]``, Publican's body less its banner
  and navigation); prose paragraphs only (``p`` / Publican's ``div.para``; code blocks and
  tables are in neither class):

  - ``debian-handbook`` 11.20220922, en-US: *The Debian Administrator's Handbook*
    (Hertzog & Mas), GPL-2.0+ or CC BY-SA 3.0;
  - ``python3.11-doc`` 3.11.2: the Python documentation, PSF License Version 2 (the docs'
    text: the Python Software Foundation's licence, as its copyright file says);
  - ``linux-doc-6.1`` 6.1.x: the Linux kernel's documentation tree (Sphinx HTML), GPL-2.

* ``benchmarks/data/article-extraction``: 46 news and blog pages of scrapinghub's
  article-extraction benchmark (MIT; the pages' text belongs to their publishers) with
  hand-checked article bodies. Only their *non-article* lines are used for training (the
  page's visible text, by resiliparse, less every line found in the reference body); the
  article bodies are evaluation data only, never positives.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree
from selectolax.lexbor import LexborHTMLParser

import sources

DEB_DOCS = {  # package -> (pinned version, html folder under the package, pages glob, max pages)
    "debian-handbook": ("11.20220922", "usr/share/doc/debian-handbook/html/en-US", "*.html", None),
    "python3.11-doc": ("3.11.2-6+deb12u9", "usr/share/doc/python3.11/html", "**/*.html", None),
    "linux-doc-6.1": ("6.1.192-3", "usr/share/doc/linux-doc-6.1/html", "**/*.html", 600),
}
SKIP_PAGE = re.compile(r"(genindex|py-modindex|search|index|contents|copyright|license|ix\d\d|changelog|whatsnew)"
                       r"[^/]*\.html$")
ARTICLE_DIR = sources.ROOT / "benchmarks" / "data" / "article-extraction"
WS = re.compile(r"\s+")


def _norm(s: str) -> str:
    return WS.sub(" ", s).strip()


def _lines(html: str) -> list[str]:
    """The visible text of a page as a reader sees it, one block per line (resiliparse)."""
    text = extract_plain_text(HTMLTree.parse(html), main_content=False, alt_texts=False, links=False,
                              list_bullets=False, noscript=False)
    return [x for x in (_norm(s) for s in text.splitlines()) if x]


def split_page(html: str) -> tuple[list[str], list[str]]:
    """(main prose paragraphs, boilerplate lines) of a documentation page, by its markup."""
    tree = LexborHTMLParser(html)
    for n in tree.css("script, style, noscript"):
        n.decompose()
    main = tree.css_first("[role=main]")
    if main is None:  # Publican (debian-handbook): the body less its banner and page navigation
        main = tree.css_first("body")
        for n in main.css("#banner, ul.docnav, #breadcrumbs, .breadcrumbs"):
            n.decompose()
        boiler_html = LexborHTMLParser(html)
        for n in boiler_html.css("div.section, div.chapter, div.preface, div.appendix, div.book, div.part"):
            n.decompose()
    else:
        boiler_html = LexborHTMLParser(html)
        boiler_html.css_first("[role=main]").decompose()
    paras = []
    for p in main.css("p, div.para"):
        if "title" in (p.attributes.get("class") or "") or len(p.css("p, div.para")) > 1:
            continue  # a heading, or a wrapper whose own paragraphs are taken (css() matches the node itself)
        parent, code = p.parent, False
        while parent is not None:  # prose only: nothing inside code, tables or navigation
            if parent.tag in ("pre", "table", "nav") or "highlight" in (parent.attributes.get("class") or ""):
                code = True
                break
            parent = parent.parent
        t = _norm(p.text(deep=True))
        if not code and t:
            paras.append(t)
    return paras, _lines(boiler_html.html or "")


def _pick(pages: list[Path], cap: int | None) -> list[Path]:
    """At most ``cap`` pages, chosen by a hash of the path (stable, spread over the tree)."""
    if cap is None or len(pages) <= cap:
        return pages
    return sorted(pages, key=lambda p: hashlib.sha1(str(p).encode()).hexdigest())[:cap]


def debian_docs(cache: Path = sources.CACHE) -> tuple[list[tuple[str, list[str], list[str]]], dict]:
    """Every usable page of the three documentation packages, and their versions / sha256."""
    build = sources.build
    out, versions = [], {}
    for pkg, (version, folder, pattern, cap) in DEB_DOCS.items():
        dest, info = build.fetch_deb(str(cache), pkg, version)
        versions[pkg] = info
        base = Path(dest) / folder
        pages = sorted(p for p in base.glob(pattern)
                       if not SKIP_PAGE.search(p.name) and "_static" not in p.parts and "_sources" not in p.parts)
        for p in _pick(pages, cap):
            paras, boiler = split_page(p.read_text(encoding="utf-8", errors="replace"))
            if sum(len(x.split()) for x in paras) >= 60:
                out.append((f"{pkg}/{p.relative_to(base)}", paras, boiler))
    return out, versions


def article_pages(directory: Path = ARTICLE_DIR) -> list[tuple[str, list[str], list[str]]]:
    """[(aeb/<id>, article paragraphs, non-article lines)] of the benchmark pages in ``directory``."""
    truth = json.loads((directory / "ground-truth.json").read_text(encoding="utf-8"))
    out = []
    for k in sorted(truth):
        html = gzip.decompress((directory / "html" / f"{k}.html.gz").read_bytes()).decode("utf-8", "replace")
        body = truth[k].get("articleBody") or ""
        ref = _norm(body)
        paras = [x for x in (_norm(s) for s in body.splitlines()) if x]
        boiler = [x for x in _lines(html) if x not in ref]
        out.append((f"aeb/{k}", paras, boiler))
    return out


def all_article_dirs(extra: str | None) -> list[Path]:
    """The shipped 46 pages, plus a clone of the whole benchmark when given (181 pages; the
    shipped ones are skipped there by id)."""
    return [ARTICLE_DIR] + ([Path(extra)] if extra else [])
