"""Scoring an extraction engine against human references: the metrics of the two public
article-extraction benchmarks the project measures on, and their fixed held-back split.

* scrapinghub's article-extraction-benchmark (``evaluate.py``, MIT): word 4-gram shingles of
  prediction and reference, TP / FP / FN normalised per page, precision and recall averaged
  over pages, F1 of the two averages (:func:`shingle_tp_fp_fn`, :func:`prf`);
* trafilatura's evaluation (``tests/eval_common.count_item``, Apache-2.0): snippets a human
  marked as main text (``with``) or boilerplate (``without``), each found or not by a
  whitespace-normalised substring match, counts summed over pages (:func:`snippet_counts`,
  :func:`snippet_prf`).

Used by ``benchmarks/eval_extract.py`` (the full sets) and by the tests (the shipped pages and
the long-tail set), so both score alike. Written here from the benchmarks' descriptions.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import statistics
from collections import Counter
from pathlib import Path

_TOKEN_RE = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.IGNORECASE | re.DOTALL)
_WS = re.compile(r"\s+")


def load_pages(directory: str | Path) -> dict[str, tuple[str, str]]:
    """id -> (html, reference body) of every page of a scrapinghub-layout directory
    (``ground-truth.json`` and ``html/<id>.html.gz``)."""
    directory = Path(directory)
    truth = json.loads((directory / "ground-truth.json").read_text(encoding="utf-8"))
    return {k: (gzip.decompress((directory / "html" / f"{k}.html.gz").read_bytes()).decode("utf-8"),
                v.get("articleBody", "")) for k, v in sorted(truth.items())}


def held_back(set_name: str, page_id: str) -> bool:
    """The held-back quarter of a set: fixed by the page's id, never by the engines' output."""
    return int(hashlib.sha1(f"{set_name}/{page_id}".encode()).hexdigest(), 16) % 4 == 0


def norm(text: str) -> str:
    return _WS.sub(" ", text or "").strip()


def snippet_counts(item: dict, pred: str) -> tuple[int, int, int, int]:
    """trafilatura's ``count_item``: (tp, fp, fn, tn) of one page's snippets."""
    text = norm(pred)
    tp = sum(norm(w) in text for w in item["with"])
    fp = sum(norm(w) in text for w in item["without"])
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def snippet_prf(counts: list[tuple[int, int, int, int]]) -> dict[str, float]:
    tp, fp, fn, _ = (sum(c[i] for c in counts) for i in range(4))
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"f1": 2 * p * r / (p + r) if p + r else 0.0, "precision": p, "recall": r}


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
