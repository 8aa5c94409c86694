"""Corpora for the ablation tests: half clean prose (the sample's Brown news texts), half
junk of the kinds rule-based filters remove, generated here with a fixed seed."""

from __future__ import annotations

import random
import string
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "sample_data" / "corpus"
BOILERPLATE = ["Home | About us | Contact | Privacy policy | Terms of use", "This site uses cookies. Accept all cookies.",
               "Please enable JavaScript to view this page.", "Copyright 2024 All rights reserved.",
               "Subscribe to our newsletter", "Click here to read more", "Share on Facebook Share on Twitter",
               "Login Register Forgot password?", "Add to cart Buy now Free shipping"]


def prose(domain: str = "news") -> list[dict]:
    return [orjson.loads(line) for line in (CORPUS / f"{domain}.jsonl").read_bytes().splitlines() if line.strip()]


def junk_doc(rng: random.Random, words: list[str], i: int) -> str:
    """One junk document of ~4 KB: repeated lines, symbol soup, or boilerplate."""
    kind = i % 3
    if kind == 0:  # one line repeated (Gopher's duplicate-line rules)
        line = " ".join(rng.choice(words) for _ in range(rng.randint(6, 12)))
        return "\n".join([line] * rng.randint(30, 60))
    if kind == 1:  # symbol soup (Gopher's symbol / alphabetic-word ratios)
        pool = string.punctuation + string.digits + "#@$%&*~^|"
        return "\n".join("".join(rng.choice(pool) for _ in range(rng.randint(20, 80)))
                         + " " + rng.choice(words) for _ in range(rng.randint(40, 80)))
    return "\n".join(rng.choice(BOILERPLATE) for _ in range(rng.randint(60, 120)))  # boilerplate lines


def write_corpus(path, seed: int = 0, domain: str = "news", n_prose: int | None = None) -> int:
    """The first ``n_prose`` documents of ``domain`` plus as many bytes of junk, shuffled;
    returns the document count."""
    rng = random.Random(seed)
    docs = prose(domain)[:n_prose]
    words = [w for d in docs[:20] for w in d["text"].split()]
    budget = sum(len(d["text"]) for d in docs)
    junk, size = [], 0
    while size < budget:
        text = junk_doc(rng, words, len(junk))
        junk.append({"id": f"junk-{len(junk):05d}", "text": text, "domain": "junk"})
        size += len(text)
    out = docs + junk
    rng.shuffle(out)
    with open(path, "wb") as f:
        for d in out:
            f.write(orjson.dumps({k: d[k] for k in ("id", "text", "domain")}) + b"\n")
    return len(out)
