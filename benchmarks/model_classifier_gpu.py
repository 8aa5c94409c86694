"""``model_classifier`` on one GPU against the plain loop on the same card, beside NeMo
Curator's published floor (``bash benchmarks/model_classifier_gpu.sh``).

A FineWeb-Edu-sized encoder: random weights (seeded) of snowflake-arctic-embed-m's shape
(BERT-base: 12 layers, 768 hidden, 12 heads, 512 positions) with a 1-output regression
head, built here (``random_encoder.py``); speed does not depend on the weights. Documents:
the sample corpus's real texts, repeated to ``--docs``, truncated at 512 tokens as the card
says. Measured, each after a warm-up, in one process on one card:

* ``model_classifier``: the stage's worker path (:func:`tokenize_block` on the CPU, then
  :class:`BlockScorer`: bf16, rows sorted by length, padded batches under
  ``--batch-tokens``), docs/s end to end in this one process, and of the model alone (in a
  pipeline the tokenizers run in CPU tasks ahead of the GPU actor);
* the plain loop: ``transformers.pipeline("text-classification")`` on the same card, one
  document per call (float32, as the model card's example runs);
* NeMo Curator's floor: >= 3,500 docs/s on 8 GPUs for its domain classifier, ~440 per GPU.

Also the largest difference between the two paths' scores (bf16 against float32) and the
GPU's peak memory. Writes ``benchmarks/results/model_classifier_gpu.json``. ``--smoke``
runs the same code on the CPU with a tiny model and a few documents (``tests/test_model_classifier_gpu.py``).
Not measured here: a Ray pipeline run on the device (the actor pool around this worker).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import random_encoder  # noqa: E402
from bench_model_classifier import NEMO_FLOOR_PER_GPU, TIMES, ours, plain, texts  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="CPU, a tiny model, a few documents")
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--plain-docs", type=int, default=2_000, help="documents the plain loop scores (it is slow)")
    ap.add_argument("--batch-tokens", type=int, default=131_072)  # NeMo: batches of 256 x 512 tokens
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results/model_classifier_gpu.json"))
    a = ap.parse_args(argv)
    import torch

    gpu = torch.cuda.is_available() and not a.smoke
    device, dtype = ("cuda", "bfloat16") if gpu else ("cpu", "float32")
    arch = "arctic-embed-m" if not a.smoke else "tiny-bert"
    n, n_plain = (a.docs, a.plain_docs) if not a.smoke else (24, 12)
    docs = texts(n)
    res: dict = {"device": torch.cuda.get_device_name(0) if gpu else "cpu", "arch": arch, "dtype": dtype,
                 "docs": n, "plain_docs": n_plain, "batch_tokens": a.batch_tokens if gpu else 1024,
                 "nemo_floor_docs_per_s_per_gpu": NEMO_FLOOR_PER_GPU}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = random_encoder.build(Path(tmp) / "m", docs[:300], arch)
        if gpu:
            torch.cuda.reset_peak_memory_stats()
        s_ours, _, wall_ours = ours(path, docs, device, dtype, res["batch_tokens"])
        if gpu:
            res["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 2)
        s_plain, _, wall_plain = plain(path, docs[:n_plain], device)
    res["docs_per_s"] = {"model_classifier": round(n / wall_ours, 1), "hf_pipeline_loop": round(n_plain / wall_plain, 1),
                         # the GPU actor alone: what it sustains while tokenizer tasks on CPU workers keep up
                         "model_classifier_model_only": round(n / TIMES["model_s"], 1)}
    res["seconds_ours"] = dict(TIMES)
    res["speedup"] = round(res["docs_per_s"]["model_classifier"] / res["docs_per_s"]["hf_pipeline_loop"], 2)
    res["vs_nemo_floor"] = round(res["docs_per_s"]["model_classifier"] / NEMO_FLOOR_PER_GPU, 2)
    res["vs_nemo_floor_model_only"] = round(res["docs_per_s"]["model_classifier_model_only"] / NEMO_FLOOR_PER_GPU, 2)
    res["max_abs_score_diff"] = float(np.abs(s_ours[:n_plain] - s_plain).max())
    res["seconds"] = round(time.perf_counter() - t0, 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
