"""Scoring a trained model on what ``datacurate ablate`` evaluates every arm on: held-out
text loss (:func:`text_loss`: documents encoded with one tokenizer, each followed by its
EOS as the shards do, cut into windows of ``seq_len``; nats per token) and multiple-choice
tasks (:func:`score_task`), scored as lm-evaluation-harness scores its ``multiple_choice``
tasks (its ``_encode_pair``, ``target_delimiter`` and ``acc_norm`` by the choice's length
in characters); the README's "Ablations" section gives the details.
"""

from __future__ import annotations

import json
import os
from typing import Callable

import numpy as np
import torch

from datacurate.configs.pipeline import ConfigError

DELIMITER = " "  # lm-evaluation-harness's default target_delimiter


def read_texts(path: str) -> list[str]:
    """A held-out text set: a ``.txt`` / ``.md`` file (one document), or JSONL / Parquet
    files (the ``text`` field of each record) as ``datacurate run`` reads them."""
    if not os.path.exists(path):
        raise ConfigError(f"eval.text: file not found: {path}")
    if path.endswith((".txt", ".md")):
        with open(path, encoding="utf-8") as f:
            return [f.read()]
    from datacurate.formats.tokenizer import iter_texts

    return [t for batch in iter_texts([path]) for t in batch]


def read_task(path: str) -> list[dict]:
    """A multiple-choice task: JSONL of ``{"context": str, "choices": [str, ...], "label": int}``."""
    if not os.path.isfile(path):
        raise ConfigError(f"eval.tasks: file not found: {path}")
    items = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                raise ConfigError(f"{path}:{n}: not a JSON line") from None
            ok = (isinstance(item, dict) and isinstance(item.get("context"), str)
                  and isinstance(item.get("choices"), list) and len(item["choices"]) >= 2
                  and all(isinstance(c, str) and c for c in item["choices"])
                  and isinstance(item.get("label"), int) and 0 <= item["label"] < len(item["choices"]))
            if not ok:
                raise ConfigError(f'{path}:{n}: expected {{"context": str, "choices": [at least 2 non-empty str], '
                                  f'"label": index of the right choice}}')
            items.append(item)
    if not items:
        raise ConfigError(f"{path}: no items")
    return items


@torch.no_grad()
def text_loss(model, docs: list[list[int]], eos_id: int, seq_len: int, device: str,
              batch_tokens: int = 16384) -> dict:
    """``{"loss": nats per token, "tokens": predicted tokens}`` over ``docs`` (token ids)."""
    stream = np.fromiter((t for d in docs for t in (*d, eos_id)), dtype=np.int64)
    windows = [stream[i:i + seq_len] for i in range(0, len(stream), seq_len)]
    windows = [w for w in windows if len(w) > 1]
    total, count = 0.0, 0
    full = [w for w in windows if len(w) == seq_len]
    step = max(1, batch_tokens // seq_len)
    for i in range(0, len(full), step):
        x = torch.from_numpy(np.stack(full[i:i + step])).to(device)  # (B, L)
        total += model(x[:, :-1], x[:, 1:]).double().sum().item()
        count += x.shape[0] * (seq_len - 1)
    for w in windows[len(full):]:  # the one shorter window at the end
        x = torch.from_numpy(w[None]).to(device)  # (1, l)
        total += model(x[:, :-1], x[:, 1:]).double().sum().item()
        count += len(w) - 1
    return {"loss": total / count if count else None, "tokens": count}


def encode_pair(encode: Callable[[str], list[int]], context: str, continuation: str,
                eos_id: int) -> tuple[list[int], list[int]]:
    """(context ids, continuation ids) as lm-evaluation-harness's ``_encode_pair``."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
    if not context:  # the harness's empty-context case: the EOS token is the context
        return [eos_id], encode(continuation)
    whole, ctx = encode(context + continuation), encode(context)
    return ctx, whole[len(ctx):]


@torch.no_grad()
def loglikelihood(model, ctx: list[int], cont: list[int], max_seq_len: int, device: str) -> float:
    """Summed log-probability of ``cont`` after ``ctx`` (left-truncated to the window)."""
    whole = (ctx + cont)[-(max_seq_len + 1):]
    x = torch.tensor([whole], dtype=torch.long, device=device)  # (1, T+1)
    nll = model(x[:, :-1], x[:, 1:])[0]  # (T,)
    return -float(nll[-len(cont):].double().sum()) if cont else 0.0


def score_task(model, items: list[dict], encode: Callable[[str], list[int]], eos_id: int, max_seq_len: int,
               device: str) -> dict:
    """``{"acc", "acc_norm", "n", "logliks": [[per choice] per item]}``."""
    acc, acc_norm, lls_all = 0, 0, []
    for item in items:
        lls = np.array([loglikelihood(model, *encode_pair(encode, item["context"], DELIMITER + c, eos_id),
                                      max_seq_len, device) for c in item["choices"]])
        lengths = np.array([float(len(c)) for c in item["choices"]])
        acc += int(np.argmax(lls) == item["label"])
        acc_norm += int(np.argmax(lls / lengths) == item["label"])
        lls_all.append(lls.tolist())
    return {"acc": acc / len(items), "acc_norm": acc_norm / len(items), "n": len(items), "logliks": lls_all}
