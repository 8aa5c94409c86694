"""datatrove's multilingual filters with FineWeb-2's per-language configs, as
``fineweb-2-pipeline.py`` (github.com/huggingface/fineweb-2) runs them in its step 5:
GopherRepetitionFilter, FineWebQualityFilter, GopherQualityFilter, each given the
language-script (which picks datatrove's word tokenizer) and the config's figures.

Runs in datatrove's own venv (never the project's), by benchmarks/bench_multilingual.py:

    /work/venvs/dt/bin/python benchmarks/dt_fineweb2_filters.py DOCS.jsonl CONFIGS_DIR OUT.jsonl REPEATS

DOCS.jsonl: ``{"id", "text", "iso"}`` (``iso``: FineWeb-2's ``{iso639_3}_{Script}``).
OUT.jsonl: ``{"id", "reason"}`` (``None``: kept; else ``<filter>/<datatrove's reason>``),
and on its last line the CPU seconds per pass, the word tokenizers' loading excluded (a
first, untimed pass over every language loads them).
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as benchmarks/_common.py

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402
from datatrove.data import Document  # noqa: E402
from datatrove.pipeline.filters import FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter  # noqa: E402


def filters(cfg: dict, lang_script: str) -> list:
    """FineWeb-2's step 5, its arguments as in fineweb-2-pipeline.py."""
    return [
        ("gopher_rep", GopherRepetitionFilter(language=lang_script, dup_para_frac=0, dup_line_char_frac=0,
                                              dup_para_char_frac=0, dup_line_frac=cfg["dup_line_frac"],
                                              top_n_grams=cfg["top_n_grams"], dup_n_grams=cfg["dup_n_grams"])),
        ("fineweb", FineWebQualityFilter(language=lang_script, short_line_thr=999, char_duplicates_ratio=0.1,
                                         line_punct_thr=cfg["line_punct_thr"], new_line_ratio=cfg["new_line_ratio"])),
        ("gopher", GopherQualityFilter(language=lang_script, max_avg_word_length=cfg["max_avg_word_length"],
                                       min_avg_word_length=cfg["min_avg_word_length"], stop_words=cfg["stopwords"],
                                       max_non_alpha_words_ratio=cfg["max_non_alpha_words_ratio"], min_stop_words=2)),
    ]


def judge(docs: list[dict], chains: dict) -> list[dict]:
    out = []
    for d in docs:
        reason = None
        doc = Document(text=d["text"], id=d["id"])
        for name, f in chains[d["iso"]]:
            res = f.filter(doc)
            ok, why = (res, "") if isinstance(res, bool) else res
            if not ok:
                reason = f"{name}/{why}"
                break
        out.append({"id": d["id"], "reason": reason})
    return out


def main() -> None:
    docs_path, cfg_dir, out_path, repeats = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    docs = [json.loads(line) for line in open(docs_path, encoding="utf-8")]
    chains = {iso: filters(yaml.safe_load((cfg_dir / f"{iso}.yml").read_text()), iso)
              for iso in sorted({d["iso"] for d in docs})}
    result = judge(docs, chains)  # untimed: loads every word tokenizer
    t0 = time.process_time()
    for _ in range(repeats):
        judge(docs, chains)
    cpu = (time.process_time() - t0) / repeats
    with open(out_path, "w", encoding="utf-8") as f:
        for r in result:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
        f.write(json.dumps({"cpu_seconds_per_pass": cpu}) + "\n")


if __name__ == "__main__":
    main()
