"""Charset detection for web pages that declare none: resiliparse's ``detect_encoding``
against charset-normalizer, on real text (Debian's translated man pages, installed by
apt: French, German, Spanish as windows-1252; Japanese as Shift_JIS and EUC-JP; Russian
as windows-1251 and KOI8-R), cut into page-sized snippets wrapped in HTML with no
charset anywhere. A detection is right when the page decodes to its original text
(labels read as browsers read them: datacurate.text.charset.codec).

    python benchmarks/bench_charset.py [--pages-per-case 40]
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import time
from pathlib import Path

from datacurate.text.charset import codec

CASES = {"fr": ["cp1252"], "de": ["cp1252"], "es": ["cp1252"], "ja": ["shift_jis", "euc_jp"], "ru": ["cp1251", "koi8_r"]}


def man_text(lang: str) -> list[str]:
    out = []
    for p in sorted(Path(f"/usr/share/man/{lang}").rglob("*.gz")):
        raw = gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
        lines = [re.sub(r"\\f[BIRP]|\\-|\\\(..|\\&|\\e", "", ln) for ln in raw.splitlines() if not ln.startswith((".", "'"))]
        text = " ".join(ln for ln in lines if ln.strip())
        if sum(ord(c) > 127 for c in text) > 20:
            out.append(text)
    return out


def pages(n: int, seed: int = 0):
    rng = random.Random(seed)
    for lang, encodings in CASES.items():
        texts = man_text(lang)
        for enc in encodings:
            for _ in range(n):
                t = rng.choice(texts)
                size = rng.choice([300, 1000, 3000])
                a = rng.randrange(max(len(t) - size, 1))
                body = t[a:a + size]
                html = f"<html><head><title>{body[:40]}</title></head><body><p>{body}</p></body></html>"
                try:
                    yield lang, enc, html, html.encode(enc)
                except UnicodeEncodeError:
                    continue


def resiliparse(b: bytes) -> str | None:
    from resiliparse.parse.encoding import detect_encoding

    return detect_encoding(b)


def charset_normalizer(b: bytes) -> str | None:
    from charset_normalizer import from_bytes

    best = from_bytes(b).best()
    return best.encoding if best else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages-per-case", type=int, default=40)
    args = ap.parse_args()
    data = list(pages(args.pages_per_case))
    print(f"{len(data)} pages")
    for name, fn in (("resiliparse.detect_encoding", resiliparse), ("charset-normalizer", charset_normalizer)):
        right, by, t0 = 0, {}, time.perf_counter()
        for lang, enc, html, b in data:
            label = codec(fn(b))
            ok = False
            if label:
                try:
                    ok = b.decode(label) == html
                except (UnicodeDecodeError, LookupError):
                    pass
            right += ok
            k = f"{lang}/{enc}"
            by.setdefault(k, [0, 0])
            by[k][0] += ok
            by[k][1] += 1
        dt = time.perf_counter() - t0
        print(f"{name:<30} right {right}/{len(data)} ({right / len(data):.1%})  {len(data) / dt:,.0f} pages/s  " +
              "  ".join(f"{k} {a}/{n}" for k, (a, n) in by.items()))


if __name__ == "__main__":
    main()
