"""Typed configuration of ``datacurate train`` / ``doremi`` and a pipeline's ``train:`` / ``doremi:``:
every training dataclass, no training code (the pipeline and ablation configs read them without
torch). The pipelines' rules: defaults <- YAML <- ``--set key=value``; an unknown key is a one-line
error with a did-you-mean; the resolved configuration is saved beside the outputs (``config.yaml``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal, Optional, Union

from datacurate.core.coerce import ConfigError, from_dict, opt, parse_override, read_yaml, set_key

PRESETS = {
    "tiny": dict(n_layer=2, n_head=4, n_embd=128),
    "124m": dict(n_layer=12, n_head=12, n_embd=768),
    "350m": dict(n_layer=24, n_head=16, n_embd=1024),
}
DEFAULT_LR = {"tiny": 3e-3, "124m": 6e-4, "350m": 3e-4}  # GPT-3 paper's Table 2.1 for 125M / 350M


@dataclass
class ModelConfig:
    preset: str = opt("tiny", "tiny | 124m | 350m; the fields below override the preset when set")
    n_layer: Optional[int] = None
    n_head: Optional[int] = None
    n_embd: Optional[int] = None
    max_seq_len: Optional[int] = opt(None, "null: the longest bucket of the shards")
    dropout: float = 0.0

    def validate(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r} (known: {', '.join(PRESETS)})")
        for k in ("n_layer", "n_head", "n_embd", "max_seq_len"):
            v = getattr(self, k)
            if v is not None and v < 1:
                raise ValueError(f"{k} must be positive")
        if not 0 <= self.dropout < 1:
            raise ValueError("dropout must be within [0, 1)")

    def resolve(self, vocab_size: int, max_seq_len: int) -> "GPTShape":
        p = PRESETS[self.preset]
        shape = GPTShape(vocab_size=vocab_size, max_seq_len=self.max_seq_len or max_seq_len,
                         n_layer=self.n_layer or p["n_layer"], n_head=self.n_head or p["n_head"],
                         n_embd=self.n_embd or p["n_embd"], dropout=self.dropout)
        if shape.n_embd % shape.n_head:
            raise ValueError(f"n_embd {shape.n_embd} is not a multiple of n_head {shape.n_head}")
        return shape


@dataclass(frozen=True)
class GPTShape:
    """The resolved shape of a model (what a checkpoint records and must match)."""

    vocab_size: int
    max_seq_len: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0


@dataclass
class DataConfig:
    tokens_per_step: int = opt(8192, "tokens per optimiser step (all workers); batch = tokens_per_step // L sequences")
    curriculum: Literal["uniform", "grow_p2"] = opt("grow_p2", "order of bucket lengths over training")
    cycles: int = opt(8, "grow_p2: number of short-to-long cycles (the paper's best: 8)")
    domain_weights: Optional[Union[str, dict[str, float]]] = opt(None, "{domain: w} or a JSON file; null = natural")
    eval_fraction: float = opt(0.05, "of each domain's sequences, held out for eval (never trained on)")
    max_eval_sequences: int = opt(2000, "cap on the eval split (per domain), to bound eval time")
    split_seed: int = opt(0, "seed of the eval split alone: runs with other training seeds are evaluated alike")

    def validate(self) -> None:
        if self.tokens_per_step < 1:
            raise ValueError("tokens_per_step must be positive")
        if self.cycles < 1:
            raise ValueError("cycles must be positive")
        if not 0 <= self.eval_fraction < 1:
            raise ValueError("eval_fraction must be within [0, 1)")


@dataclass
class OptimConfig:
    lr: Optional[float] = opt(None, "peak learning rate; null = by preset (tiny 3e-3, 124m 6e-4, 350m 3e-4)")
    min_lr_ratio: float = opt(0.1, "cosine decays to lr x this at the last step")
    warmup_steps: int = opt(20, "linear warm-up from 0")
    weight_decay: float = opt(0.1, "AdamW, on matrices only (not norms, not positions)")
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = opt(1.0, "clip the global gradient norm; 0 = off")
    grad_accum: int = opt(1, "micro-batches per step (each worker's batch is split this many ways)")

    def validate(self) -> None:
        if self.lr is not None and self.lr <= 0:
            raise ValueError("lr must be positive")
        if self.grad_accum < 1 or self.warmup_steps < 0 or self.grad_clip < 0:
            raise ValueError("grad_accum must be >= 1, warmup_steps and grad_clip >= 0")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be within [0, 1]")


@dataclass
class Rho1Config:
    reference: Optional[str] = opt(None, "reference checkpoint (dir, RUN/checkpoints/latest or a run dir); null = off")
    ratio: float = opt(0.6, "fraction of each batch's tokens trained on (the top by excess loss)")
    sidecar: Literal["auto", "require", "off"] = opt("auto", "reference losses from score-tokens' sidecar files")

    def validate(self) -> None:
        if not 0 < self.ratio <= 1:
            raise ValueError("ratio must be within (0, 1]")


@dataclass
class TrainConfig:
    shards: Optional[str] = opt(None, "token shard directory (manifest.json); in a pipeline: decompose's output")
    output: Optional[str] = opt(None, "metrics.jsonl, final.json, checkpoints/; in a pipeline: OUT/train")
    model: ModelConfig = opt(ModelConfig, "the GPT's shape")
    data: DataConfig = opt(DataConfig, "batches, curriculum, domain weights, eval split")
    optim: OptimConfig = opt(OptimConfig, "AdamW and its schedule")
    rho1: Rho1Config = opt(Rho1Config, "RHO-1 selective language modelling")
    steps: int = opt(300, "optimiser steps")
    seed: int = opt(0, "model init and every data draw")
    device: Literal["auto", "cpu", "cuda"] = opt("auto", "auto: cuda when present")
    compile: Optional[bool] = opt(None, "torch.compile; null = on with cuda")
    precision: Literal["auto", "bf16", "fp32"] = opt("auto", "auto: bf16 autocast on cuda, fp32 on cpu")
    loss: Literal["auto", "fused", "plain"] = opt("auto", "the head's cross-entropy: fused never materialises the "
                                                  "logits (Liger Kernel on cuda when installed, else chunked torch); "
                                                  "auto = plain until a GPU run measures fused faster")
    eval_every: int = opt(50, "steps between evaluations on the held-out split (and at the end); 0 = end only")
    checkpoint_every: int = opt(100, "steps between checkpoints (and at the end); 0 = end only")
    keep_checkpoints: int = opt(2, "newest checkpoints kept; 0 = all")
    log_every: int = opt(1, "steps between metrics.jsonl lines")
    workers: int = opt(1, "data-parallel workers (Ray Train); 1 = in this process")
    threads: Optional[int] = opt(None, "CPU threads per worker (torch); null = torch's default")
    cache_dir: Optional[str] = opt(None, "s3:// shards are downloaded here and memory-mapped; an s3:// output is "
                                   "mirrored here (null = ~/.cache/datacurate)")
    cache_max_gb: float = opt(50.0, "the shard cache holds at most this much (0 = no cap)")

    def validate(self) -> None:
        if self.steps < 1:
            raise ValueError("steps must be positive")
        if min(self.eval_every, self.checkpoint_every, self.keep_checkpoints) < 0 or self.log_every < 1:
            raise ValueError("eval_every, checkpoint_every, keep_checkpoints must be >= 0, log_every >= 1")
        if self.workers < 1:
            raise ValueError("workers must be >= 1")

    @property
    def lr(self) -> float:
        return self.optim.lr if self.optim.lr is not None else DEFAULT_LR[self.model.preset]


@dataclass
class DoremiConfig:
    reference_steps: int = opt(200, "steps of the reference model (ignored with `reference`)")
    proxy_steps: int = opt(200, "steps of the Group-DRO proxy")
    eta: float = opt(1.0, "step size of the domain-weight update")
    smoothing: float = opt(1e-3, "c: mix of the uniform distribution into the weights each step")
    reference_weights: Union[str, dict[str, float]] = opt("natural", "natural token shares, {domain: w} or a JSON file")
    reference: Optional[str] = opt(None, "an existing reference checkpoint instead of training one (round 1)")
    rounds: int = opt(1, "iterated DoReMi: round r+1's reference mixture = round r's weights")
    sidecar: str = opt("auto", "reference losses from score-tokens' sidecar: auto | require | off")

    def validate(self) -> None:
        if self.eta <= 0:
            raise ValueError("eta must be positive")
        if not 0 <= self.smoothing < 1:
            raise ValueError("smoothing must be within [0, 1)")
        if min(self.reference_steps, self.proxy_steps, self.rounds) < 1:
            raise ValueError("reference_steps, proxy_steps and rounds must be >= 1")
        if self.sidecar not in ("auto", "require", "off"):
            raise ValueError("sidecar must be auto, require or off")


@dataclass
class DoremiRunConfig(TrainConfig):
    doremi: DoremiConfig = opt(DoremiConfig, "the DoReMi keys; the others train the reference and the proxy")


@dataclass
class GroupDROConfig:
    """A DoReMi proxy's objective (``run_doremi`` gives it to the loop beside a plain :class:`TrainConfig`);
    rank 0 writes ``weights.jsonl`` and ``domain_weights.json`` into ``out_dir``."""

    reference: str
    eta: float
    smoothing: float
    sidecar: str
    out_dir: str


def load_train_config(source: str | dict | None = None, overrides: list[str] | None = None, cls: type = TrainConfig,
                      **given) -> TrainConfig:
    """YAML file / dict / nothing + ``--set`` overrides + CLI values (``shards=``, ``output=``,
    ``workers=``; None = not given) -> a validated :class:`TrainConfig`."""
    if source is None:
        raw = {}
    elif isinstance(source, dict):
        raw = copy.deepcopy(source)
    else:
        raw = read_yaml(source, "training config")
        section = "doremi" if cls is not TrainConfig and "doremi" in raw and "model" not in raw else "train"
        raw = raw[section] if set(raw) == {section} else raw
    for item in overrides or []:
        set_key(raw, *parse_override(item), cls)
    for k, v in given.items():
        if v is not None:
            raw[k] = v
    cfg = from_dict(cls, raw, "train" if cls is TrainConfig else "doremi")
    if not cfg.shards:
        raise ConfigError("train: no shards given (--shards DIR or shards: in the YAML)")
    if not cfg.output:
        raise ConfigError("train: no output given (--output DIR or output: in the YAML)")
    return cfg
