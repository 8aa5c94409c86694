"""Held-out loss per domain: the mean next-token loss over every token of the given
sequences, per domain and over all tokens (``"all"``), in nats per token."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from datacurate.train.data import ShardDataset


@torch.no_grad()
def eval_loss(model: torch.nn.Module, ds: ShardDataset, index: dict[int, np.ndarray | None], device: str,
              tokens_per_batch: int = 16384, autocast=contextlib.nullcontext) -> dict[str, float]:
    """``index[L]``: sequences of bucket L to score (None = all of them)."""
    was = model.training
    model.eval()
    nd = len(ds.domains)
    total, count = np.zeros(nd), np.zeros(nd)
    for L in ds.seq_lens:
        idx = np.arange(ds.num_sequences(L)) if index.get(L, None) is None else index[L]
        step = max(1, tokens_per_batch // L)
        for i in range(0, len(idx), step):
            toks, doms = ds.sequences(L, idx[i:i + step])
            x = torch.from_numpy(toks.astype(np.int64)).to(device)
            with autocast():
                per_seq = model(x[:, :-1], x[:, 1:]).float().sum(1).cpu().numpy()  # (B,)
            np.add.at(total, doms.astype(np.int64), per_seq)
            np.add.at(count, doms.astype(np.int64), L - 1)
    model.train(was)
    out = {"all": float(total.sum() / count.sum()) if count.sum() else None}
    out.update({d: float(total[i] / count[i]) for i, d in enumerate(ds.domains) if count[i]})
    return out


def eval_tokens(ds: ShardDataset, index: dict[int, np.ndarray | None]) -> dict[str, int]:
    """Tokens :func:`eval_loss` scores (``L - 1`` per sequence), per domain and ``"all"``:
    the held-out size behind each loss."""
    count = np.zeros(len(ds.domains), np.int64)
    for L in ds.seq_lens:
        doms = ds.all_domains(L)
        if index.get(L, None) is not None:
            doms = doms[index[L]]
        count += np.bincount(doms, minlength=len(ds.domains)) * (L - 1)
    return {"all": int(count.sum()), **{d: int(count[i]) for i, d in enumerate(ds.domains) if count[i]}}
