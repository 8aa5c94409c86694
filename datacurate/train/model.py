"""A decoder-only GPT (Radford et al. 2019's GPT-2 shape, as in nanoGPT), nothing else.

Pre-norm blocks (LayerNorm -> causal self-attention -> residual, LayerNorm -> MLP ->
residual), learned absolute positions, attention through
``torch.nn.functional.scaled_dot_product_attention`` (flash / memory-efficient kernels
on GPU), and the output projection tied to the token embedding (Press & Wolf 2017),
which saves ``vocab x d`` parameters. No training logic lives here: the loop picks the
objective (plain, RHO-1, DoReMi-weighted) over the per-token losses ``forward(idx, targets)``
returns, and the head that computes them (``loss``: plain logits or a fused linear +
cross-entropy, :mod:`datacurate.train.fused_loss`).

Presets (:class:`datacurate.configs.train.ModelConfig`): ``tiny`` (trains on 2 CPU cores in
tests), ``124m`` (GPT-2 small: 12 layers, 12 heads, 768 wide) and ``350m`` (GPT-2 medium: 24
layers, 16 heads, 1024 wide). The vocabulary size always comes from the shards' tokenizer.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from datacurate.train.fused_loss import token_losses
from datacurate.configs.train import GPTShape


class CausalSelfAttention(nn.Module):
    def __init__(self, s: GPTShape):
        super().__init__()
        self.n_head, self.dropout = s.n_head, s.dropout
        self.qkv = nn.Linear(s.n_embd, 3 * s.n_embd, bias=False)
        self.proj = nn.Linear(s.n_embd, s.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # 3 x (B, T, C)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)  # (B, H, T, D)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)


class MLP(nn.Module):
    def __init__(self, s: GPTShape):
        super().__init__()
        self.fc = nn.Linear(s.n_embd, 4 * s.n_embd, bias=False)
        self.proj = nn.Linear(4 * s.n_embd, s.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))  # (B, T, 4C) -> (B, T, C)


class Block(nn.Module):
    def __init__(self, s: GPTShape):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(s.n_embd), CausalSelfAttention(s)
        self.ln2, self.mlp = nn.LayerNorm(s.n_embd), MLP(s)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))  # (B, T, C)
        return x + self.mlp(self.ln2(x))  # (B, T, C)


class GPT(nn.Module):
    def __init__(self, shape: GPTShape, loss: str = "plain"):
        super().__init__()
        self.shape = shape
        self.loss = loss  # the head of forward(idx, targets): plain | chunked | liger (fused_loss.resolve)
        self.wte = nn.Embedding(shape.vocab_size, shape.n_embd)
        self.wpe = nn.Embedding(shape.max_seq_len, shape.n_embd)
        self.drop = nn.Dropout(shape.dropout)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.n_layer))
        self.ln_f = nn.LayerNorm(shape.n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by 1/sqrt(2 n_layer)
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * shape.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def num_params(self, non_embedding: bool = True) -> int:
        """Weights; ``non_embedding`` leaves out the position table (nanoGPT's count, for MFU);
        the token embedding is the output head too and counts once."""
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding else n

    def describe_params(self) -> str:
        """The one count ``train`` and ``export`` print: every weight, embeddings included."""
        return (f"{self.num_params(False):,} parameters (embeddings included: token and position tables; "
                "the output head is the token table, counted once)")

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        if T > self.shape.max_seq_len:
            raise ValueError(f"sequence length {T} exceeds the model's max_seq_len {self.shape.max_seq_len}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        return self.ln_f(x)  # (B, T, C)

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits (B, T, V) for token ids ``idx`` (B, T); with ``targets`` (B, T) the per-token
        cross-entropy (B, T) in fp32 instead, unreduced, so RHO-1 and DoReMi can weigh tokens
        (through ``self.loss``'s head: with a fused one the logits are never materialised).
        The head is the tied embedding."""
        h = self.hidden(idx)  # (B, T, C)
        if targets is None:
            return F.linear(h, self.wte.weight)  # (B, T, V)
        B, T, C = h.shape
        return token_losses(h.reshape(B * T, C), self.wte.weight, targets.reshape(B * T), self.loss).view(B, T)

    def flops_per_token(self, seq_len: int) -> int:
        """Training flops per token: 6N + 12 * n_layer * n_head * head_dim * T (the PaLM
        appendix B formula, Chowdhery et al. 2022, as nanoGPT's MFU uses; N excludes the
        position table, the tied head is counted once in N)."""
        s = self.shape
        return 6 * self.num_params() + 12 * s.n_layer * s.n_embd * seq_len


def compile_model(model: nn.Module) -> nn.Module:
    """``torch.compile`` with one graph per sequence length (``dynamic=False``: dataset
    decomposition has a handful of bucket lengths). Dynamo keeps at most 8 graphs per code
    object by default and silently runs eager past that; a DoReMi run compiles a reference,
    a proxy and a frozen reference over every bucket length in one process, so the limit is
    raised to 64."""
    import torch._dynamo as dynamo

    for name in ("cache_size_limit", "recompile_limit"):  # the name differs across torch versions
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, max(64, getattr(dynamo.config, name)))
    return torch.compile(model, dynamic=False)
