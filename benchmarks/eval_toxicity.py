"""Document-level toxicity rules on real benign pages and real toxic text: false-positive rate
and recall of C4's one-word rule, the shipped fastText classifier with document thresholds
(Dolma-style), and combinations. Results: ``benchmarks/results/toxicity.json``.

    python benchmarks/eval_toxicity.py [--pages ~/article-extraction-benchmark]

C4 (Raffel et al. 2020) dropped every page with one word of the LDNOOBW list; Dolma
(Soldaini et al. 2024) scored text with fastText classifiers trained on Jigsaw comments
and removed documents by a threshold on those scores; Dodge et al. (2021) found C4's rule
removed text about and by minorities, medical and LGBTQ pages among them.

Benign documents (real, mainstream, none a training example of the toxicity model):

* ``news``: the article bodies of scrapinghub's article-extraction benchmark pages (MIT;
  2019-2020 news and blogs): the 46 shipped in ``benchmarks/data``, all 181 with ``--pages``;
* ``docs``: the main text of the Debian Administrator's Handbook, Python 3.11 and Linux 6.1
  documentation pages (Debian packages; :mod:`classifiers/recipes/web_sources`);
* ``books_1961``: the Brown corpus samples sample_data keeps out of training (``target/``:
  learned and fiction) and the toxicity model's held-out Brown samples with no hand-labelled
  toxic sentence;
* ``art``: ``tests/data/text/mona_lisa.txt``, a page about the painting written for this
  repository (it names the nude variants, as the encyclopaedia article does).

Toxic documents: the toxicity model's held-out nlp-corpus files (never trained on), every
sentence hand-labelled twice (``classifiers/recipes/toxicity_heldout_labels.json``), cut into
windows of 20 consecutive sentences (a comment thread's worth); a window counts as toxic by
its number of explicit-offence sentences (>= 1, >= 2, >= 3), and windows with none as benign
informal text. ``dense``: the explicit sentences alone, 10 to a document.

No medical pages could be obtained offline licence-clear; that gap stays in the results.
alt-profanity-check's wheel (1.9.1) ships only its model and vectorizer, no text to test on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "classifiers" / "recipes")]

import sources  # noqa: E402
import web_sources  # noqa: E402

from datacurate.classify import heldout_mask  # noqa: E402
from datacurate.stages.toxicity import Toxicity  # noqa: E402

MONA_LISA = ROOT / "tests" / "data" / "text" / "mona_lisa.txt"
WINDOW = 20


def benign_sets(pages: str | None) -> dict[str, list[str]]:
    shipped = {g for g, _, _ in web_sources.article_pages()}
    news = [" ".join(p) for _, p, _ in web_sources.article_pages()]
    if pages:
        news += [" ".join(p) for g, p, _ in web_sources.article_pages(Path(pages)) if g not in shipped]
    docs = ["\n".join(p) for _, p, _ in web_sources.debian_docs()[0]]
    held = json.loads((ROOT / "classifiers" / "recipes" / "toxicity_heldout_labels.json").read_text())
    toxic_docs = {u.split("#")[0] for u in held["toxic"]}
    brown = sources.brown()
    test = heldout_mask(np.array([g for g, _ in brown], dtype=object), 0.2, 0)
    books = ["\n".join(p) for (g, p), t in zip(brown, test) if t and g not in toxic_docs]
    books += [json.loads(x)["text"] for x in (ROOT / "sample_data" / "target" / "target.jsonl").open()]
    return {"news": news, "docs": docs, "books_1961": books, "art": [MONA_LISA.read_text(encoding="utf-8")]}


def toxic_sets() -> tuple[dict[str, list[str]], list[str]]:
    """Windows of held-out nlp-corpus sentences by their count of explicit-offence sentences."""
    held = json.loads((ROOT / "classifiers" / "recipes" / "toxicity_heldout_labels.json").read_text())
    explicit = set(held["toxic"]) - set(held["implicit"])
    nlp = sources.nlp_sentences()
    test = heldout_mask(np.array([g for g, _ in nlp], dtype=object), 0.2, 0)
    by_count: dict[str, list[str]] = {">=1": [], ">=2": [], ">=3": []}
    benign, dense, buf = [], [], []
    for (g, sents), t in zip(nlp, test):
        if not t:
            continue
        for i in range(0, len(sents) - WINDOW + 1, WINDOW):
            ids = [f"{g}#{j}" for j in range(i, i + WINDOW)]
            k = sum(u in explicit for u in ids)
            text = "\n".join(sents[i:i + WINDOW])
            for name, lo in ((">=1", 1), (">=2", 2), (">=3", 3)):
                if k >= lo:
                    by_count[name].append(text)
            if k == 0 and not any(u in held["toxic"] for u in ids):
                benign.append(text)
        buf += [s for j, s in enumerate(sents) if f"{g}#{j}" in explicit]
    dense = ["\n".join(buf[i:i + 10]) for i in range(0, len(buf) - 9, 10)]
    return {**{f"windows {k} explicit": v for k, v in by_count.items()}, "dense (explicit only)": dense}, benign


def signals(texts: list[str]) -> dict[str, np.ndarray]:
    """Per document: LDNOOBW hits, and the classifier's mean / share / max sentence score."""
    t = pa.table({"text": pa.array(texts, pa.string())})
    out = {"hits": Toxicity(classifier={"enabled": False})(t).column("toxicity_wordlist_hits").to_numpy()}
    for agg in ("mean", "share", "max"):
        stage = Toxicity(classifier={"aggregate": agg, "max_score": 1.0}, wordlist={"enabled": False})
        out[agg] = stage(t).column("toxicity_score").to_numpy(zero_copy_only=False)
    return out


RULES = {  # name -> flagged(signals)
    "C4: one LDNOOBW word (wordlist.min_matches 1)": lambda s: s["hits"] >= 1,
    "wordlist.min_matches 2": lambda s: s["hits"] >= 2,
    "wordlist.min_matches 3": lambda s: s["hits"] >= 3,
    "previous default: classifier mean > 0.1 OR one word": lambda s: (s["mean"] > 0.1) | (s["hits"] >= 1),
    "classifier mean > 0.1": lambda s: s["mean"] > 0.1,
    "classifier max > 0.9 (any sentence at the card threshold)": lambda s: s["max"] > 0.9,
    "classifier share > 0.02": lambda s: s["share"] > 0.02,
    "classifier share > 0.03": lambda s: s["share"] > 0.03,
    "classifier share > 0.05": lambda s: s["share"] > 0.05,
    "classifier share > 0.1": lambda s: s["share"] > 0.1,
    "classifier share > 0.2": lambda s: s["share"] > 0.2,
    "previous sample recipe: share > 0.1 OR 2 words": lambda s: (s["share"] > 0.1) | (s["hits"] >= 2),
    "classifier share > 0.05 OR 3 words": lambda s: (s["share"] > 0.05) | (s["hits"] >= 3),
    "classifier share > 0.02 OR 3 words": lambda s: (s["share"] > 0.02) | (s["hits"] >= 3),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=None, help="a clone of scrapinghub/article-extraction-benchmark (181 pages)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "toxicity.json"))
    args = ap.parse_args()
    t0 = time.process_time()
    benign = benign_sets(args.pages)
    toxic, informal = toxic_sets()
    benign["informal (nlp-corpus windows, no toxic sentence)"] = informal
    sig = {k: signals(v) for k, v in {**benign, **toxic}.items()}
    res = {"how": __doc__.split("\n\n")[0], "machine": "shared 2-core machine; CPU seconds below",
           "sets": {k: len(v) for k, v in {**benign, **toxic}.items()}, "rules": {}}
    for name, rule in RULES.items():
        row = {"false_positive_rate": {k: round(float(rule(sig[k]).mean()), 4) for k in benign},
               "recall": {k: round(float(rule(sig[k]).mean()), 4) for k in toxic}}
        mainstream = np.concatenate([rule(sig[k]) for k in ("news", "docs", "books_1961", "art")])
        row["false_positive_rate_mainstream_pages"] = round(float(mainstream.mean()), 4)
        row["mona_lisa_rejected"] = bool(rule(sig["art"])[0])
        res["rules"][name] = row
    res["cpu_seconds"] = round(time.process_time() - t0, 1)
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    for name, row in res["rules"].items():
        print(f"{name:60s} FPR mainstream {row['false_positive_rate_mainstream_pages']:.3f}  "
              f"news {row['false_positive_rate']['news']:.3f}  recall "
              + " ".join(f"{v:.2f}" for v in row["recall"].values()) + f"  mona lisa {row['mona_lisa_rejected']}")


if __name__ == "__main__":
    main()
