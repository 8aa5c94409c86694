"""Recipe of the shipped ``sample-bpe-8k.json``: a byte-level BPE, 8,192 tokens, trained on
the text that ``pipelines/sample.yaml`` keeps from ``sample_data/corpus``.

    python datacurate/resources/tokenizers/recipe.py [--out PATH] [--work out/tokenizer-recipe]

It runs the sample pipeline's stages *before* ``tokenize`` (the tokenizer cannot be used
to make its own training data), then ``datacurate.formats.tokenizer.train_tokenizer`` on the kept
documents, and prints the sha256 that the shards' manifest will record. Training is
deterministic for a given input, so the same kept text gives the same file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from datacurate.configs.pipeline import load_config  # noqa: E402
from datacurate.engine import run_pipeline  # noqa: E402
from datacurate.formats.tokenizer import file_sha256, iter_texts, train_tokenizer  # noqa: E402

VOCAB_SIZE = 8192


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "sample-bpe-8k.json"))
    ap.add_argument("--work", default=str(ROOT / "out" / "tokenizer-recipe"))
    args = ap.parse_args()
    cfg = load_config(ROOT / "pipelines" / "sample.yaml", ["ray.progress=false"],
                      input_path=str(ROOT / "sample_data" / "corpus"), output_path=args.work)
    names = [s.name for s in cfg.stages]
    cfg.stages = cfg.stages[:names.index("tokenize")] if "tokenize" in names else cfg.stages
    report = run_pipeline(cfg)
    print(f"kept {report['totals']['kept']:,} documents after {', '.join(s.name for s in cfg.stages)}")
    tok = train_tokenizer(iter_texts([args.work]), vocab_size=VOCAB_SIZE, min_frequency=2)
    tok.save(args.out)
    print(f"{args.out}: vocab {tok.get_vocab_size():,}, sha256 {file_sha256(args.out)}")


if __name__ == "__main__":
    main()
