"""HTML -> main text, by engine (the ``extract`` stage's kernels; no Arrow, no config).

* ``trafilatura`` (Barbaresi 2021; FineWeb's choice): main-content rules over lxml, with
  readability / jusText fallbacks unless ``fast``. Never its ``deduplicate``: a cache
  that makes one page's text depend on the pages extracted before it.
* ``resiliparse`` (Bevendorff et al. 2018; DCLM's choice): ``extract_plain_text`` over
  the lexbor DOM, ``main_content`` heuristics; ~10x trafilatura's pages/s, lower precision.

Every engine returns the text ("" when nothing was found); ``extract`` returns it with the
engine that produced it.
"""

from __future__ import annotations

from typing import Any


def trafilatura_text(html: str, options: dict[str, Any]) -> str:
    import trafilatura

    return trafilatura.extract(html, output_format="txt", deduplicate=False, with_metadata=False, **options) or ""


def resiliparse_text(html: str, options: dict[str, Any]) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html), **options)


def native_text(html: str, options: dict[str, Any]) -> str:
    from datacurate.text.native import native_text as extract_native

    return extract_native(html, options)


ENGINES = {"trafilatura": trafilatura_text, "resiliparse": resiliparse_text, "native": native_text}


def extract(html: str, engine: str, options: dict[str, Any]) -> tuple[str, str]:
    """(text, engine used) of one page; ``options``: that engine's keyword arguments."""
    return ENGINES[engine](html, options), engine
