"""The output head and its per-token cross-entropy, with or without the logits tensor.

The logits of a step are its largest tensor: ``(B*T, V)`` with V = 50,304 is 65x the hidden
states at 768 wide, and in fp32 (for the softmax) they alone ran a 350M step of 65k tokens
out of an 80 GB GPU. A *fused* linear + cross-entropy computes the loss and its gradient
chunk by chunk over tokens and never holds more than one chunk's logits (Wijmans et al. 2024,
"Cut Your Losses in Large-Vocabulary Language Models", and Liger Kernel's
``LigerFusedLinearCrossEntropyLoss``, Hsu et al. 2024, which the README's GPU notes measure).

``train.loss`` picks the head (:func:`resolve`):

* ``plain`` -- ``F.linear`` then ``F.cross_entropy`` on the full fp32 logits (nanoGPT's way);
* ``fused`` -- on CUDA, Liger Kernel's Triton kernel when ``liger-kernel`` is installed (the
  ``[gpu]`` extra; it runs outside ``torch.compile``'s graph), else
  :class:`ChunkedLinearCrossEntropy` (torch, any device; Dynamo traces it whole);
* ``auto`` -- ``fused`` on the device types in :data:`FUSED_BY_DEFAULT`, else ``plain``. That
  set is empty by measurement: on an NVIDIA H200 (``benchmarks/gpu_check.sh``, issue 41, the
  README's GPU section) Liger's head ran 0.87x our compiled plain head at 124M and L = 1024 and
  0.95x at 350M, freeing 19 % and 9 % of the step's peak memory (Inductor already fuses the plain
  head's cross-entropy over bf16 logits); on CPU it saves memory but costs time (benchmarks/README.md).

Every kind returns the per-token losses (N,) in fp32, unreduced, so RHO-1's token selection
and DoReMi's per-domain weights read them as before; gradients reach the hidden states and
the (tied) weight whatever weights the objective gives the tokens. Because those weights are
known only after the forward pass, the chunked head keeps each token's log-sum-exp (N floats)
and recomputes each chunk's logits in the backward pass (Liger does the same for
``reduction="none"``): four head matrix products a step instead of three (at 124M the head
is about a third of the step's flops, so about 10 % more flops), for logits memory of one
chunk instead of all tokens.
"""

from __future__ import annotations

import functools
import importlib.util
import math

import torch
import torch.nn.functional as F

KINDS = ("auto", "fused", "plain")
FUSED_BY_DEFAULT: frozenset[str] = frozenset()  # device types where ``auto`` means fused: none (measured slower)
MIN_CHUNK_ELEMENTS = 1 << 22  # a chunk's logits: at least 16 MiB in fp32


@functools.lru_cache(maxsize=1)
def liger_available() -> bool:
    """Liger Kernel's head imports (it needs triton and a torch it supports); the loop's first
    log line names the head a run took, so an installed but broken Liger shows as ``chunked``."""
    if importlib.util.find_spec("liger_kernel") is None:
        return False
    try:
        from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure (no triton, an unsupported torch) means: not usable
        return False
    return True


def resolve(kind: str, device: str) -> str:
    """``train.loss`` on ``device`` -> the head :func:`token_losses` runs: plain | chunked | liger."""
    if kind not in KINDS:
        raise ValueError(f"loss must be one of {', '.join(KINDS)}, not {kind!r}")
    dev = torch.device(device).type
    if kind == "plain" or (kind == "auto" and dev not in FUSED_BY_DEFAULT):
        return "plain"
    return "liger" if dev == "cuda" and liger_available() else "chunked"


def chunk_rows(n: int, vocab: int, width: int) -> int:
    """Tokens per chunk: one chunk's logits (rows x V) about the size of the hidden states
    (n x C), Liger's budget, but at least :data:`MIN_CHUNK_ELEMENTS` (narrow models and small
    micro-batches would otherwise run many tiny matrix products); a power of two, at most ``n``."""
    rows = math.ceil(max(n * width, MIN_CHUNK_ELEMENTS) / vocab)
    return min(n, 1 << max(0, rows - 1).bit_length())


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    """Per-token ``cross_entropy(h @ w.T, y)`` (N,) fp32 without the (N, V) logits: the
    forward pass keeps each token's log-sum-exp, the backward pass recomputes a chunk's logits,
    turns them into ``g * (softmax - onehot)`` and projects them onto ``h`` and ``w``. The
    matrix products run in the inputs' dtype (bf16 under autocast, as ``F.linear``), the
    softmax in fp32 (as ``F.cross_entropy(logits.float())``); ``w``'s gradient is summed in fp32."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, w: torch.Tensor, y: torch.Tensor, rows: int) -> torch.Tensor:
        n = h.shape[0]
        loss = torch.empty(n, device=h.device, dtype=torch.float32)  # (N,)
        lse = torch.empty(n, device=h.device, dtype=torch.float32)  # (N,)
        for s in range(0, n, rows):
            z = F.linear(h[s:s + rows], w).float()  # (r, V)
            lse[s:s + rows] = torch.logsumexp(z, dim=1)  # (r,)
            loss[s:s + rows] = lse[s:s + rows] - z.gather(1, y[s:s + rows, None]).squeeze(1)  # (r,)
        ctx.save_for_backward(h, w, y, lse)
        ctx.rows = rows
        return loss

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        h, w, y, lse = ctx.saved_tensors
        need_h, need_w = ctx.needs_input_grad[:2]
        gh = torch.empty_like(h) if need_h else None  # (N, C)
        gw = torch.zeros(w.shape, device=w.device, dtype=torch.float32) if need_w else None  # (V, C)
        rows, n = ctx.rows, h.shape[0]
        for s in range(0, n, rows):
            hc, yc = h[s:s + rows], y[s:s + rows]  # (r, C), (r,)
            d = torch.exp(F.linear(hc, w).float() - lse[s:s + rows, None])  # (r, V) softmax
            d.scatter_add_(1, yc[:, None], torch.full_like(yc[:, None], -1, dtype=d.dtype))  # - onehot
            d = (d * g[s:s + rows, None].float()).to(h.dtype)  # (r, V) dloss/dlogits
            if need_h:
                gh[s:s + rows] = d @ w  # (r, C)
            if need_w:
                gw += (d.t() @ hc).float()  # (V, C)
        return gh, (gw.to(w.dtype) if need_w else None), None, None


def token_losses(h: torch.Tensor, w: torch.Tensor, y: torch.Tensor, kind: str = "plain") -> torch.Tensor:
    """Per-token cross-entropy (N,) fp32 of the head ``w`` (V, C) over hidden states ``h``
    (N, C) against targets ``y`` (N,); ``kind`` from :func:`resolve`. Under autocast the
    fused heads see the operands ``F.linear`` would (cast to the autocast dtype)."""
    if kind == "plain":
        return F.cross_entropy(F.linear(h, w).float(), y, reduction="none")  # (N, V) logits -> (N,)
    dev = h.device.type
    if torch.is_autocast_enabled(dev):
        dt = torch.get_autocast_dtype(dev)
        h, w = h.to(dt), w.to(dt)
    with torch.autocast(dev, enabled=False):
        if kind == "chunked":
            return ChunkedLinearCrossEntropy.apply(h, w, y, chunk_rows(h.shape[0], w.shape[0], w.shape[1]))
        if kind == "liger":
            return _liger(h, w, y)
    raise ValueError(f"unknown loss head {kind!r}")


@torch.compiler.disable  # Triton kernels behind their own autograd Function (and a host sync): eager
def _liger(h: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

    return LigerFusedLinearCrossEntropyLoss(reduction="none")(w, h, y).float()  # (N,)
