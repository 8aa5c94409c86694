"""Recall and false positives of the ``decontaminate`` stage on a labelled set built from
real text (not the unit tests' cases).

* **Benchmark**: multiple-choice records made from the docstrings of Python's own
  standard library (``ast`` over every module outside ``test/``): the question is a
  docstring's first paragraph, the options are its summary line (often shorter than n:
  matched whole) and three other function names. Records whose question has fewer than
  ``min_words`` words, and docstrings seen before, are skipped.
* **Documents**: paragraphs of Brown prose from ``sample_data/corpus`` (news, learned,
  fiction). Every paragraph is a *clean* document, and copies of some get a plant at a
  random sentence boundary, of one of three kinds:
  - ``ngram``: a run of n..2n words of a record's question (n = 13), written with another
    case and with punctuation moved, added or dropped at word ends (line breaks for
    spaces, commas, quotes, a trailing full stop) - the normalised words do not change;
  - ``option``: a whole option of min_words..n-1 words (matched whole), same perturbation;
  - ``near_miss``: n-1 words of a question of at least n+1 words, not from its first word
    (where its summary option, matched whole, starts),
    between two guard words unlike the question's words around them: must not be flagged.
  Words are counted as the stage counts them: a token that is all punctuation (``->``,
  ``>>>``) is no word, so a span of 13 such tokens may be fewer than 13 words.
  Expected decisions come from the construction: an ``ngram`` or ``option`` plant is found
  when the document is rejected ``decontaminate/<benchmark>`` and the record it names
  holds the planted words (docstrings repeat across the library, so another record with
  the same words counts); a clean or near-miss document is a false positive if flagged.

Also timed: the index build, and the stage's document side (hash every n-gram of a batch,
look them up) per core, and the index's size.

Run: ``python benchmarks/eval_decontaminate.py [--docs 600] [--out results/decontaminate.json]``
(one core); ``tests/stages/test_eval_decontaminate.py`` runs a small version and asserts
that every planted overlap is found and no clean or near-miss document is flagged.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import random
import re
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from datacurate.stages.decontaminate import DecontaminateConfig, build_index, decisions  # noqa: E402

CORPUS = ROOT / "sample_data" / "corpus"
N, MIN_WORDS = 13, 8


def docstring_records(limit: int, rng: random.Random) -> list[dict]:
    """Multiple-choice records from standard-library docstrings (sorted modules, seeded choice)."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    seen, found, names = set(), [], {}
    for path in sorted(lib.rglob("*.py")):
        if {"test", "tests", "idlelib", "site-packages"} & set(path.relative_to(lib).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            para = " ".join(doc.split("\n\n")[0].split())
            if len(para.split()) < MIN_WORDS or para in seen:
                continue
            seen.add(para)
            name = f"{path.stem}.{node.name}"
            names[name] = names.get(name, 0) + 1  # methods of one name in several classes
            found.append((name if names[name] == 1 else f"{name}#{names[name]}", para))
    rng.shuffle(found)
    records = []
    for qid, para in found[:limit]:
        summary = re.split(r"(?<=\.)\s", para, maxsplit=1)[0]
        names = [rng.choice(found)[0] for _ in range(3)]
        records.append({"id": qid, "question": para, "choices": [summary] + names, "answer": "A"})
    return records


def prose_paragraphs(rng: random.Random, n: int) -> list[str]:
    paras = []
    for name in ("news.jsonl", "learned.jsonl", "fiction.jsonl.gz"):
        raw = (CORPUS / name).read_bytes()
        raw = gzip.decompress(raw) if name.endswith(".gz") else raw
        for line in raw.splitlines():
            paras += [p for p in json.loads(line)["text"].split("\n\n") if 400 <= len(p) <= 3000]
    rng.shuffle(paras)
    return paras[:n]


def perturb(words: list[str], rng: random.Random) -> str:
    """Other case, punctuation at word ends, line breaks: the same normalised words."""
    case = rng.choice([str.upper, str.lower, str.title, lambda w: w])
    out = []
    for w in words:
        w = case(w)
        r = rng.random()
        if r < 0.1:
            w = w.rstrip(".,;:") + ","
        elif r < 0.15:
            w = f'"{w}"'
        out.append(w)
    return "".join(w + rng.choice([" ", " ", " ", "\n", "  "]) for w in out).strip() + "."


def plant(doc: str, span: str, rng: random.Random) -> str:
    cuts = [m.end() for m in re.finditer(r"[.!?]\s", doc)] or [len(doc)]
    at = rng.choice(cuts)
    return f"{doc[:at]} {span} {doc[at:]}"


def words_of(text: str) -> list[str]:
    """White-space tokens that keep a word once punctuation is deleted ("->" and ">>>" do not)."""
    return [t for t in text.split() if _norm(t)]


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]|_", "", s.lower()).split())


def build_set(n_docs: int, n_records: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(benchmark records, documents with their labels)."""
    rng = random.Random(seed)
    records = docstring_records(n_records, rng)
    long_q = [r for r in records if len(words_of(r["question"])) >= N + 1]
    short_opts = [r for r in records if MIN_WORDS <= len(words_of(r["choices"][0])) < N]
    docs = [{"text": p, "label": "clean"} for p in prose_paragraphs(rng, n_docs)]
    planted = []
    for i, d in enumerate(docs):
        kind = ("ngram", "option", "near_miss")[i % 3]
        r = rng.choice(short_opts if kind == "option" else long_q)
        w = words_of(r["choices"][0] if kind == "option" else r["question"])
        if kind == "ngram":
            k = rng.randint(N, min(2 * N, len(w)))
            a = rng.randint(0, len(w) - k)
        elif kind == "option":
            a, k = 0, len(w)
        else:  # n-1 words, not from the start (the summary option, matched whole, begins there);
            # guard words unlike the question's words on either side of the span
            a, k = rng.randint(1, len(w) - (N - 1)), N - 1
        span = perturb(w[a:a + k], rng)
        if kind == "near_miss":
            before = next(g for g in ("indeed", "namely") if a == 0 or _norm(w[a - 1]) != g)
            after = next(g for g in ("again", "anyway") if a + k == len(w) or _norm(w[a + k]) != g)
            span = f"{before} {span} {after}."
        planted.append({"text": plant(d["text"], span, rng), "label": kind, "record": r["id"],
                        "words": " ".join(w[a:a + k])})
    return records, docs + planted


def evaluate(n_docs: int = 600, n_records: int = 3000, seed: int = 0, batch: int = 1024) -> dict:
    records, docs = build_set(n_docs, n_records, seed)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stdlib_docstrings.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        cfg = DecontaminateConfig(benchmarks=[path], n=N, min_words=MIN_WORDS)
        t0 = time.process_time()
        index = build_index(cfg)
        build_s = time.process_time() - t0
    by_id = {r["id"]: _norm(r["question"] + " " + " ".join(r["choices"])) for r in records}
    texts = [d["text"] for d in docs]
    t0, reasons, named = time.process_time(), [], []
    for s in range(0, len(texts), batch):
        part = pa.table({"text": pa.array(texts[s:s + batch], pa.large_string()),
                         "_ord": pa.array(range(s, s + len(texts[s:s + batch])), pa.int64())})
        dec, _ = decisions(part, index, 1)
        got = {o: (r, rec) for o, r, rec in zip(dec["_ord"].to_pylist(), dec["reject_reason"].to_pylist(),
                                                dec["decontaminate_record"].to_pylist())}
        for o in range(s, s + part.num_rows):
            r, rec = got.get(o, (None, None))
            reasons.append(r)
            named.append(rec)
    match_s = time.process_time() - t0
    res = {"n": N, "min_words": MIN_WORDS, "records": len(records),
           "index": {"pairs": len(index.keys), "mb": round(index.nbytes / 2**20, 3), "build_cpu_s": round(build_s, 3)},
           "docs": len(docs), "mean_chars": round(sum(map(len, texts)) / len(texts)),
           "docs_per_s": round(len(docs) / match_s, 1), "mb_per_s": round(sum(map(len, texts)) / match_s / 1e6, 2)}
    wrong = []
    for kind in ("ngram", "option", "near_miss", "clean"):
        idx = [i for i, d in enumerate(docs) if d["label"] == kind]
        flagged = [i for i in idx if reasons[i] is not None]
        res[kind] = {"docs": len(idx), "flagged": len(flagged)}
        if kind in ("ngram", "option"):
            right = [i for i in flagged if _norm(docs[i]["words"]) in by_id.get(named[i], "")]
            res[kind]["record_named"] = len(right)
            res[kind]["recall"] = round(len(flagged) / max(len(idx), 1), 4)
            wrong += [docs[i]["words"] for i in idx if reasons[i] is None][:5]
        else:
            wrong += [texts[i][:200] for i in flagged][:5]
    res["wrong_examples"] = wrong
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=600, help="clean prose paragraphs (as many planted copies)")
    ap.add_argument("--records", type=int, default=3000, help="benchmark records from stdlib docstrings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the JSON here too (e.g. benchmarks/results/decontaminate.json)")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import emit  # noqa: E402

    return emit(evaluate(args.docs, args.records, args.seed), args.out)


if __name__ == "__main__":
    main()
