"""Main-content quality and speed of HTML -> text engines, one core, side by side, on two sets.

* ``aeb``: scrapinghub's article-extraction benchmark (181 real news and blog pages,
  ``ground-truth.json`` ``articleBody``; MIT). 46 of them ship in
  ``benchmarks/data/article-extraction`` (every 4th by id); ``--pages DIR`` takes a clone of
  that repository for all 181. Metric: that benchmark's own (``evaluate.py``): word 4-gram
  shingles of prediction and reference, TP / FP / FN normalised per page, precision and
  recall averaged over pages, F1 of the two averages.
* ``trafilatura``: trafilatura's own evaluation pages (``tests/evaldata.json`` with
  ``tests/eval`` and ``tests/cache`` of https://github.com/adbar/trafilatura, Apache-2.0; ~900
  real pages in many languages, each with 1-6 human-chosen snippets that must appear in
  the main text and 1-6 that must not); ``--trafilatura-tests DIR`` is a clone's ``tests/``.
  Metric: that repository's ``eval_common.count_item`` (whitespace-normalised substring
  match; TP / FP / FN / TN summed over pages). trafilatura was tuned on these pages: a
  bias in its favour.

* ``longtail``: the long-tail set shipped in ``tests/data/longtail`` (49 real pages of CSS
  frameworks, CMS blocks, docs generators, forums, wikis, shops, code, poems and addresses,
  CJK and RTL; its README gives sources and licences), scored as ``trafilatura``'s set; no
  split (it was built while the ``native`` rules for those shapes were written).

Every page of the first two sets has a fixed split, ``held`` (a quarter, by a SHA-1 of set and page id) or
``dev``: the ``native`` engine's rules were written looking at ``dev`` pages only; ``held``
was scored once, at the end (``--split``).

Variants: our ``extract`` stage's engines called as the stage calls them (in process, no
time limit: the engines alone), trafilatura ``fast``, resiliparse over all text, and the
hybrid tried for the 5x target (resiliparse ``main_content`` first; pages whose output
looks like boilerplate, more than ``--hybrid-threshold`` of its characters in short lines
without final punctuation, go to trafilatura), plus its oracle bound on ``aeb`` (the best
pages to hand to trafilatura, chosen by their true F1 gain). Speed: pages per CPU-second
(``time.process_time``, best of ``--repeat``). Results: benchmarks/results/extract.json and
the frontier plot benchmarks/results/extract_frontier.svg.

    python benchmarks/eval_extract.py [--pages ~/article-extraction-benchmark] \
        [--trafilatura-tests ~/trafilatura/tests] [--split dev|held|all] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "article-extraction"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from datacurate.stages.extract import ExtractConfig  # noqa: E402
from datacurate.text import charset, extract_eval  # noqa: E402
from datacurate.text.extract_eval import held_back, prf, shingle_tp_fp_fn, snippet_counts, snippet_prf  # noqa: E402,F401
from datacurate.text.html import native_text, resiliparse_text, trafilatura_text  # noqa: E402

def load_pages(directory: Path = DATA) -> dict[str, tuple[str, str]]:
    """id -> (html, reference body) of every page of a benchmark directory."""
    return extract_eval.load_pages(directory)


def load_longtail(directory: Path) -> dict[str, tuple[str, dict]]:
    """id -> (html, snippets) of the long-tail set."""
    entries = json.loads((Path(directory) / "longtail.json").read_text(encoding="utf-8"))
    return {e["id"]: (gzip.decompress((Path(directory) / "pages" / f"{e['id']}.html.gz").read_bytes()).decode("utf-8"), e)
            for e in entries}


def decode_page(payload: bytes) -> str:
    """A page's bytes as our WARC reader decodes an HTML payload with no HTTP charset."""
    return charset.decode(payload, None).text


def load_trafilatura_eval(tests: Path) -> dict[str, tuple[str, dict]]:
    """url -> (html, annotation) of trafilatura's evaluation pages whose file is present (its
    ``eval_common.resolve``: ``cache/`` first, then ``eval/``); bytes decoded as our WARC
    reader decodes a page with no HTTP charset (the page's meta, else detection)."""
    data = json.loads((Path(tests) / "evaldata.json").read_text(encoding="utf-8"))
    out = {}
    for url, item in sorted(data.items()):
        for sub in ("cache", "eval"):
            path = Path(tests) / sub / item["file"]
            if path.is_file():
                out[url] = (decode_page(path.read_bytes()), item)
                break
    return out


def boilerplate_share(text: str) -> float:
    """Characters in short lines (< 6 words) without final punctuation, as a share of all."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    total = sum(map(len, lines))
    short = sum(len(ln) for ln in lines if len(ln.split()) < 6 and not ln.endswith((".", "!", "?", '"', "”")))
    return short / total if total else 1.0


def variants(threshold: float) -> dict:
    cfg = ExtractConfig()
    traf, resi = cfg.engine_options(), ExtractConfig(engine="resiliparse").engine_options()

    def hybrid(html: str) -> str:
        text = resiliparse_text(html, resi)
        return text if boilerplate_share(text) <= threshold else trafilatura_text(html, traf)

    nat = ExtractConfig(engine="native").engine_options()
    return {
        "native": lambda h: native_text(h, nat),
        "trafilatura": lambda h: trafilatura_text(h, traf),
        "trafilatura_fast": lambda h: trafilatura_text(h, dict(traf, fast=True)),
        "resiliparse": lambda h: resiliparse_text(h, resi),
        "resiliparse_all_text": lambda h: resiliparse_text(h, dict(resi, main_content=False)),
        f"hybrid_{threshold}": hybrid,
    }


def evaluate(pages: dict, names: list[str] | None = None, repeat: int = 1, threshold: float = 0.06,
             kind: str = "aeb") -> dict:
    """F1 / precision / recall and pages per CPU-second (best of ``repeat`` passes) of each
    variant; ``kind``: ``aeb`` pages carry a reference body, ``trafilatura`` pages snippets."""
    score = ((lambda ref, t: shingle_tp_fp_fn(ref, t)), prf) if kind == "aeb" else (snippet_counts, snippet_prf)
    out, per_page = {}, {}
    for name, fn in variants(threshold).items():
        if names and name not in names:
            continue
        fn(next(iter(pages.values()))[0])  # imports, first-call set-up
        best, texts = float("inf"), {}
        for _ in range(repeat):
            t0 = time.process_time()
            texts = {k: fn(html) for k, (html, _) in pages.items()}
            best = min(best, time.process_time() - t0)
        counts = [score[0](ref, texts[k]) for k, (_, ref) in pages.items()]
        per_page[name] = counts
        out[name] = {**{k: round(v, 4) for k, v in score[1](counts).items()},
                     "pages_per_s": round(len(pages) / best, 1), "cpu_seconds": round(best, 3)}
    if kind == "aeb" and "trafilatura" in out and "resiliparse" in out:
        out["oracle_fallback"] = oracle(per_page["resiliparse"], per_page["trafilatura"], out)
    return out


def frontier_svg(results: dict, path: Path) -> None:
    """F1 against pages per CPU-second (log scale) of every variant on every set, as an SVG."""
    import math

    sets = list(results)
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    w, h, pad = 760, 440, 60
    pts = [(s, n, r["pages_per_s"], r["f1"]) for s in sets for n, r in results[s].items() if "f1" in r]
    xs = [math.log10(p[2]) for p in pts]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs))
    y0, y1 = math.floor(min(p[3] for p in pts) * 20) / 20, 1.0
    X = lambda v: pad + (math.log10(v) - x0) / (x1 - x0) * (w - 2 * pad)  # noqa: E731
    Y = lambda v: h - pad - (v - y0) / (y1 - y0) * (h - 2 * pad)  # noqa: E731
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
          f'<rect width="{w}" height="{h}" fill="white"/>',
          f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="14">extraction frontier: F1 vs pages per CPU-second '
          '(one core)</text>',
          f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
          f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
          f'<text x="{w / 2}" y="{h - 15}" text-anchor="middle">pages per CPU-second (log)</text>',
          f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">F1</text>']
    for e in range(x0, x1 + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if x0 <= math.log10(v) <= x1:
                el.append(f'<line x1="{X(v):.1f}" y1="{h - pad}" x2="{X(v):.1f}" y2="{h - pad + 5}" stroke="black"/>'
                          f'<text x="{X(v):.1f}" y="{h - pad + 18}" text-anchor="middle">{v:g}</text>')
    k = 0
    while y0 + k * 0.05 <= y1 + 1e-9:
        v = y0 + k * 0.05
        el.append(f'<line x1="{pad - 5}" y1="{Y(v):.1f}" x2="{w - pad}" y2="{Y(v):.1f}" stroke="#ddd"/>'
                  f'<text x="{pad - 8}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        k += 1
    for i, s in enumerate(sets):
        c = colours[i % len(colours)]
        el.append(f'<text x="{w - pad - 120}" y="{h - pad - 30 - 16 * (len(sets) - i)}" fill="{c}">&#9679; {s}</text>')
        trafs = results[s].get("trafilatura")
        if trafs:  # the target: trafilatura's F1 - 0.01 at 5x its pages/s
            tx, ty = X(5 * trafs["pages_per_s"]), Y(trafs["f1"] - 0.01)
            el.append(f'<rect x="{tx:.1f}" y="{Y(1.0):.1f}" width="{max(w - pad - tx, 0):.1f}" '
                      f'height="{ty - Y(1.0):.1f}" fill="none" stroke="{c}" stroke-dasharray="4"/>')
        for _, n, pps, f1 in [p for p in pts if p[0] == s]:
            el.append(f'<circle cx="{X(pps):.1f}" cy="{Y(f1):.1f}" r="4" fill="{c}"/>'
                      f'<text x="{X(pps) + 6:.1f}" y="{Y(f1) - 4:.1f}" fill="{c}">{n}</text>')
    el.append(f'<text x="{pad + 5}" y="{h - pad - 8}" fill="#555">dashed boxes: the target region (F1 >= '
              "trafilatura's - 0.01, >= 5x its pages/s)</text></svg>")
    path.write_text("\n".join(el), encoding="utf-8")


def oracle(fast: list, slow: list, res: dict) -> dict:
    """The best a resiliparse-first hybrid could do handing a share of pages to trafilatura:
    F1 with the pages of largest true gain sent, and the pages/s that share allows."""
    def f1(c):
        p, r = c[0] / (c[0] + c[1]) if c[0] + c[1] else 0, c[0] / (c[0] + c[2]) if c[0] + c[2] else 0
        return 2 * p * r / (p + r) if p + r else 0

    order = sorted(range(len(fast)), key=lambda i: f1(fast[i]) - f1(slow[i]))
    t_fast, t_slow = 1 / res["resiliparse"]["pages_per_s"], 1 / res["trafilatura"]["pages_per_s"]
    rows = {}
    for share in (0.1, 0.15, 0.2, 0.3):
        sent = set(order[:round(share * len(fast))])
        rows[str(share)] = {"f1": round(prf([slow[i] if i in sent else fast[i] for i in range(len(fast))])["f1"], 4),
                            "speedup_vs_trafilatura": round(t_slow / (t_fast + share * t_slow), 2)}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=Path, default=DATA, help="a benchmark directory (html/, ground-truth.json)")
    ap.add_argument("--trafilatura-tests", type=Path, help="trafilatura's tests/ (evaldata.json, eval/, cache/)")
    ap.add_argument("--longtail", type=Path, default=ROOT / "tests" / "data" / "longtail",
                    help="the long-tail set (longtail.json, pages/); '' to leave it out")
    ap.add_argument("--split", choices=["dev", "held", "all"], default="all")
    ap.add_argument("--variants", nargs="*", help="only these variants (default: all)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--hybrid-threshold", type=float, default=0.06)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extract.json")
    args = ap.parse_args()
    import _common  # noqa: F401  (one core, one thread)

    sets = {"aeb": ("aeb", load_pages(args.pages))}
    if args.trafilatura_tests:
        sets["trafilatura"] = ("trafilatura", load_trafilatura_eval(args.trafilatura_tests))
    splits = ["dev", "held"] if args.split == "all" else [args.split]
    res, sizes = {}, {}
    if str(args.longtail) not in ("", "."):
        pages = load_longtail(args.longtail)
        sizes["longtail"] = len(pages)
        res["longtail"] = evaluate(pages, args.variants, args.repeat, args.hybrid_threshold, "trafilatura")
    for name, (kind, pages) in sets.items():
        for split in splits:
            part = {k: v for k, v in pages.items() if held_back(name, k) == (split == "held")}
            if part:
                sizes[f"{name}/{split}"] = len(part)
                res[f"{name}/{split}"] = evaluate(part, args.variants, args.repeat, args.hybrid_threshold, kind)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frontier_svg({k: {n: r for n, r in v.items() if n not in ("oracle_fallback", "resiliparse_all_text")}
                  for k, v in res.items()},
                 args.out.with_name(args.out.stem + "_frontier.svg"))
    _common.emit({"pages": sizes, "sources": {k: str(v) for k, v in (("aeb", args.pages),
                                                                      ("trafilatura", args.trafilatura_tests)) if v},
                  "results": res, "loadavg": _common.loadavg(),
                  "machine": _common.machine_info(["trafilatura", "resiliparse", "selectolax", "lxml"])}, str(args.out))


if __name__ == "__main__":
    main()
