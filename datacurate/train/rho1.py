"""RHO-1 selective language modelling (Lin et al. 2024, "Not All Tokens Are What You Need").

A reference model trained on high-quality, target-like text scores every token; the
excess loss of a token is ``current loss - reference loss``, and training back-propagates
only through the top ``ratio`` of a batch's tokens by excess loss (the paper keeps 60-70 %;
its 1B model matched the baseline's few-shot math accuracy with 5-10x fewer tokens).
Tokens the current model already fits as well as the reference (learned or easy) and
tokens the reference finds hard too (noise, unpredictable text) are the ones dropped.
Reference losses come from a frozen forward pass every step, or once and offline, as the
paper suggests: :func:`score_tokens` writes a sidecar beside the token files (format and
checks: the README's RHO-1 entry under "Training").
"""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np
import torch

from datacurate.formats import shards
from datacurate.train import checkpoint
from datacurate.train.data import ShardDataset, ShardError
from datacurate.train.model import compile_model
from datacurate.train.objective import Objective, Part

SIDECAR = "rho1_reference"
SIDE, SIDE_DTYPE = "refloss", np.dtype("<f2")  # the side array's name in ShardDataset, its dtype on disk


def select_loss(losses: torch.Tensor, ref_losses: torch.Tensor, ratio: float) -> tuple[torch.Tensor, int]:
    """Mean loss over the top ``ceil(ratio * n)`` tokens by excess loss; the rest get no
    gradient. ``losses`` (B, T) carries the graph, ``ref_losses`` (B, T) does not."""
    flat = losses.reshape(-1)  # (B*T,)
    k = math.ceil(ratio * flat.numel())
    excess = flat.detach() - ref_losses.reshape(-1).to(flat.dtype)  # (B*T,)
    idx = torch.topk(excess, k, sorted=False).indices  # (k,)
    return flat[idx].mean(), k


class Reference:
    """Reference per-token losses for a batch: from the sidecar when one fits, else a
    frozen forward pass."""

    def __init__(self, path: str, ds: ShardDataset, device: str, sidecar: str = "auto", autocast=None,
                 compile: bool = False, head: str = "plain"):
        self.ckpt = checkpoint.resolve(path)
        state = checkpoint.read_state(self.ckpt)
        tok = ds.tokenizer["sha256"]
        if state.get("tokenizer_sha256") != tok:
            raise checkpoint.CheckpointError(f"rho1.reference {path}: trained with another tokenizer than the shards'")
        self.sha = state["weights_sha256"]
        info = ds.manifest.get(SIDECAR)
        self.model = None
        self.from_sidecar = False
        if sidecar != "off" and info:
            if info.get("weights_sha256") != self.sha or info.get("tokenizer_sha256") != tok:
                if sidecar == "require":
                    raise ShardError(f"{ds.path}: its reference-loss sidecar was scored by another reference "
                                     f"({info.get('checkpoint')}), not {path}")
            else:
                ds.attach(SIDE, info["files"], SIDE_DTYPE, -1)
                self.from_sidecar = True
        elif sidecar == "require":
            raise ShardError(f"{ds.path}: no reference-loss sidecar (run datacurate score-tokens first)")
        if not self.from_sidecar:
            self.model, _ = checkpoint.load_model(self.ckpt, device, tok, max(ds.seq_lens), f"reference {path}")
            for p in self.model.parameters():
                p.requires_grad_(False)
            self.model.loss = head  # the trained model's loss head (fused_loss.resolve)
            if compile:  # as the trained model: one graph per bucket length
                self.model = compile_model(self.model)
        self.autocast = autocast

    def losses(self, tokens: torch.Tensor, side) -> torch.Tensor:
        """(B, L-1) reference losses of ``tokens`` (B, L)."""
        if self.from_sidecar:
            return torch.as_tensor(side, dtype=torch.float32, device=tokens.device)  # numpy or a device tensor
        with torch.no_grad(), self.autocast():
            return self.model(tokens[:, :-1], tokens[:, 1:])


class Rho1Objective(Objective):
    """The training loop's loss under RHO-1: select by excess loss, average the selected."""

    def __init__(self, reference: Reference, ratio: float):
        self.reference, self.ratio = reference, ratio
        self.sides = (SIDE,) if reference.from_sidecar else ()

    def loss(self, losses: torch.Tensor, part: Part) -> torch.Tensor:
        return select_loss(losses, self.reference.losses(part.tokens, part.side.get(SIDE)), self.ratio)[0] * part.share

    def describe(self) -> str:
        return f"RHO-1 ratio {self.ratio} ({'sidecar' if self.reference.from_sidecar else 'on the fly'})"


@torch.no_grad()
def score_tokens(ckpt_path: str, shard_dir: str, device: str = "cpu", tokens_per_batch: int = 16384,
                 log=print) -> dict:
    """Write the reference-loss sidecar of every token file of ``shard_dir``; return the
    manifest entry."""
    ds = ShardDataset(shard_dir)
    model, state = checkpoint.load_model(ckpt_path, device, ds.tokenizer["sha256"], max(ds.seq_lens, default=0))
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if device == "cuda" else contextlib.nullcontext
    files, n_tokens = {}, 0
    for b in ds.manifest["buckets"].values():
        L = int(b["seq_len"])
        for f in b["files"]:
            if not f["n"]:
                continue
            toks = np.memmap(os.path.join(shard_dir, f["tokens"]), dtype=ds.dtype, mode="r", shape=(f["n"], L))
            out = np.empty((f["n"], L - 1), dtype=SIDE_DTYPE)
            step = max(1, tokens_per_batch // L)
            for i in range(0, f["n"], step):
                x = torch.from_numpy(toks[i:i + step].astype(np.int64)).to(device)
                with autocast():  # the precision training's on-the-fly reference runs in
                    out[i:i + step] = model(x[:, :-1], x[:, 1:]).float().cpu().numpy().astype(SIDE_DTYPE)
            rel = f["tokens"].removesuffix(".tokens.bin") + ".refloss.bin"
            shards.write_file(os.path.join(shard_dir, rel), out)
            files[f["tokens"]] = rel
            n_tokens += out.size
    entry = {"checkpoint": os.path.abspath(checkpoint.resolve(ckpt_path)), "weights_sha256": state["weights_sha256"],
             "tokenizer_sha256": ds.tokenizer["sha256"], "dtype": "float16", "files": files}
    shards.write_manifest(shard_dir, {**ds.manifest, SIDECAR: entry})
    log(f"scored {n_tokens:,} tokens in {len(files)} files of {shard_dir} with {entry['checkpoint']}")
    return entry
