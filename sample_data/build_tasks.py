"""Write sample_data/tasks/brown_cloze.jsonl: a multiple-choice cloze task for
``datacurate ablate`` from the held-out Brown texts of target/ (never in corpus/).

Each item: a sentence of 14-40 words from target/target.jsonl, its first two thirds as
the context, its last third as the right choice, and the last thirds of three other such
sentences as the wrong ones (shuffled; ``label`` is the right one's index). Deterministic:
``random.Random("brown-cloze-0")``. Run from the repository root: python3 sample_data/build_tasks.py
"""

import json
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent
N_ITEMS = 120


def sentences(text: str) -> list[list[str]]:
    out = []
    for s in re.split(r"(?<=[.!?])\s+", text.replace("\n", " ")):
        words = s.split()
        if 14 <= len(words) <= 40 and words[-1][-1] in ".!?" and '"' not in s:
            out.append(words)
    return out


def main() -> None:
    rng = random.Random("brown-cloze-0")
    docs = [json.loads(line) for line in (ROOT / "target" / "target.jsonl").read_text().splitlines() if line.strip()]
    pool = [s for d in docs for s in sentences(d["text"])]
    rng.shuffle(pool)
    items = []
    for words in pool[:N_ITEMS]:
        cut = (2 * len(words)) // 3
        right = " ".join(words[cut:])
        wrong = []
        while len(wrong) < 3:
            other = rng.choice(pool)
            ending = " ".join(other[(2 * len(other)) // 3:])
            if other is not words and ending != right and ending not in wrong:
                wrong.append(ending)
        choices = wrong + [right]
        rng.shuffle(choices)
        items.append({"context": " ".join(words[:cut]), "choices": choices, "label": choices.index(right)})
    out = ROOT / "tasks" / "brown_cloze.jsonl"
    out.parent.mkdir(exist_ok=True)
    out.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items))
    print(f"{out}: {len(items)} items from {len(pool)} sentences")


if __name__ == "__main__":
    main()
