"""The shipped quality model against the previous one, on the pages the issue named: modern
news and magazine articles, their boilerplate, a homepage. Results: ``benchmarks/results/quality.json``.

    python benchmarks/eval_quality.py [--pages ~/article-extraction-benchmark] [--previous COMMIT]

Sets (each page scored as the stage scores a document: its first 2,000 characters, at each
model's own default threshold: the card's ``decision_threshold`` for the shipped model, 0.5
for the previous one, whose stage default it was):

* ``aeb``: scrapinghub's article-extraction benchmark (MIT; 2019-2020 news and blog pages,
  hand-checked article bodies). The 46 shipped in ``benchmarks/data`` are split as the recipe
  splits them (``train_side``: their non-article lines were training negatives; ``heldout``:
  nothing of theirs was trained on); ``--pages`` adds the other 135 (``unseen``), none of
  them ever seen by the recipe. Per page: the reference article body, the page's non-article
  lines, and what the pipeline's ``extract`` stage (trafilatura, its defaults) takes from the
  raw HTML: the text the ``quality`` stage really scores in a web pipeline.
* ``iana_homepage``: IANA's homepage as captured in ``tests/data/warc`` (warcio's test WARC),
  extracted by the same stage.
* ``--trafilatura-tests DIR`` (a clone's ``tests/``; Apache-2.0, real pages of many kinds):
  its evaluation pages whose extracted text langid calls English (0.65, as the pipelines),
  grouped by URL: ``homepage`` (path ``/`` or empty), ``about`` (``about`` / ``team`` /
  ``contact`` / ``impressum`` in the path), ``other`` (articles, blog posts, product and
  forum pages). Kept share only: these pages carry no article / boilerplate labels.

Not covered: researchers' homepages and Common Crawl's about page were not available offline.
The articles are never training examples of either model.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "classifiers" / "recipes")]

import web_sources  # noqa: E402

from datacurate.classify import heldout_mask, roc_auc  # noqa: E402
from datacurate.models.fasttext_model import FastTextScorer, load_card  # noqa: E402
from datacurate.stages.extract import ExtractConfig  # noqa: E402
from datacurate.text.html import extract  # noqa: E402

MODEL = ROOT / "classifiers" / "quality.ftz"
PREVIOUS = "3af9c9d"  # main before this model: the Brown / man pages / licences model (sha256 2a14760d...)


def previous_model(commit: str, tmp: Path) -> Path:
    for suffix in (".ftz", ".json"):
        blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:classifiers/quality{suffix}"],
                              capture_output=True, check=True).stdout
        (tmp / f"quality{suffix}").write_bytes(blob)
    return tmp / "quality.ftz"


def extracted(html: str) -> str:
    cfg = ExtractConfig()
    return extract(html, cfg.engine, cfg.engine_options())[0]


def page_sets(pages_dir: str | None) -> dict[str, dict[str, list[str]]]:
    import gzip

    shipped = web_sources.article_pages()
    held = heldout_mask(np.array([g for g, _, _ in shipped], dtype=object), 0.2, 0)
    html_of = {}
    for d in web_sources.all_article_dirs(pages_dir):
        for p in (d / "html").glob("*.html.gz"):
            html_of.setdefault(f"aeb/{p.name[:-8]}", gzip.decompress(p.read_bytes()).decode("utf-8", "replace"))
    groups = {"aeb train_side": [x for x, h in zip(shipped, held) if not h],
              "aeb heldout": [x for x, h in zip(shipped, held) if h]}
    if pages_dir:
        names = {g for g, _, _ in shipped}
        groups["aeb unseen"] = [x for x in web_sources.article_pages(Path(pages_dir)) if x[0] not in names]
    out = {}
    for name, pages in groups.items():
        out[name] = {"article": [" ".join(p) for _, p, _ in pages], "boilerplate": ["\n".join(b) for _, _, b in pages],
                     "extracted": [extracted(html_of[g]) for g, _, _ in pages]}
    from warcio.archiveiterator import ArchiveIterator

    with open(ROOT / "tests" / "data" / "warc" / "example-iana.org-chunked.warc", "rb") as f:
        html = next(r.content_stream().read().decode("utf-8", "replace") for r in ArchiveIterator(f)
                    if r.rec_type == "response")
    out["iana_homepage"] = {"extracted": [extracted(html)]}
    return out


def trafilatura_sets(tests: str) -> dict[str, dict[str, list[str]]]:
    import re
    from urllib.parse import urlsplit

    import pyarrow as pa

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from eval_extract import load_trafilatura_eval
    from datacurate.stages.langid import LangId

    pages = load_trafilatura_eval(Path(tests))
    urls = sorted(pages)
    texts = [extracted(pages[u][0]) for u in urls]
    lang = LangId()(pa.table({"text": pa.array(texts, pa.string())}))
    en = [(u, t) for u, t, la, sc in zip(urls, texts, lang.column("lang").to_pylist(), lang.column("lang_score").to_pylist())
          if la == "en" and (sc or 0) >= 0.65 and t.strip()]
    out: dict[str, dict[str, list[str]]] = {}
    for u, t in en:
        path = urlsplit(u).path.strip("/")
        kind = ("homepage" if not path or re.fullmatch(r"(index\.\w+|en|home)", path) else
                "about" if re.search(r"about|team|contact|impressum|who-we-are", path, re.I) else "other")
        out.setdefault(f"trafilatura {kind}", {"extracted": []})["extracted"].append(t)
    return out


def score_sets(model: Path, threshold: float, sets: dict) -> dict:
    scorer = FastTextScorer(model, "hq", 2_000)
    res = {"threshold": threshold}
    for name, parts in sets.items():
        s = {k: np.nan_to_num(scorer.score(v)) for k, v in parts.items()}
        row = {f"{k}_kept": round(float((v >= threshold).mean()), 4) for k, v in s.items()}
        row.update({f"{k}_median": round(float(np.median(v)), 4) for k, v in s.items()})
        row["pages"] = len(next(iter(parts.values())))
        if "article" in s:
            y = np.r_[np.ones(len(s["article"]), bool), np.zeros(len(s["boilerplate"]), bool)]
            row["roc_auc_article_vs_boilerplate"] = round(roc_auc(np.r_[s["article"], s["boilerplate"]], y), 4)
        res[name] = row
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=None, help="a clone of scrapinghub/article-extraction-benchmark (181 pages)")
    ap.add_argument("--previous", default=PREVIOUS, help="git commit holding the previous classifiers/quality.ftz")
    ap.add_argument("--trafilatura-tests", default=None, help="a clone's tests/ (adbar/trafilatura)")
    ap.add_argument("--work", default=None, help="the quality recipe's --work folder: also score both models on "
                    "its held-out split (the previous model trained on some of those Brown / man pages)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quality.json"))
    args = ap.parse_args()
    t0 = time.process_time()
    sets = page_sets(args.pages)
    if args.trafilatura_tests:
        sets.update(trafilatura_sets(args.trafilatura_tests))
    card = load_card(MODEL)
    res = {"how": __doc__.split("\n\n")[0], "machine": "shared 2-core machine",
           "shipped": {"sha256": card["sha256"], **score_sets(MODEL, card["decision_threshold"]["threshold"], sets)}}
    with tempfile.TemporaryDirectory() as tmp:
        old = previous_model(args.previous, Path(tmp))
        res["previous"] = {"commit": args.previous, "sha256": load_card(old)["sha256"], **score_sets(old, 0.5, sets)}
        if args.work:
            import quality as recipe
            from datacurate.classify import evaluate

            texts, y = recipe.heldout_texts(Path(args.work), 0, 0.2)
            for which, m in (("shipped", MODEL), ("previous", old)):
                r = evaluate(str(m), texts, y, "hq", res[which]["threshold"])
                kinds = recipe.heldout_by_negative_kind(Path(m), Path(args.work), 0, 0.2, res[which]["threshold"])
                res[which]["recipe_heldout"] = {"roc_auc": r["roc_auc"], "f1": r["f1"], "n": r["n"],
                                                "roc_auc_by_negative_kind": {k: v["roc_auc"] for k, v in kinds.items()}}
    res["cpu_seconds"] = round(time.process_time() - t0, 1)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    for which in ("shipped", "previous"):
        r = res[which]
        print(which, f"threshold {r['threshold']}")
        for name in sets:
            print(f"  {name:16s}", {k: v for k, v in r[name].items() if k.endswith("_kept") or k.startswith("roc")})
        if "recipe_heldout" in r:
            print("  recipe held-out", r["recipe_heldout"])


if __name__ == "__main__":
    main()
