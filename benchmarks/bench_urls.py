"""URL canonicalisation for URL dedup: datacurate.text.urls (Arrow kernels, a batch at a
time) against w3lib's ``canonicalize_url`` (Scrapy's, one URL at a time in Python).

Input: every absolute http(s) URL quoted in the Python source of this environment's
installed packages (real URLs: documentation, specs, issue links), repeated to 200k.
One core, CPU seconds of the canonicalisation alone (best of 3). Also counts the URLs on
which the two disagree and shows a few: the rules differ on purpose (w3lib sorts the
query and re-encodes the path; see datacurate/text/urls.py).

Run:  python benchmarks/bench_urls.py      (needs the bench extra: w3lib)
"""

from __future__ import annotations

import _common  # noqa: F401  (one core, one thread)

import re
import sys
import sysconfig
import time
from pathlib import Path

import pyarrow as pa

from datacurate.text import urls

N = 200_000


def corpus() -> list[str]:
    pat = re.compile(r"https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+")
    found: dict[str, None] = {}
    for path in sorted(Path(sysconfig.get_paths()["purelib"]).rglob("*.py")):
        try:
            found.update(dict.fromkeys(pat.findall(path.read_text("utf-8", "ignore"))))
        except OSError:
            continue
    distinct = list(found)
    return (distinct * (N // len(distinct) + 1))[:N], len(distinct)


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def w3lib_form(url: str) -> str | None:
    """w3lib's form; None where it raises (it raises on an invalid port: one URL would stop a batch)."""
    from w3lib.url import canonicalize_url

    try:
        return canonicalize_url(url)
    except ValueError:
        return None


def main() -> None:
    values, distinct = corpus()
    arr = pa.array(values, pa.string())
    ours = best(lambda: urls.canonical(arr))
    theirs = best(lambda: [w3lib_form(u) for u in values], 1)
    a, b = urls.canonical(arr[:distinct]).to_pylist(), [w3lib_form(u) for u in values[:distinct]]
    differ = [(u, x, y) for u, x, y in zip(values, a, b) if x != y]
    print(f"{N:,} URLs ({distinct:,} distinct), one core, CPU seconds")
    print(f"datacurate.text.urls.canonical  {ours:7.3f} s  {N / ours:12,.0f} URLs/s")
    print(f"w3lib canonicalize_url          {theirs:7.3f} s  {N / theirs:12,.0f} URLs/s")
    print(f"ratio (w3lib / ours): {theirs / ours:.1f}x")
    print(f"w3lib raises on {b.count(None):,}; ours gives no key to {a.count(None):,}")
    print(f"forms differ on {len(differ):,} of {distinct:,} distinct URLs, e.g.:")
    for u, x, y in differ[:5]:
        print(f"  {u}\n    ours  {x}\n    w3lib {y}")


if __name__ == "__main__":
    sys.exit(main())
