"""A crawl-shaped workload: N pages as Common Crawl-style WARC files, deterministically.

    python benchmarks/make_crawl.py N OUT [--seed S] [--per-file 10000] [--workers W]

or, from tests, ``make_crawl(n, out)``. Each capture is a request, a response and a metadata
record, one gzip member each, as Common Crawl writes them (the record layout, headers and
digests follow CC-MAIN-2024-22's own records in tests/data/warc/whirlwind.warc.gz); each file
starts with a warcinfo record and holds ``per_file`` captures.

Everything a page says is real text the project ships: the paragraphs come from
sample_data/corpus (the Brown corpus, Debian man pages in 13 languages, licences, the
conversational and web-noise parts; sample_data/README.md gives sources and licences), and the
page chrome from real pages in sample_data/commoncrawl/sample.warc.gz: Common Crawl's capture
of an Aragonese Wikipedia article (its 60 KB of navigation, scripts and footer around our
paragraphs) and the libffi manual's Texinfo layout, plus a plain blog layout written here whose
size comes from its links to other pages of the same site. The non-HTML payloads are the PDF
and the PNG in that sample WARC, Python standard-library files (the corpus' code part) as
text/plain, and corpus records as JSON.

The mix (fractions of captures, drawn per capture from a seeded generator):
- 9 % second captures of an earlier URL at a later date (so ~10 % of URLs are captured twice):
  half an updated page, 30 % a 404, 20 % a 301 redirect;
- 3 % exact copies (the same body under another host: mirrors);
- 3 % near copies (a few words changed, a line added, maybe another layout);
- 5 % non-HTML payloads;
- languages: ~55 % English, the rest across 12 others; ~30 % of non-English and ~10 % of English
  pages in a legacy charset (windows-125x, ISO-8859-x, KOI8, Shift_JIS, EUC-JP, GBK), declared
  in the HTTP header, in a <meta>, or nowhere.

Capture i depends only on (seed, i) and the captures before it, so the first n captures of a
larger crawl are the same pages; two runs write byte-identical files (gzip mtime 0).
At large N the smaller languages' pages reuse paragraphs (about 20 source documents each).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import html
import io
import json
import random
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "sample_data" / "corpus"
SAMPLE_WARC = ROOT / "sample_data" / "commoncrawl" / "sample.warc.gz"
CRAWL_START = datetime(2024, 5, 17, 23, 31, 22, tzinfo=timezone.utc)  # CC-MAIN-2024-22's first warcinfo
RECRAWL_START = datetime(2024, 6, 12, 9, 0, 0, tzinfo=timezone.utc)
KINDS = (("recapture", 0.09), ("exact_copy", 0.03), ("near_copy", 0.03), ("non_html", 0.05))
LEGACY = {  # language -> charsets a page in it was commonly served in
    "en": ("windows-1252", "iso-8859-1"), "de": ("windows-1252", "iso-8859-15"), "fr": ("windows-1252", "iso-8859-1"),
    "es": ("windows-1252", "iso-8859-1"), "it": ("windows-1252",), "nl": ("windows-1252",), "pt": ("iso-8859-1",),
    "pl": ("iso-8859-2", "windows-1250"), "cs": ("windows-1250", "iso-8859-2"), "ru": ("windows-1251", "koi8-r"),
    "uk": ("windows-1251", "koi8-u"), "ja": ("shift_jis", "euc-jp"), "zh": ("gbk", "gb18030"),
}
SITES = ("news", "blog", "docs", "forum", "wiki", "journal", "notes", "archive")


# ---------------------------------------------------------------- sources (read once per process)

def _warc_payloads(path: Path) -> dict[str, bytes]:
    """URL -> HTTP body of each response record in a (gzip-member) WARC, parsed by hand."""
    data, out, pos = gzip.decompress(path.read_bytes()), {}, 0
    while pos < len(data):
        end = data.index(b"\r\n\r\n", pos)
        head = dict(ln.split(": ", 1) for ln in data[pos:end].decode().split("\r\n")[1:])
        block = data[end + 4:end + 4 + int(head["Content-Length"])]
        pos = end + 4 + len(block) + 4
        if head.get("WARC-Type") == "response":
            out[head["WARC-Target-URI"]] = block.split(b"\r\n\r\n", 1)[1]
    return out


def _lines(name: str):
    p = CORPUS / name
    raw = p.read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    elif name.endswith(".zst"):
        import zstandard
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
    return [json.loads(ln) for ln in raw.decode("utf-8").splitlines() if ln.strip()]


class Sources:
    def __init__(self) -> None:
        pages = _warc_payloads(SAMPLE_WARC)
        wiki = pages["https://an.wikipedia.org/wiki/Escopete"].decode("utf-8")
        start = wiki.index('<div class="mw-content-ltr mw-parser-output"')
        start = wiki.index(">", start) + 1
        self.wiki = (wiki[:start], "</div>" + wiki[wiki.index('<div class="printfooter"'):])
        ffi = pages["https://debian.example/html/Introduction.html"].decode("utf-8")
        nav = ffi[ffi.index('<div class="header">'):ffi.index("<hr>") + 4]  # Texinfo's Next / Previous / Up bar
        self.manual = (ffi[:ffi.index("<hr>") + 4], "\n<hr>\n" + nav.replace("<hr>", "") + "</div>\n</body>\n</html>\n")
        self.pdf = pages["https://debian.example/shared-mime-info-spec.pdf"]
        self.png = pages["https://debian.example/file.png"]
        self.blocks: dict[str, list[list[str]]] = {}  # lang -> documents, each a list of blocks
        self.code: list[str] = []
        self.records: list[dict] = []
        for name in sorted(p.name for p in CORPUS.iterdir()):
            for r in _lines(name):
                if r["domain"] == "code":
                    self.code.append(r["text"])
                    continue
                sep = "\n\n" if "\n\n" in r["text"] else "\n"
                blocks = [b.strip() for b in r["text"].split(sep) if b.strip()]
                self.blocks.setdefault(r["meta"].get("lang", "en"), []).append(blocks)
                if len(self.records) < 200:
                    self.records.append({"id": r.get("id"), "domain": r["domain"], "text": r["text"][:2000]})
        self.langs = sorted(k for k, v in self.blocks.items() if len(v) >= 10 and k in LEGACY)


_SOURCES: Sources | None = None


def sources() -> Sources:
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = Sources()
    return _SOURCES


# ---------------------------------------------------------------- the plan: what capture i is

def plan(n: int, seed: int = 0) -> list[dict]:
    """One small dict per capture: kind, url, date, language, layout, charset ... (no bodies)."""
    src, caps, originals, once = sources(), [], [], []
    for i in range(n):
        rng = random.Random(f"{seed}-plan-{i}")
        x, kind = rng.random(), "page"
        for k, p in KINDS:
            if x < p:
                kind = k
                break
            x -= p
        if kind != "page" and kind != "non_html" and not originals or kind == "recapture" and not once:
            kind = "page"
        date = CRAWL_START + timedelta(seconds=int(i * 13 + rng.random() * 600))
        c = {"i": i, "kind": kind, "date": date, "seed": f"{seed}-{i}", "fetch_ms": rng.randint(40, 2500)}
        if kind in ("recapture", "exact_copy", "near_copy"):
            pool = once if kind == "recapture" and once else originals
            k = rng.randrange(len(pool))
            j = pool[k]
            if pool is once:  # each URL is captured at most twice
                once[k] = once[-1]
                once.pop()
            c["of"] = j
            base = caps[j]
            c.update(lang=base["lang"], charset=base["charset"], declare=base["declare"], layout=base["layout"])
            if kind == "recapture":
                c["url"] = base["url"]
                c["date"] = RECRAWL_START + timedelta(seconds=int(i * 13 + rng.random() * 600))
                c["status"] = rng.choices((200, 404, 301), (0.5, 0.3, 0.2))[0]
            else:
                c["url"] = _url(rng, i, c["layout"])
                if kind == "near_copy" and rng.random() < 0.5:
                    c["layout"] = rng.choice(("wiki", "blog", "manual"))
        elif kind == "non_html":
            c.update(url=_url(rng, i, "file"), payload=rng.choices(("pdf", "png", "text", "json"), (0.3, 0.3, 0.25, 0.15))[0])
        else:
            en = rng.random() < 0.55
            lang = "en" if en else rng.choice([lg for lg in src.langs if lg != "en"])
            legacy = rng.random() < (0.1 if en else 0.3)
            c.update(lang=lang, layout=rng.choices(("wiki", "blog", "manual"), (0.4, 0.5, 0.1))[0],
                     charset=rng.choice(LEGACY[lang]) if legacy else "utf-8",
                     declare=rng.choices(("header", "meta", "nowhere"), (0.5, 0.35, 0.15))[0] if legacy else "header")
            c["url"] = _url(rng, i, c["layout"])
            originals.append(i)
            once.append(i)
        c.setdefault("status", 200)
        caps.append(c)
    return caps


def _url(rng: random.Random, i: int, layout: str) -> str:
    site = rng.choice(SITES)
    host = f"{'www.' if rng.random() < 0.5 else ''}{site}{rng.randrange(max(1, i // 40 + 1))}.example"
    ext = {"file": "", "manual": ".html"}.get(layout, "")
    return f"{'https' if rng.random() < 0.8 else 'http'}://{host}/{rng.randrange(2000, 2025)}/{site}-{i}{ext}"


# ---------------------------------------------------------------- bodies

def _text_blocks(c: dict, caps: list[dict]) -> tuple[str, list[str]]:
    """Title and paragraphs of an HTML capture: windows of 1-3 corpus documents of its language."""
    src = sources()
    if c["kind"] in ("exact_copy", "recapture", "near_copy"):
        title, blocks = _text_blocks(caps[c["of"]], caps)
        rng = random.Random(c["seed"] + "-edit")
        if c["kind"] == "near_copy" or (c["kind"] == "recapture" and c["status"] == 200):
            blocks = list(blocks)
            words = [w for b in blocks for w in b.split()]
            for _ in range(max(1, len(words) // 120)):  # ~1 word in 120: 5-gram Jaccard stays near 0.9
                k = rng.randrange(len(blocks))
                ws = blocks[k].split()
                if ws:
                    ws[rng.randrange(len(ws))] = rng.choice(words)
                    blocks[k] = " ".join(ws)
            blocks.append(f"{c['date']:%Y-%m-%d}")
        return title, blocks
    rng = random.Random(c["seed"] + "-text")
    docs = src.blocks[c["lang"]]
    blocks: list[str] = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        d = docs[rng.randrange(len(docs))]
        a = rng.randrange(len(d))
        blocks += d[a:a + rng.randint(4, 24)]
    return blocks[0][:80], blocks


def _html(c: dict, caps: list[dict]) -> bytes:
    src, rng = sources(), random.Random(c["seed"] + "-html")
    if c["status"] == 404:
        title, blocks = "404 Not Found", ["The page you requested could not be found."]
    else:
        title, blocks = _text_blocks(c, caps)
    body = "\n".join(f"<h2>{html.escape(b)}</h2>" if len(b) < 60 and b[-1:] not in ".!?:;" else
                     "<p>" + "<br>\n".join(html.escape(ln) for ln in b.splitlines()) + "</p>" for b in blocks)
    meta = f'<meta http-equiv="Content-Type" content="text/html; charset={c["charset"]}">\n' if c["declare"] == "meta" else ""
    t = html.escape(title)
    if c["layout"] == "wiki":
        head, tail = src.wiki
        page = head.replace("Escopete", t).replace('lang="an"', f'lang="{c["lang"]}"') + body + tail.replace("Escopete", t)
        page = page.replace('<meta charset="UTF-8">', meta or ('<meta charset="UTF-8">' if c["charset"] == "utf-8" else ""))
    elif c["layout"] == "manual":
        head, tail = src.manual
        head = head.replace('<meta http-equiv="Content-Type" content="text/html; charset=utf-8">\n', meta)
        page = head.replace('lang="en"', f'lang="{c["lang"]}"') + f"\n<h2>{t}</h2>\n" + body + tail
    else:
        host = c["url"].split("/")[2]
        links = "\n".join(f'<li><a href="/{rng.randrange(2000, 2025)}/{rng.choice(SITES)}-{rng.randrange(10**6)}">'
                          f'{html.escape(rng.choice(src.blocks["en"][rng.randrange(50)])[:40])}</a></li>'
                          for _ in range(int(rng.lognormvariate(5.7, 0.7))))
        page = (f'<!DOCTYPE html>\n<html lang="{c["lang"]}"><head>{meta}<title>{t} | {host}</title>\n'
                f'<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js" defer></script></head>\n'
                f'<body><header><nav><a href="/">Home</a> <a href="/about">About</a> <a href="/contact">Contact</a></nav>'
                f'</header>\n<main><article><h1>{t}</h1>\n{body}\n</article></main>\n'
                f'<aside><h3>More from {host}</h3><ul>\n{links}\n</ul></aside>\n'
                f'<footer><p>&copy; {c["date"].year} {host}. All rights reserved.</p>'
                f'<p>This site uses cookies. <a href="/privacy">Privacy policy</a></p></footer></body></html>\n')
    if c["status"] == 301:
        page = '<html><head><title>301 Moved Permanently</title></head><body><h1>Moved Permanently</h1></body></html>\n'
    return page.encode(c["charset"], errors="xmlcharrefreplace")


def _payload(c: dict, caps: list[dict]) -> tuple[bytes, str]:
    src, rng = sources(), random.Random(c["seed"] + "-payload")
    kind = c.get("payload")
    if kind == "pdf":
        return src.pdf, "application/pdf"
    if kind == "png":
        return src.png, "image/png"
    if kind == "text":
        return src.code[rng.randrange(len(src.code))].encode(), "text/plain; charset=utf-8"
    if kind == "json":
        return json.dumps(src.records[rng.randrange(len(src.records))], ensure_ascii=False).encode(), "application/json"
    body = _html(caps[c["of"]] if c["kind"] == "exact_copy" else c, caps)  # a mirror: the same bytes
    ctype = f"text/html; charset={c['charset']}" if c["declare"] == "header" else "text/html"
    return body, ctype


# ---------------------------------------------------------------- WARC records

def _digest(b: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(b).digest()).decode()


def _record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    headers = headers + [("Content-Length", str(len(block))), ("WARC-Block-Digest", _digest(block))]
    raw = ("WARC/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode() + block + b"\r\n\r\n"
    return gzip.compress(raw, compresslevel=6, mtime=0)  # one gzip member per record, as CC writes


def _capture(c: dict, caps: list[dict], info_id: str) -> tuple[bytes, dict]:
    rng = random.Random(c["seed"] + "-ids")
    rid = lambda: f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"  # noqa: E731
    url, date = c["url"], c["date"].strftime("%Y-%m-%dT%H:%M:%SZ")
    host, path = url.split("/", 3)[2], "/" + url.split("/", 3)[3]
    ip = f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    req = (f"GET {path} HTTP/1.1\r\nUser-Agent: CCBot/2.0 (https://commoncrawl.org/faq/)\r\n"
           "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n"
           f"Accept-Encoding: br,gzip\r\nHost: {host}\r\nConnection: Keep-Alive\r\n\r\n").encode()
    body, ctype = _payload(c, caps)
    status = {200: "200 OK", 404: "404 Not Found", 301: "301 Moved Permanently"}[c["status"]]
    http = [f"HTTP/1.1 {status}", f"Date: {c['date']:%a, %d %b %Y %H:%M:%S GMT}", "Server: nginx", f"Content-Type: {ctype}"]
    if c["status"] == 301:
        http.append(f"Location: {url.replace('http://', 'https://', 1) if url.startswith('http:') else url + '/'}")
    http += ["X-Crawler-Content-Encoding: gzip", f"Content-Length: {len(body)}", "Connection: close"]
    resp = ("\r\n".join(http) + "\r\n\r\n").encode() + body
    req_id, resp_id = rid(), rid()
    common = [("WARC-Date", date), ("WARC-Warcinfo-ID", info_id)]
    out = _record([("WARC-Type", "request"), ("WARC-Date", date), ("WARC-Record-ID", req_id),
                   ("Content-Type", "application/http; msgtype=request"), ("WARC-Warcinfo-ID", info_id),
                   ("WARC-IP-Address", ip), ("WARC-Target-URI", url), ("WARC-Payload-Digest", _digest(b""))], req)
    ident = ctype.split(";")[0]
    out += _record([("WARC-Type", "response"), ("WARC-Date", date), ("WARC-Record-ID", resp_id),
                    ("Content-Type", "application/http; msgtype=response"), ("WARC-Warcinfo-ID", info_id),
                    ("WARC-Concurrent-To", req_id), ("WARC-IP-Address", ip), ("WARC-Target-URI", url),
                    ("WARC-Payload-Digest", _digest(body)), ("WARC-Identified-Payload-Type", ident)], resp)
    meta = f"fetchTimeMs: {c['fetch_ms']}\r\n"
    if ident == "text/html":
        meta += f"charset-detected: {c['charset'].upper()}\r\n"
    meta = meta.encode()
    out += _record([("WARC-Type", "metadata")] + common[:1] + [("WARC-Record-ID", rid()),
                   ("Content-Type", "application/warc-fields")] + common[1:] +
                   [("WARC-Concurrent-To", resp_id), ("WARC-Target-URI", url), ("WARC-Payload-Digest", _digest(meta))], meta)
    return out, {"bytes": len(body), "html": ident == "text/html"}


def _write_file(args: tuple) -> dict:
    out, k, lo, hi, seed = args
    caps = plan(hi, seed)  # capture i depends only on those before it: each process plans its own prefix
    first = caps[lo]["date"]
    name = f"CC-MAIN-{first:%Y%m%d%H%M%S}-{k:05d}.warc.gz"
    rng = random.Random(f"warcinfo-{name}")
    info_id = f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"
    info = ("isPartOf: CC-MAIN-2024-22\r\npublisher: Common Crawl\r\ndescription: crawl-shaped workload "
            "(datacurate benchmarks/make_crawl.py)\r\nsoftware: datacurate make_crawl\r\nformat: WARC File Format 1.0\r\n").encode()
    sizes = []
    with open(Path(out) / name, "wb") as f:
        f.write(_record([("WARC-Type", "warcinfo"), ("WARC-Date", first.strftime("%Y-%m-%dT%H:%M:%SZ")),
                         ("WARC-Record-ID", info_id), ("Content-Type", "application/warc-fields"),
                         ("WARC-Filename", name)], info))
        for c in caps[lo:hi]:
            raw, m = _capture(c, caps, info_id)
            f.write(raw)
            if m["html"] and c["status"] == 200:
                sizes.append(m["bytes"])
    return {"file": name, "html_sizes": sizes}


def make_crawl(n: int, out: str | Path, seed: int = 0, per_file: int = 10_000, workers: int = 1) -> dict:
    """Write n captures under out (created) and out/crawl.json (what the files hold); return that summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    caps = plan(n, seed)
    jobs = [(str(out), k, lo, min(n, lo + per_file), seed) for k, lo in enumerate(range(0, n, per_file))]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(workers) as ex:
            done = list(ex.map(_write_file, jobs))
    else:
        done = [_write_file(j) for j in jobs]
    sizes = sorted(s for d in done for s in d["html_sizes"])
    q = lambda p: sizes[min(len(sizes) - 1, int(p * len(sizes)))] if sizes else 0  # noqa: E731
    urls = Counter(c["url"] for c in caps)
    summary = {
        "captures": n, "seed": seed, "files": [d["file"] for d in done],
        "kinds": dict(sorted(Counter(c["kind"] for c in caps).items())),
        "urls": len(urls), "urls_captured_twice": sum(1 for v in urls.values() if v > 1),
        "recapture_status": dict(sorted(Counter(str(c["status"]) for c in caps if c["kind"] == "recapture").items())),
        "languages": dict(sorted(Counter(c["lang"] for c in caps if "lang" in c).items())),
        "charsets": dict(sorted(Counter(c["charset"] for c in caps if "charset" in c).items())),
        "non_html": dict(sorted(Counter(c["payload"] for c in caps if "payload" in c).items())),
        "html_bytes_quantiles": {"p10": q(0.1), "p25": q(0.25), "p50": q(0.5), "p75": q(0.75), "p90": q(0.9)},
    }
    (out / "crawl.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int, help="captures (pages) to write")
    ap.add_argument("out", help="output folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-file", type=int, default=10_000, help="captures per WARC file")
    ap.add_argument("--workers", type=int, default=1, help="processes writing files in parallel")
    a = ap.parse_args()
    s = make_crawl(a.n, a.out, a.seed, a.per_file, a.workers)
    print(json.dumps({k: v for k, v in s.items() if k != "files"}, indent=1))


if __name__ == "__main__":
    main()
