"""Hugging Face sequence classifiers and regressors: loading (never a download), tokens on
the CPU, scores from length-sorted batches under a token budget.

NeMo Curator's classifiers (``nemo_curator/stages/text/classifiers/``) are the model: a
tokenizer stage on CPU workers, a model stage on GPU actors that sorts its rows by length
so a padded batch wastes little, and each model's card (its truncation, the score made
from its logits) travelling with it. The pieces here are plain functions and one class
with no Ray: :mod:`datacurate.stages.model_classifier` hands them to the engine.

A model is a local directory or a hub id resolved from the user's Hugging Face cache only
(``local_files_only``, HF_HUB_OFFLINE semantics): a model that is not there is a config
error before any work, never a download in the middle of a run.

Two architectures load:

* ``auto``: ``AutoModelForSequenceClassification`` (FineWeb-Edu's classifier: BERT-like
  arctic-embed-m with a 1-output regression head; any fine-tuned encoder);
* ``nemo_deberta``: NeMo Curator's ``Deberta`` (``PyTorchModelHubMixin``): ``AutoModel``
  of the ``base_model`` its ``config.json`` names, a dropout and a linear ``fc`` on the
  first token's hidden state, softmax over ``id2label`` (nvidia/quality-classifier-deberta,
  nvidia/domain-classifier). The base model's config must be resolvable too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np


class ModelNotFound(ValueError):
    """The model is neither a directory nor in the Hugging Face cache."""


def resolve(model: str) -> str:
    """A local directory holding ``model``: the path itself, or the cached snapshot of a hub id."""
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser())
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(model, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError) as e:
        raise ModelNotFound(f"model {model!r} is neither a directory nor in the Hugging Face cache "
                            f"(no download is made: fetch it once with `hf download {model}`, or give a "
                            f"directory): {type(e).__name__}") from None


def architecture(path: str) -> str:
    cfg = json.loads((Path(path) / "config.json").read_text())
    return "nemo_deberta" if "base_model" in cfg and "fc_dropout" in cfg else "auto"


def id2label(path: str) -> dict[int, str]:
    cfg = json.loads((Path(path) / "config.json").read_text())
    return {int(k): str(v) for k, v in (cfg.get("id2label") or {}).items()}


def context_length(path: str) -> int:
    """Tokens the model reads at most: its position embeddings (and the tokenizer's
    ``model_max_length``, where set), 512 where neither says."""
    cfg = json.loads((Path(path) / "config.json").read_text())
    if "base_model" in cfg:
        cfg = json.loads((Path(resolve(cfg["base_model"])) / "config.json").read_text())
    n = int(cfg.get("max_position_embeddings") or 512)
    tok = Path(path) / "tokenizer_config.json"
    limit = json.loads(tok.read_text()).get("model_max_length") if tok.is_file() else None
    return min(n, int(limit)) if isinstance(limit, (int, float)) and limit < 1e6 else n


def load_model(path: str, device: str = "cpu", dtype: str = "float32"):
    """The model of the directory ``path`` in eval mode, on ``device``; a callable
    ``(input_ids, attention_mask) -> logits (B, L)``."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a "Loading weights" bar per worker otherwise
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    if architecture(path) == "auto":
        model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True, dtype=torch_dtype)
        model.eval().to(device)
        return lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits
    cfg = json.loads((Path(path) / "config.json").read_text())
    base = AutoConfig.from_pretrained(resolve(cfg["base_model"]), local_files_only=True)
    body = AutoModel.from_config(base)
    fc = torch.nn.Linear(base.hidden_size, len(cfg["id2label"]))
    state = _state_dict(path)
    missing, _ = body.load_state_dict({k.removeprefix("model."): v for k, v in state.items()
                                       if k.startswith("model.")}, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]  # a buffer older checkpoints lack
    if missing:
        raise ValueError(f"{path}: the checkpoint lacks weights of the base model: {missing[:3]}")
    fc.load_state_dict({k.removeprefix("fc."): v for k, v in state.items() if k.startswith("fc.")})
    body.eval().to(device, torch_dtype)
    fc.eval().to(device, torch_dtype)
    return lambda ids, mask: fc(body(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0, :])  # (B, L)


def _state_dict(path: str) -> dict:
    st = Path(path) / "model.safetensors"
    if st.is_file():
        from safetensors.torch import load_file

        return load_file(str(st))
    import torch

    return torch.load(Path(path) / "pytorch_model.bin", map_location="cpu", weights_only=True)


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def tokenize(tokenizer, texts: list[str], max_length: int, max_chars: Optional[int] = None) -> list[list[int]]:
    """Token ids of each text, cut as the card says: ``max_chars`` characters first (NeMo's
    classifiers), then the first ``max_length`` tokens, special tokens included."""
    if max_chars is not None:
        texts = [t[:max_chars] for t in texts]
    return tokenizer(texts, truncation=True, max_length=max_length, add_special_tokens=True)["input_ids"]


def batches(lengths: np.ndarray, batch_tokens: int, max_rows: int = 1024) -> list[np.ndarray]:
    """Row indices in batches: rows sorted by length (longest first), each batch as many as
    fit ``rows * longest <= batch_tokens`` (at least one row): padding is what a batch's
    rows lack of its longest, so sorting keeps it small."""
    order = np.argsort(-lengths, kind="stable")
    out, start = [], 0
    while start < len(order):
        longest = max(int(lengths[order[start]]), 1)
        n = max(1, min(max_rows, batch_tokens // longest, len(order) - start))
        out.append(order[start:start + n])
        start += n
    return out


@dataclass
class Head:
    """How a score comes from the logits (the card's formula)."""

    kind: str  # "regression": score = logit 0; "softmax": probabilities over id2label
    labels: dict  # {index: name} (softmax)
    label: Optional[str] = None  # softmax: score = P(label); None: the top label's probability

    def scores(self, logits: np.ndarray) -> tuple[np.ndarray, Optional[list]]:
        """(scores (B,) float32, labels (B,) or None) of logits (B, L) float32."""
        if self.kind == "regression":
            return logits[:, 0].astype(np.float32), None
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)  # (B, L)
        top = p.argmax(axis=1)
        names = [self.labels.get(int(i), str(int(i))) for i in top]
        if self.label is None:
            return p[np.arange(len(p)), top].astype(np.float32), names
        idx = {v: k for k, v in self.labels.items()}[self.label]
        return p[:, idx].astype(np.float32), names


class Scorer:
    """One loaded model scoring token ids: rows sorted by length, padded batches under a
    token budget, logits back in the rows' order. Built once per worker (an actor)."""

    def __init__(self, path: str, device: str = "cpu", dtype: str = "float32", batch_tokens: int = 16_384):
        import torch

        self.torch, self.device, self.batch_tokens = torch, device, batch_tokens
        self.forward = load_model(path, device, dtype)
        tok = load_tokenizer(path)
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        if device == "cpu":
            torch.set_num_threads(max(1, torch.get_num_threads()))

    def logits(self, ids) -> np.ndarray:
        """(N, L) float32 logits of N token id lists (a pyarrow list array, or Python lists)."""
        import pyarrow as pa

        torch = self.torch
        arr = ids if isinstance(ids, (pa.ListArray, pa.LargeListArray)) else pa.array(ids, pa.list_(pa.int64()))
        offsets = np.asarray(arr.offsets, np.int64)
        flat = np.asarray(arr.values, np.int64)  # (total tokens,)
        starts, lengths = offsets[:-1], np.diff(offsets)
        out: Optional[np.ndarray] = None
        with torch.inference_mode():
            for rows in batches(lengths, self.batch_tokens):
                lens, width = lengths[rows], int(lengths[rows].max())
                # right-padded (b, T) ids and mask, gathered in one step: row r's tokens at columns 0..len_r-1
                r = np.repeat(np.arange(len(rows)), lens)
                c = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
                tok = np.full((len(rows), width), self.pad, np.int64)
                tok[r, c] = flat[np.repeat(starts[rows], lens) + c]
                # no padding in the batch (rows of one length, the common case once sorted): no mask, which lets
                # attention take its unmasked kernels; a mask of ones means the same
                mask = None
                if lens.min() < width:
                    m = np.zeros((len(rows), width), np.int64)
                    m[r, c] = 1
                    mask = torch.from_numpy(m).to(self.device)
                logits = self.forward(torch.from_numpy(tok).to(self.device), mask)
                got = logits.float().cpu().numpy()  # (b, L)
                if out is None:
                    out = np.zeros((len(lengths), got.shape[1]), np.float32)
                out[rows] = got
        return out if out is not None else np.zeros((0, 1), np.float32)
