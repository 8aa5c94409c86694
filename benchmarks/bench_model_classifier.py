"""``model_classifier`` against a plain Hugging Face ``pipeline`` loop, on the same model and
documents, in one run (CPU): the ratio of CPU seconds per document, and the largest score
difference between the two.

The model is an encoder with random weights built here (``random_encoder.py``: no
download; speed does not depend on the weights), a 1-output regression head as
FineWeb-Edu's; the documents are the sample corpus's real texts, truncated to the
model's 512 tokens as the card says. Ours: the stage's own path (tokens for the whole
batch in one call, rows sorted by length, padded batches under ``batch_tokens``, by default the stage's on a CPU: one full-length document); theirs:
``pipeline("text-classification", function_to_apply="none", truncation=True)`` called
on one document at a time, as the model cards show. Both in this process, one torch thread.

    python benchmarks/bench_model_classifier.py [--docs 300] [--arch small-bert]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPUS, ROOT, read_jsonl  # noqa: E402

import numpy as np  # noqa: E402

import random_encoder  # noqa: E402

NEMO_FLOOR_PER_GPU = 3500 / 8  # NeMo Curator's published domain-classifier floor: >= 3,500 docs/s on 8 GPUs


def texts(n: int) -> list[str]:
    docs = [r["text"] for name in ("news.jsonl", "legal.jsonl", "learned.jsonl", "web_noise.jsonl")
            for r in read_jsonl(CORPUS / name)]
    return (docs * (n // len(docs) + 1))[:n]


def ours(path: str, docs: list[str], device: str, dtype: str, batch_tokens: int) -> tuple[np.ndarray, float, float]:
    """(scores, CPU s, wall s) of the stage's path: tokenize the batch, score it on one worker
    (``TIMES`` gets the tokenizer's and the model's wall seconds apart)."""
    import pyarrow as pa

    from datacurate.core.schema import ORD, TEXT, WPART
    from datacurate.stages import model_blocks as mb
    from datacurate.models import hf_classifier as hf

    card = mb.Card(path, "m", "regression", None, hf.context_length(path), None, None)
    table = pa.table({ORD: np.arange(len(docs)), TEXT: docs, WPART: ["p"] * len(docs)})
    worker = mb.BlockScorer(card, device, dtype, batch_tokens)
    worker(mb.tokenize_block(table.slice(0, 8), card, None, "documents"))  # warm-up: kernels, allocator
    _sync(device)
    c0, w0 = time.process_time(), time.perf_counter()
    ids = mb.tokenize_block(table, card, None, "documents")
    w1 = time.perf_counter()
    out = worker(ids)
    _sync(device)
    w2 = time.perf_counter()
    TIMES.update(tokenize_s=round(w1 - w0, 3), model_s=round(w2 - w1, 3))
    return out["m_score"].to_numpy(), time.process_time() - c0, w2 - w0


TIMES: dict = {}


def plain(path: str, docs: list[str], device: str) -> tuple[np.ndarray, float, float]:
    """(scores, CPU s, wall s) of a Hugging Face pipeline called once per document."""
    from transformers import pipeline

    pipe = pipeline("text-classification", model=path, tokenizer=path, device=device, function_to_apply="none")
    pipe(docs[0], truncation=True)
    _sync(device)
    c0, w0 = time.process_time(), time.perf_counter()
    scores = [pipe(d, truncation=True)[0]["score"] for d in docs]
    _sync(device)
    return np.array(scores), time.process_time() - c0, time.perf_counter() - w0


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--arch", default="small-bert", choices=sorted(random_encoder.ARCHS))
    ap.add_argument("--batch-tokens", type=int, default=None, help="default: the stage's on a CPU (max_length)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/model_classifier_cpu.json"))
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    docs = texts(a.docs)
    with tempfile.TemporaryDirectory() as tmp:
        path = random_encoder.build(Path(tmp) / "m", docs[:200], a.arch)
        from datacurate.models.hf_classifier import context_length
        from datacurate.stages.model_classifier import default_batch_tokens

        a.batch_tokens = a.batch_tokens or default_batch_tokens(False, context_length(path))
        s_ours, cpu_ours, wall_ours = ours(path, docs, "cpu", "float32", a.batch_tokens)
        s_plain, cpu_plain, wall_plain = plain(path, docs, "cpu")
    res = {"arch": a.arch, "docs": len(docs), "torch_threads": 1, "batch_tokens": a.batch_tokens,
           "cpu_s": {"model_classifier": round(cpu_ours, 2), "hf_pipeline_loop": round(cpu_plain, 2)},
           "wall_s": {"model_classifier": round(wall_ours, 2), "hf_pipeline_loop": round(wall_plain, 2)},
           "docs_per_cpu_s": {"model_classifier": round(len(docs) / cpu_ours, 2),
                              "hf_pipeline_loop": round(len(docs) / cpu_plain, 2)},
           "speedup_cpu": round(cpu_plain / cpu_ours, 2),
           "max_abs_score_diff": float(np.abs(s_ours - s_plain).max()),
           "machine": "shared 2-core VM (other engineers' jobs running): CPU seconds, not wall time, compare"}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
