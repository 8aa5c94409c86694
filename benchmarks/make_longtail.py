"""Build the long-tail extraction set (``tests/data/longtail/``): real public pages of the
shapes a web crawl holds beyond news articles, each with an expected text, from public
repositories' test pages and Debian's documentation packages.

Each page gets ``with`` snippets (text that must be in the main text) and ``without``
snippets (page chrome that must not), scored as trafilatura's ``count_item`` scores its own
evaluation pages (:mod:`datacurate.text.extract_eval`):

* adbar/trafilatura ``tests/`` (Apache-2.0; commit e90b0ef5): pages of its evaluation
  whose markup has the shape (Tailwind and Bootstrap classes, WordPress blocks, forums,
  wikis, shops, code, addresses, lyrics, cookie banners, Chinese), with their **human**
  snippets from ``evaldata.json``;
* mozilla/readability ``test/test-pages`` (Apache-2.0; commit ab4027a): RTL, CJK, WordPress,
  Wikipedia (one with a declarative shadow root), docs (Mercurial's Sphinx pages, Google's SRE
  book), tables, <br> and hidden-node pages; ``with``: paragraphs of readability's
  ``expected.html`` (first, a third, two thirds, last: their first words), ``without``: text
  of the source's ``nav`` / ``footer`` elements and paragraphs (hidden ones, asides) that the
  expected article does not hold;
* Debian ``python3.11-doc`` (Sphinx; PSF licence) and ``mkdocs-doc`` (MkDocs with its
  Bootstrap theme; BSD-2-Clause): ``with`` from the pages' ``role=main`` paragraphs,
  ``without`` from their sidebars' and navbars' links.

The pages' text belongs to its publishers; as in those repositories, it is used here for
evaluation only.

    python benchmarks/make_longtail.py --trafilatura-tests DIR --readability DIR --debian-doc DIR
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "longtail"

TRAFILATURA = {  # shape -> files of trafilatura's tests/eval or tests/cache
    "tailwind": ["autohaus.de-skode.html", "kochbar.de.schneiden.html", "theintercept.com-Gaza.html"],
    "bootstrap": ["it-for-kids.org.variables.html", "anarc.at.cdpath.html", "haenselblatt.com.chinese.html"],
    "wordpress": ["die-partei.net.luebeck.html", "archiv.krimiblog.de.2895.html", "helge.at.mahu.html",
                  "handwerk-magazin.de-Angriffe.html"],
    "forum": ["foren.myoos.de.html", "d43f330cbaf74e92b9aec85e937cb904.html"],
    "wiki": ["en.wikipedia.org.tsne.html", "stardewvalleywiki.com.penny.html", "wiki.piratenpartei.de.stammtisch.html"],
    "shop": ["de.happycoffee.org.sidamo.html", "uniqz.de.katzendecke.html", "parallels.com.desktop.html"],
    "code": ["pythonspeed.com.docker.html", "docs.docker.com.install.html", "hackernoon.com.scrape.html"],
    "poem": ["mix1.de-clio.html"],
    "address": ["schlosswirtjuval.it.geschichte.html", "diakonie.de-Lebensgefühl.html"],
    "cookie": ["hausinfo.ch-kondenswasser.html", "majkaswelt.com.fashion.html"],
    "cjk": ["archive.org.he.xinhuanet.com.25340717.html"],
}
READABILITY = {
    "rtl": ["rtl-1", "rtl-2", "rtl-3", "rtl-4"], "cjk": ["qq", "pixnet", "hukumusume"], "wordpress": ["wordpress"],
    "wiki": ["wikipedia-4"], "docs": ["mercurial", "google-sre-book-1"], "table": ["keep-tabular-data"],
    "poem": ["replace-brs"], "hidden": ["hidden-nodes", "visibility-hidden", "remove-aria-hidden"],
    "code": ["lwn-1"], "social": ["social-buttons"],
}
DEBIAN = {  # shape -> (package path under usr/share/doc, main selector, chrome selector)
    "sphinx": [("python3.11/html/tutorial/controlflow.html", "div[role=main]", "div.sphinxsidebar a, div.related a"),
               ("python3.11/html/library/json.html", "div[role=main]", "div.sphinxsidebar a, div.related a")],
    "mkdocs": [("mkdocs/html/user-guide/writing-your-docs.html", "div[role=main]", ".navbar a, .bs-sidebar a"),
               ("mkdocs/html/getting-started.html", "div[role=main]", ".navbar a, .bs-sidebar a")],
}
SNIPPET_WORDS = 12  # a snippet: a paragraph's first words (whole words; CJK: its first characters)
SNIPPET_CHARS_NO_SPACE = 30
MIN_PARAGRAPH_CHARS = 40
MIN_CHARS_NO_SPACE = 15  # a line of Chinese or Japanese: ~15 characters say as much as 40 of English


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _snippet(text: str) -> str:
    words = text.split(" ")
    return " ".join(words[:SNIPPET_WORDS]) if len(words) > 3 else text[:SNIPPET_CHARS_NO_SPACE]


def _spread(items: list, k: int = 4) -> list:
    if len(items) <= k:
        return items
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def paragraphs(html: str, selector: str = "body") -> list[str]:
    tree = LexborHTMLParser(html)
    root = tree.css_first(selector) or tree.body
    for n in root.css("script, style"):
        n.decompose()
    # each paragraph's longest text node: a snippet never spans a tag (a <br>, a link), where
    # expected outputs and extractors put white space differently (CJK text has none to lose)
    return [t for t in (_norm(max((x.text_content or "" for x in p.traverse(include_text=True) if x.tag == "-text"),
                                  key=len, default="")) for p in root.css("p"))
            if len(t) >= MIN_PARAGRAPH_CHARS or (len(t) >= MIN_CHARS_NO_SPACE and " " not in t)]


def chrome(html: str, selector: str, main_text: str, k: int = 3) -> list[str]:
    tree = LexborHTMLParser(html)
    out = []
    for n in tree.css(selector):
        t = _norm(n.text())
        if len(t) >= 12 and t not in main_text and t not in out:
            out.append(t)
    return _spread(out, k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trafilatura-tests", type=Path, required=True)
    ap.add_argument("--readability", type=Path, required=True, help="mozilla/readability's test/test-pages")
    ap.add_argument("--debian-doc", type=Path, required=True, help="usr/share/doc of python3.11-doc and mkdocs-doc")
    args = ap.parse_args()
    (OUT / "pages").mkdir(parents=True, exist_ok=True)
    entries = []

    def add(pid: str, shape: str, html: str, source: dict, with_: list[str], without: list[str]) -> None:
        pid = re.sub(r"[^A-Za-z0-9._-]", "_", pid)  # plain file names
        (OUT / "pages" / f"{pid}.html.gz").write_bytes(gzip.compress(html.encode("utf-8"), 9, mtime=0))
        entries.append({"id": pid, "shape": shape, "source": source, "with": with_, "without": without})

    evaldata = json.loads((args.trafilatura_tests / "evaldata.json").read_text(encoding="utf-8"))
    by_file = {item["file"]: (url, item) for url, item in evaldata.items()}
    from datacurate.text.charset import decode

    for shape, files in TRAFILATURA.items():
        for f in files:
            url, item = by_file[f]
            path = next(p for p in (args.trafilatura_tests / "cache" / f, args.trafilatura_tests / "eval" / f)
                        if p.is_file())
            add(f"trafilatura-{Path(f).stem}", shape, decode(path.read_bytes(), None).text,
                {"repo": "adbar/trafilatura", "path": str(path.relative_to(args.trafilatura_tests.parent)),
                 "licence": "Apache-2.0 (repository); page text: its publisher", "url": url},
                item["with"], item["without"])
    for shape, names in READABILITY.items():
        for name in names:
            d = args.readability / name
            html = (d / "source.html").read_text(encoding="utf-8")
            expected_html = (d / "expected.html").read_text(encoding="utf-8")
            expected = paragraphs(expected_html)
            main_text = _norm(LexborHTMLParser(expected_html).body.text())
            dropped = [t for t in paragraphs(html) if _snippet(t) not in main_text]  # hidden, asides, ...
            add(f"readability-{name}", shape, html,
                {"repo": "mozilla/readability", "path": f"test/test-pages/{name}/source.html",
                 "licence": "Apache-2.0 (repository); page text: its publisher"},
                [_snippet(t) for t in _spread(expected)],
                chrome(html, "nav, footer", main_text) + [_snippet(t) for t in _spread(dropped, 3)])
    for shape, pages in DEBIAN.items():
        for rel, main_sel, chrome_sel in pages:
            html = (args.debian_doc / rel).read_text(encoding="utf-8")
            main_paras = paragraphs(html, main_sel)
            main_text = _norm(LexborHTMLParser(html).css_first(main_sel).text())
            pkg = "python3.11-doc" if rel.startswith("python") else "mkdocs-doc"
            add(f"debian-{pkg}-{Path(rel).parent.name}-{Path(rel).stem}", shape, html,
                {"package": f"Debian bookworm {pkg}", "path": f"/usr/share/doc/{rel}",
                 "licence": "PSF-2.0" if pkg.startswith("python") else "BSD-2-Clause"},
                [_snippet(t) for t in _spread(main_paras)], chrome(html, chrome_sel, main_text))
    (OUT / "longtail.json").write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(len(entries), "pages;", sum((OUT / "pages" / f"{e['id']}.html.gz").stat().st_size for e in entries), "bytes")


if __name__ == "__main__":
    main()
