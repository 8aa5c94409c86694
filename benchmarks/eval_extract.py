"""Article-body quality and speed of HTML -> text engines, one core, side by side.

Pages and reference bodies: scrapinghub's article-extraction benchmark (181 real news and
blog pages, ``ground-truth.json`` ``articleBody``; MIT). 46 of them ship in
``benchmarks/data/article-extraction`` (every 4th by id); ``--pages DIR`` takes a clone of
that repository for all 181. Metric: that benchmark's own (``evaluate.py``): word 4-gram
shingles of prediction and reference, TP / FP / FN normalised per page, precision and
recall averaged over pages, F1 of the two averages.

Variants: our ``extract`` stage's engines called as the stage calls them (in process, no
time limit: the engines alone), trafilatura ``fast``, resiliparse over all text, and the
hybrid tried for the 5x target (resiliparse ``main_content`` first; pages whose output
looks like boilerplate, more than ``--hybrid-threshold`` of its characters in short lines
without final punctuation, go to trafilatura), plus its oracle bound (the best pages to
hand to trafilatura, chosen by their true F1 gain). Results: benchmarks/results/extract.json.

    python benchmarks/eval_extract.py [--pages ~/article-extraction-benchmark] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "article-extraction"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from datacurate.stages.extract import ExtractConfig  # noqa: E402
from datacurate.text.html import resiliparse_text, trafilatura_text  # noqa: E402

_TOKEN_RE = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.IGNORECASE | re.DOTALL)


def load_pages(directory: Path = DATA) -> dict[str, tuple[str, str]]:
    """id -> (html, reference body) of every page of a benchmark directory."""
    truth = json.loads((Path(directory) / "ground-truth.json").read_text(encoding="utf-8"))
    return {k: (gzip.decompress((Path(directory) / "html" / f"{k}.html.gz").read_bytes()).decode("utf-8"),
                v.get("articleBody", "")) for k, v in sorted(truth.items())}


def shingle_tp_fp_fn(true: str, pred: str, n: int = 4) -> tuple[float, float, float]:
    """scrapinghub's ``string_shingle_matching``: shingle counts, normalised to sum 1."""
    def shingles(text: str) -> Counter:
        toks = _TOKEN_RE.findall(text or "")
        return Counter(tuple(toks[i:i + n]) for i in range(max(1, len(toks) - n + 1)) if toks[i:i + n])

    t, p = shingles(true), shingles(pred)
    tp = sum(min(t[k], p[k]) for k in t.keys() | p.keys())
    fp = sum(max(0, p[k] - t[k]) for k in p)
    fn = sum(max(0, t[k] - p[k]) for k in t)
    s = tp + fp + fn
    return (tp / s, fp / s, fn / s) if s else (0.0, 0.0, 0.0)


def prf(counts: list[tuple[float, float, float]]) -> dict[str, float]:
    """scrapinghub's ``metrics_from_tp_fp_fns``: mean precision, mean recall, their F1."""
    def ratio(a, b, other):
        return 1.0 if b == other == 0 else (0.0 if a == b == 0 else a / (a + b))

    precision = statistics.mean(ratio(tp, fp, fn) for tp, fp, fn in counts if tp + fp > 0)
    recall = statistics.mean(ratio(tp, fn, fp) for tp, fp, fn in counts if tp + fn > 0)
    return {"f1": 2 * precision * recall / (precision + recall), "precision": precision, "recall": recall}


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

    return {
        "trafilatura": lambda h: trafilatura_text(h, traf),
        "trafilatura_fast": lambda h: trafilatura_text(h, dict(traf, fast=True)),
        "resiliparse": lambda h: resiliparse_text(h, resi),
        "resiliparse_all_text": lambda h: resiliparse_text(h, dict(resi, main_content=False)),
        f"hybrid_{threshold}": hybrid,
    }


def evaluate(pages: dict, names: list[str] | None = None, repeat: int = 1, threshold: float = 0.06) -> dict:
    """F1 / precision / recall and pages/s (best of ``repeat`` passes) of each variant."""
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
        counts = [shingle_tp_fp_fn(ref, texts[k]) for k, (_, ref) in pages.items()]
        per_page[name] = counts
        out[name] = {**{k: round(v, 4) for k, v in prf(counts).items()},
                     "pages_per_s": round(len(pages) / best, 1), "cpu_seconds": round(best, 3)}
    if "trafilatura" in out and "resiliparse" in out:
        out["oracle_fallback"] = oracle(per_page["resiliparse"], per_page["trafilatura"], out)
    return out


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
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--hybrid-threshold", type=float, default=0.06)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extract.json")
    args = ap.parse_args()
    import _common  # noqa: F401  (one core, one thread)

    pages = load_pages(args.pages)
    res = evaluate(pages, repeat=args.repeat, threshold=args.hybrid_threshold)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _common.emit({"pages": len(pages), "source": str(args.pages), "results": res, "loadavg": _common.loadavg(),
                  "machine": _common.machine_info(["trafilatura", "resiliparse", "lxml"])}, str(args.out))


if __name__ == "__main__":
    main()
