"""Build sample_data/commoncrawl/sample.warc.gz: a small real WARC (see README.md here).

Real records copied byte for byte (Common Crawl's own WARC records of one page, warcio's
example WARC), then responses written with warcio around real pages installed by apt on
Debian 12: the libffi manual and base-passwd's users-and-groups (UTF-8 HTML), apt's French
and Japanese man pages as text pages in windows-1252 and Shift_JIS (charset in the HTTP
header, in a <meta>, and nowhere), a 404, the Python docs' file.png and shared-mime-info's
specification PDF. Run from the repository root: python sample_data/commoncrawl/build.py
"""

from __future__ import annotations

import gzip
import html
import io
import re
import unicodedata
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HERE = Path(__file__).parent
TESTS = HERE.parent.parent / "tests" / "data" / "warc"
DOC = Path("/usr/share/doc")
PAGES = [DOC / "libffi8/html" / n for n in ("Introduction.html", "Using-libffi.html", "The-Basics.html",
                                            "Simple-Example.html", "Types.html", "Closure-Example.html")]
PAGES.append(DOC / "base-passwd/users-and-groups.html")


ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", ":": "\u0308", ",": "\u0327"}  # groff \('e, \(`a ...
GLYPHS = {"Fo": "«", "Fc": "»", "aq": "'", "Aq": "'", "em": "—", "en": "–", "bu": "・"}


def _glyph(m: re.Match) -> str:
    name = m.group(1)
    if name[0] in ACCENTS and name[1].isalpha():
        return unicodedata.normalize("NFC", name[1] + ACCENTS[name[0]])
    return GLYPHS.get(name, "")


def man_text(path: Path, chars: int = 6000) -> str:
    """The text lines of a man page, groff's escapes for accented letters and quotes decoded
    (the French apt pages write é as \\('e in ASCII source)."""
    raw = gzip.decompress(path.read_bytes()).decode("utf-8")
    lines = []
    for ln in raw.splitlines():
        if ln.startswith((".", "'")):
            continue
        ln = re.sub(r"\\\*?\((..)", _glyph, re.sub(r"\\f[BIRP]|\\&", "", ln))
        lines.append(ln.replace("\\-", "-").replace("\\ ", " ").replace("\\e", "\\"))
    return "\n".join(ln for ln in lines if ln.strip())[:chars]


def response(w: WARCWriter, url: str, body: bytes, ctype: str, status: str = "200 OK") -> None:
    http = StatusAndHeaders(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
    w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))


def page(title: str, text: str, meta: str | None = None) -> str:
    head = f'<meta http-equiv="Content-Type" content="text/html; charset={meta}">' if meta else ""
    return f"<html><head>{head}<title>{html.escape(title)}</title></head><body><pre>{html.escape(text)}</pre></body></html>"


def main() -> None:
    out = HERE / "sample.warc.gz"
    with open(out, "wb") as f:
        f.write((TESTS / "whirlwind.warc.gz").read_bytes())  # Common Crawl: warcinfo, request, response, metadata
        f.write((TESTS / "example.warc.gz").read_bytes())  # warcio: warcinfo x2, response, request, revisit, request
        w = WARCWriter(f, gzip=True)
        for p in PAGES:
            response(w, f"https://debian.example/{p.parent.name}/{p.name}", p.read_bytes(), "text/html; charset=utf-8")
        fr, ja = man_text(Path("/usr/share/man/fr/man8/apt-get.8.gz")), man_text(Path("/usr/share/man/ja/man8/apt-cache.8.gz"))
        for enc, label, text, name in (("cp1252", "windows-1252", fr, "fr/apt-get"), ("shift_jis", "Shift_JIS", ja, "ja/apt-cache")):
            body = lambda meta=None: page(name, text, meta).encode(enc)  # noqa: E731
            response(w, f"https://debian.example/man/{name}-header.html", body(), f"text/html; charset={label}")
            response(w, f"https://debian.example/man/{name}-meta.html", body(label), "text/html")
            response(w, f"https://debian.example/man/{name}-nowhere.html", body(), "text/html")
        response(w, "https://debian.example/missing.html", page("404 Not Found", "Not Found").encode(), "text/html",
                 "404 Not Found")
        response(w, "https://debian.example/file.png", (DOC / "python3/_static/file.png").read_bytes(), "image/png")
        response(w, "https://debian.example/shared-mime-info-spec.pdf",
                 (DOC / "shared-mime-info/shared-mime-info-spec.pdf").read_bytes(), "application/pdf")
    print(f"{out}: {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
