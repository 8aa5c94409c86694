"""Retrain ``classifiers/quality.ftz`` from scratch ("target-like vs raw", as GPT-3 and DCLM).

    .venv/bin/python classifiers/recipes/quality.py        # ~30-45 s on one core

Positives (``hq``), edited prose: the Brown corpus (all 15 genres, minus the 30 samples
sample_data keeps as ``target/``), the English Debian man pages, the licence texts of
``/usr/share/common-licenses``.

Negatives (``lq``), raw or low-quality text:
* nlp-corpus sentences (chat, SMS, lyrics, transcripts, reviews) strung together into
  documents, as unedited text is; sentences in the formal UN / encyclopaedia register
  (build.py's ``FORMAL_RE``) are left out, since they are edited prose;
* synthetic degradations of the positive documents (made here, said so in the card):
  word-shuffled passages, keyword spam from the document's own nouns, boilerplate pages
  (navigation, cookie and sign-up notices, footers, link lists of nlp-corpus headlines),
  shouted all-caps passages. The phrase banks below are written for this recipe and
  differ from the ones build.py used for sample_data's ``web`` documents, so those remain
  an out-of-recipe check.

Length is matched: every example, of either class, is cut to a word count drawn from
one log-uniform distribution (15 ... 1,500 words), so length alone does not separate
the classes (the card reports length-only ROC-AUC and ROC-AUC within length terciles).
The held-out split is by source document: a Brown sample, a man page, a licence family
or an nlp-corpus file, together with every degraded copy made from it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sources  # noqa: E402

from datacurate.classify import (  # noqa: E402
    FastTextParams, FastTextScorer, QuantizeParams, TrainConfig, binary_metrics, heldout_mask, train_classifier,
    write_card,
)

MIN_WORDS, MAX_WORDS = 15, 1500
NAV = ["Start", "Top stories", "Our team", "Get in touch", "Deals", "My account", "Basket", "Menu",
       "Trending", "Latest", "Popular", "Community", "Downloads", "Gallery", "Podcasts", "Support",
       "Press", "Partners", "Store locator", "Gift cards", "Jobs", "Accessibility", "Imprint"]
NOTICES = [
    "We and our partners store and access information on your device.",
    "Click accept to consent to the use of tracking technologies.",
    "Manage consent preferences", "Reject non-essential", "Allow all",
    "Sign up to get the latest offers straight to your inbox!", "Enter your email address",
    "Join 10,000 subscribers", "Download our app", "Get it on Google Play",
    "Share on Pinterest", "Tweet this", "Copy link", "Comments are closed.",
    "You may also like", "Recommended for you", "Load more", "View all", "Show comments",
    "Terms and conditions apply.", "Prices include VAT.", "Free shipping on orders over $50",
]
SPAM = ["{a} {b} online shop", "order {a} today", "{a} {a} sale", "lowest price {a}", "{a} {b} {b}",
        "{a} coupon code", "{b} {a} wholesale", "{a} free trial", "best {a} 2024", "{a} {b} hot deals",
        "{a} fast delivery", "buy {a} {b}"]


def cut(words: list[str], n: int) -> str:
    return " ".join(words[:n])


def draw_len(rng: random.Random) -> int:
    return int(math.exp(rng.uniform(math.log(MIN_WORDS), math.log(MAX_WORDS))))


def windows(paras: list[str], rng: random.Random):
    """Consecutive passages of one document, each cut to a drawn word count."""
    words = " ".join(paras).split()
    i = 0
    while len(words) - i >= MIN_WORDS:
        n = draw_len(rng)
        yield words[i:i + n], n
        i += n


def degrade(words: list[str], n: int, rng: random.Random, headlines: list[str]) -> tuple[str, str]:
    kind = rng.choice(["shuffle", "spam", "boilerplate", "caps"])
    if kind == "shuffle":
        w = list(words)
        rng.shuffle(w)
        return kind, cut(w, n)
    if kind == "spam":
        vocab = sorted({re.sub(r"\W", "", w).lower() for w in words if len(w) > 4 and w.isalpha()}) or ["item"]
        kw = rng.sample(vocab, min(len(vocab), rng.randint(2, 6)))
        parts = [rng.choice(SPAM).format(a=rng.choice(kw), b=rng.choice(kw)) for _ in range(n)]
        return kind, cut((", " if rng.random() < 0.5 else " ").join(parts).split(), n)
    if kind == "boilerplate":
        lines = [" / ".join(rng.sample(NAV, rng.randint(3, 8)))]
        while sum(len(x.split()) for x in lines) < n:
            r = rng.random()
            if r < 0.4:
                lines.append(rng.choice(NOTICES))
            elif r < 0.8:
                lines.append(rng.choice(headlines))
            else:
                lines.append(" / ".join(rng.sample(NAV, rng.randint(2, 6))))
        return kind, cut("\n".join(lines).split(" "), n)
    return kind, cut([w.upper() for w in words], n) + "!!!"


def build(work: Path, seed: int) -> dict:
    rng = random.Random(f"{seed}-quality")
    headlines, pos, neg = [], [], []
    nlp = sources.nlp_sentences()
    for _, sents in nlp:
        headlines += [s for s in sents if sources.build.is_headline(s)]
    kinds: dict[str, int] = {}
    n_src = {}
    for name, docs in (("brown", sources.brown()), ("man", sources.man_pages()), ("licence", sources.licences())):
        n_src[name] = len(docs)
        for group, paras in docs:
            for k, (words, n) in enumerate(windows(paras, rng)):
                pos.append({"id": f"{group}#{k}", "text": cut(words, n)})
                if rng.random() < 0.3:  # a degraded copy, same group (same side of the split)
                    kind, text = degrade(words, n, rng, headlines)
                    kinds[kind] = kinds.get(kind, 0) + 1
                    neg.append({"id": f"{group}#deg{k}", "text": text})
    n_nlp = 0
    for group, sents in nlp:
        sents = [s for s in sents if not sources.build.FORMAL_RE.search(s) and not sources.build.is_headline(s)]
        i, k = 0, 0
        while i < len(sents):
            n, buf = draw_len(rng), []
            while i < len(sents) and sum(len(s.split()) for s in buf) < n:
                buf.append(sents[i])
                i += 1
            text = cut(("\n" if rng.random() < 0.5 else " ").join(buf).split(" "), n)
            if len(text.split()) >= MIN_WORDS:
                neg.append({"id": f"{group}#{k}", "text": text})
                n_nlp += 1
            k += 1
    sources.write_jsonl(work / "positive.jsonl", pos)
    sources.write_jsonl(work / "negative.jsonl", neg)
    return {"source_documents": n_src, "nlp_corpus_negatives": n_nlp, "synthetic_negatives": kinds}


def heldout_by_negative_kind(model: Path, work: Path, seed: int, frac: float) -> dict:
    """Held-out positives against each kind of held-out negative on its own."""
    pos = [json.loads(x) for x in (work / "positive.jsonl").open()]
    neg = [json.loads(x) for x in (work / "negative.jsonl").open()]

    def heldout(recs: list[dict]) -> list[dict]:
        groups = np.array([r["id"].split("#")[0] for r in recs], dtype=object)
        return [r for r, t in zip(recs, heldout_mask(groups, frac, seed)) if t]

    pos, neg = heldout(pos), heldout(neg)
    scorer = FastTextScorer(model, "hq")
    s_pos = np.nan_to_num(scorer.score([r["text"] for r in pos]))
    kinds = {"nlp-corpus (real informal text)": [r for r in neg if r["id"].startswith("nlp/")],
             "synthetic degradations": [r for r in neg if "#deg" in r["id"]]}
    out = {}
    for kind, recs in kinds.items():
        s_neg = np.nan_to_num(scorer.score([r["text"] for r in recs]))
        y = np.r_[np.ones(len(s_pos), bool), np.zeros(len(s_neg), bool)]
        out[kind] = binary_metrics(np.r_[s_pos, s_neg], y)
    return out


def sample_data_check(model: Path) -> dict:
    """Mean score by sample_data part: target/ (Brown samples never trained on) and the
    web-noise kinds build.py made with its own boilerplate. Not a held-out metric."""
    scorer = FastTextScorer(model, "hq")
    groups: dict[str, list[str]] = {}
    for line in (sources.ROOT / "sample_data" / "target" / "target.jsonl").open():
        groups.setdefault("target (unseen Brown)", []).append(json.loads(line)["text"])
    for line in (sources.ROOT / "sample_data" / "corpus" / "web_noise.jsonl").open():
        d = json.loads(line)
        groups.setdefault(f"web/{d['meta'].get('kind')}", []).append(d["text"])
    import zstandard

    with (sources.ROOT / "sample_data" / "corpus" / "code.jsonl.zst").open("rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    groups["code"] = [json.loads(x)["text"] for x in raw.decode().splitlines() if x.strip()]
    for line in (sources.ROOT / "sample_data" / "corpus" / "conversational.jsonl").open():
        groups.setdefault("conversational", []).append(json.loads(line)["text"])
    return {k: {"docs": len(v), "mean_score": round(float(np.nanmean(scorer.score(v))), 3),
                "share_above_0.5": round(float(np.mean(np.nan_to_num(scorer.score(v)) >= 0.5)), 3)}
            for k, v in sorted(groups.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(sources.ROOT / "classifiers" / "quality.ftz"))
    ap.add_argument("--work", default=None, help="where the labelled JSONL goes (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        made = build(work, args.seed)
        cfg = TrainConfig(
            output=args.out, name="quality", positive=[str(work / "positive.jsonl")],
            negative=[str(work / "negative.jsonl")], positive_label="hq", negative_label="lq", seed=args.seed,
            fasttext=FastTextParams(dim=32, epoch=5, lr=0.5, word_ngrams=2, min_count=3),
            quantize=QuantizeParams(cutoff=30_000),
            notes={
                "task": "target-like (edited prose) vs raw / low-quality text, as GPT-3 and DCLM",
                "positive": "Brown corpus (all genres, minus sample_data target/), English Debian man pages, "
                            "/usr/share/common-licenses; passages cut to a drawn length",
                "negative": "nlp-corpus informal sentences joined into documents (formal register left out); "
                            "plus SYNTHETIC degradations of positive passages made by this recipe: word shuffles, "
                            "keyword spam, boilerplate pages, all-caps",
                "labels": "by source, not by human judgement of each example",
                "limits": "English only; 'quality' here is 1960s edited American prose, technical and legal "
                          "text; modern web prose of good quality is not in the positives; code is in neither class",
                "recipe": "classifiers/recipes/quality.py",
            })
        card = train_classifier(cfg)
        card["data"] = json.loads(json.dumps(card["data"]).replace(str(work), "<work>"))
        card["data"]["built"] = made
        card["heldout_by_negative_kind"] = heldout_by_negative_kind(Path(args.out), work, args.seed, cfg.holdout_frac)
    card["sample_data_check"] = sample_data_check(Path(args.out))
    card["recipe_seconds"] = round(time.perf_counter() - t0, 1)
    write_card(args.out, card)
    print(json.dumps({k: card[k] for k in ("size_bytes", "data", "heldout", "heldout_by_negative_kind",
                                           "sample_data_check", "recipe_seconds")},
                     indent=1))


if __name__ == "__main__":
    main()
