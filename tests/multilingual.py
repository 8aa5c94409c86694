"""The multilingual test set (sample_data/multilingual) judged by the recipe's per-document
stages: shared by tests/test_multilingual.py and benchmarks/bench_multilingual.py.

``judge`` runs ``pipelines/multilingual.yaml``'s ``langid`` and ``heuristics`` stages, as
configured there, in this process on every document of the set, and a ``langid`` with a
keep-list of the document's own language on the ``wrong_lang`` variants (the recipe keeps
every language: a wrong language only exists against a list).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "pipelines" / "multilingual.yaml"
RULE_STAGES = ("langid", "heuristics")

# the reasons each degraded variant may be rejected with (a reason's prefix up to "/" or the whole)
EXPECT = {
    "repeated": ("gopher_rep/", "fineweb/char_dup_ratio"),
    "menu": ("fineweb/line_punct_ratio", "fineweb/list_ratio", "fineweb/sentence_ends", "gopher/stop_words", "gopher/stop_word_ratio",
             "gopher/too_few_words", "c4/too_few_sentences", "langid/low_score"),
    "snippet": ("gopher/too_few_words", "c4/too_few_sentences", "langid/low_score"),
    "salad": ("fineweb/line_punct_ratio", "fineweb/list_ratio", "fineweb/sentence_ends", "gopher/stop_words", "gopher/stop_word_ratio",
              "gopher_rep/", "c4/too_few_sentences", "langid/low_score"),
    "wrong_lang": ("langid/language",),
}

# What the recipe does not yet do as the set expects, and why (measured; README "Measured").
# tests/test_multilingual.py holds these to be misses still: remove an entry once it passes.
KNOWN: dict[tuple[str, str], str] = {}  # none since session 18 (README "Measured" says how they were fixed)


def build_module():
    spec = importlib.util.spec_from_file_location("multilingual_build", REPO / "sample_data" / "multilingual" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def documents() -> list[dict]:
    return build_module().documents()


def recipe_stages(overrides: list[str] | None = None) -> list:
    from datacurate.configs.pipeline import load_config
    from datacurate.engine.process import build_stages

    cfg = load_config(RECIPE, overrides or [])
    return build_stages([s for s in cfg.stages if s.name in RULE_STAGES])


def judge(docs: list[dict], overrides: list[str] | None = None) -> list[dict]:
    """Each document with ``lang``, ``lang_score``, ``recipe_reason`` (the recipe's stages'
    reason, None: kept) and ``reject_reason`` (the same, but for ``wrong_lang`` that of a
    keep-list of the document's own language) added."""
    from datacurate.pipeline import Pipeline
    from datacurate.stages.langid import LangId

    stages = recipe_stages(overrides)
    table = pa.table({"id": [d["id"] for d in docs], "text": [d["text"] for d in docs]})
    out = Pipeline(stages).apply(table).select(["lang", "lang_score", "reject_reason"]).to_pylist()
    res = [{**d, **o, "recipe_reason": o["reject_reason"]} for d, o in zip(docs, out)]
    langid_cfg = next(s.config for s in stages if s.name == "langid")  # the recipe's, with a keep-list
    by_lang = defaultdict(list)
    for i, d in enumerate(res):
        if d["variant"] == "wrong_lang":
            by_lang[d["expect_lang"]].append(i)
    for lang, idx in by_lang.items():  # the wrong language against a keep-list of this one
        keep = LangId(dataclasses.replace(langid_cfg, languages=[lang]))
        t = keep(pa.table({"text": [res[i]["text"] for i in idx]}))
        for i, reason in zip(idx, t.column("reject_reason").to_pylist()):
            res[i]["reject_reason"] = reason
    return res


def verdict(doc: dict) -> str | None:
    """None when the document ended as the set expects, else what went wrong."""
    reason = doc["reject_reason"]
    if doc["variant"] == "good":
        if reason is not None:
            return f"rejected: {reason}"
        if doc["lang"] != doc["expect_lang"]:
            return f"labelled {doc['lang']}"
        return None
    if reason is None:
        return "kept"
    if not reason.startswith(EXPECT[doc["variant"]]):
        return f"rejected for an unexpected reason: {reason}"
    return None
