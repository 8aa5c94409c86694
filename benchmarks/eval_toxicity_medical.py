"""Toxicity's false positives on medical and health pages: the health / medical news of the
article-extraction benchmark (scrapinghub's 181 pages, MIT; 2019-2020 news and blogs) judged
by the default toxicity stage and by C4's one-word rule. Results:
``benchmarks/results/toxicity_medical.json``.

    python benchmarks/eval_toxicity_medical.py --pages ~/article-extraction-benchmark

Dodge et al. (2021) found that C4's LDNOOBW rule removed medical pages among others; no
licence-clear medical corpus is available offline here, so the medical set is the
benchmark's English article bodies with at least ``--min-terms`` medical terms (the regex
``MEDICAL``), chosen by that rule alone, before any page was scored.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pyarrow as pa

from datacurate.stages.langid import LangId
from datacurate.stages.toxicity import Toxicity

MEDICAL = re.compile(r"\b(cancer|patients?|disease|medical|medicine|hospital|clinical|doctor|vaccine|diagnos\w*|"
                     r"symptom\w*|therapy|surgery|sexual|HIV|breast)\b", re.I)
RULES = {
    "default (classifier share > 0.03)": {},
    "C4: one LDNOOBW word": {"classifier": {"enabled": False}, "wordlist": {"enabled": True, "min_matches": 1}},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", required=True, help="a clone of scrapinghub/article-extraction-benchmark")
    ap.add_argument("--min-terms", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "toxicity_medical.json"))
    args = ap.parse_args()
    truth = json.loads((Path(args.pages) / "ground-truth.json").read_text())
    docs = [(k, v["articleBody"]) for k, v in sorted(truth.items())
            if len(MEDICAL.findall(v.get("articleBody", ""))) >= args.min_terms]
    langs = LangId().annotate(pa.table({"text": [t for _, t in docs]}))[0]["lang"].to_pylist()
    docs = [d for d, lang in zip(docs, langs) if lang == "en"]  # lid.176's English only
    table = pa.table({"text": [t for _, t in docs], "lang": ["en"] * len(docs)})
    out = {"how": __doc__.split("\n\n")[0], "pages": len(docs), "min_terms": args.min_terms,
           "ids": [k for k, _ in docs], "rules": {}}
    for name, cfg in RULES.items():
        _, reasons = Toxicity(**cfg).annotate(table)
        rejected = [k for (k, _), r in zip(docs, reasons.to_pylist() if reasons is not None else [None] * len(docs)) if r]
        out["rules"][name] = {"rejected": len(rejected), "rate": len(rejected) / max(len(docs), 1), "ids": rejected}
        print(f"{name}: {len(rejected)} of {len(docs)} medical / health pages rejected")
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
