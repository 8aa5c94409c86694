"""``datacurate ablate`` on data the tests do not tune to: does the `heuristics` stage make
a better model than no filter, at equal training tokens?

Corpus: the 170 Brown news texts of sample_data plus as many bytes of generated junk
(repeated lines, symbol soup, boilerplate lines; tests/ablation_data.py, seed 0). Arm
`all` keeps everything (tokenize + decompose), arm `heuristics` runs the default
heuristics first. The tiny GPT, 40 steps x 2,048 tokens, 3 seeds; eval: loss on the 30
Brown texts of sample_data/target (never in the corpus), one tokenizer for both arms.

    python benchmarks/bench_ablate_heuristics.py [OUT]    # about 2-3 minutes on 2 idle cores
"""

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from datacurate.configs.ablation import load_ablation_config  # noqa: E402
from datacurate.engine.ablate import format_table, run_ablation  # noqa: E402
from tests.ablation_data import write_corpus  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ablate-heuristics-"))
    out.mkdir(parents=True, exist_ok=True)
    write_corpus(out / "corpus.jsonl")
    decompose = {"decompose": {"min_log2": 6, "max_log2": 8}}
    cfg = load_ablation_config({
        "input": str(out / "corpus.jsonl"), "output": str(out / "ablation"), "baseline": "all",
        "arms": {"all": {"stages": ["tokenize", decompose]},
                 "heuristics": {"stages": ["heuristics", "tokenize", decompose]}},
        "budget": {"model": {"preset": "tiny"}, "tokens": 40 * 2048, "seeds": 3, "device": "cpu",
                   "train": {"data": {"tokens_per_step": 2048}, "checkpoint_every": 20}},
        "eval": {"text": {"prose": str(REPO / "sample_data" / "target" / "target.jsonl")}},
        "ray": {"num_cpus": 2}})
    print(format_table(run_ablation(cfg)))


if __name__ == "__main__":
    main()
