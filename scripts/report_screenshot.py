"""A small PNG of a run report's key parts, as headless Chromium draws them (README's
docs/report_sample.png):

    python scripts/report_screenshot.py OUT/report.html docs/report_sample.png

Uses the DevTools client of tests/test_report.py; the crops are the figures whose
caption starts with each of CAPTIONS (from the top of the page to the first one's end,
then each other one), stacked and reduced to a 64-colour palette.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from PIL import Image

from tests.test_report import Browser

CAPTIONS = ["documents (tokens below) each stage removed, per language", "langid: top-1 language probability",
            "toxicity: document score", "Training: eval loss per domain"]


def main(page: str, png: str, width: int = 1060) -> None:
    b = Browser()
    try:
        b.load(page)
        img = b.screenshot(width)
        rects = b.evaluate(f"{json.dumps(CAPTIONS)}.map(c => Array.from(document.querySelectorAll('figure'))"
                           ".find(f => f.querySelector('figcaption').textContent.startsWith(c)))"
                           ".map(f => f && (r => [r.top + scrollY, r.bottom + scrollY])(f.getBoundingClientRect()))")
        extra = b.evaluate("(t => t ? t.getBoundingClientRect().bottom + scrollY : 0)("
                           "Array.from(document.querySelectorAll('table')).find(t => t.rows[0].cells[0].innerText"
                           " === 'domain'))")
    finally:
        b.close()
    spans = [(0, rects[0][1])] + [tuple(r) for r in rects[1:] if r]
    if extra and rects[-1]:
        spans[-1] = (spans[-1][0], extra)  # the eval loss figure and its table below
    parts = [img[int(a) - 4:int(z) + 8] if a else img[:int(z) + 8] for a, z in spans]
    out = Image.fromarray(np.concatenate(parts).astype(np.uint8)).quantize(64)
    out.save(png, optimize=True)
    print(f"{png}: {out.size[0]}x{out.size[1]}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
