"""Typed configuration of ``datacurate train`` (and the ``train:`` section of a pipeline).

The same rules as the pipelines' (:mod:`datacurate.config`): defaults <- YAML <-
``--set key=value``; an unknown key is a one-line error with a did-you-mean; the
resolved configuration is saved beside the outputs (``OUT/config.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from datacurate.config import ConfigError, from_dict, parse_override, read_yaml
from datacurate.train.data import DataConfig
from datacurate.train.model import ModelConfig

DEFAULT_LR = {"tiny": 3e-3, "124m": 6e-4, "350m": 3e-4}  # GPT-3 paper's Table 2.1 for 125M / 350M


@dataclass
class OptimConfig:
    lr: Optional[float] = None  # peak learning rate; null = by preset (tiny 3e-3, 124m 6e-4, 350m 3e-4)
    min_lr_ratio: float = 0.1  # cosine decays to lr x this at the last step
    warmup_steps: int = 20  # linear warm-up from 0
    weight_decay: float = 0.1  # AdamW, on matrices only (not norms, not positions)
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # clip the global gradient norm; 0 = off
    grad_accum: int = 1  # micro-batches per step (each worker's batch is split this many ways)

    def validate(self) -> None:
        if self.lr is not None and self.lr <= 0:
            raise ValueError("lr must be positive")
        if self.grad_accum < 1 or self.warmup_steps < 0 or self.grad_clip < 0:
            raise ValueError("grad_accum must be >= 1, warmup_steps and grad_clip >= 0")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be within [0, 1]")


@dataclass
class Rho1Config:
    reference: Optional[str] = None  # reference checkpoint (dir, RUN/checkpoints/latest or a run dir); null = off
    ratio: float = 0.6  # fraction of each batch's tokens trained on (the top by excess loss)
    sidecar: Literal["auto", "require", "off"] = "auto"  # reference losses from score-tokens' sidecar files

    def validate(self) -> None:
        if not 0 < self.ratio <= 1:
            raise ValueError("ratio must be within (0, 1]")


@dataclass
class TrainConfig:
    shards: Optional[str] = None  # token shard directory (manifest.json); in a pipeline: decompose's output
    output: Optional[str] = None  # metrics.jsonl, final.json, checkpoints/; in a pipeline: OUT/train
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    rho1: Rho1Config = field(default_factory=Rho1Config)
    steps: int = 300  # optimiser steps
    seed: int = 0  # model init and every data draw
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: cuda when present
    compile: Optional[bool] = None  # torch.compile; null = on with cuda
    eval_every: int = 50  # steps between evaluations on the held-out split (and at the end); 0 = end only
    checkpoint_every: int = 100  # steps between checkpoints (and at the end); 0 = end only
    keep_checkpoints: int = 2  # newest checkpoints kept; 0 = all
    log_every: int = 1  # steps between metrics.jsonl lines
    workers: int = 1  # data-parallel workers (Ray Train) ; 1 = in this process
    threads: Optional[int] = None  # CPU threads per worker (torch); null = torch's default
    # s3:// shards are downloaded here and memory-mapped; an s3:// output is mirrored here
    # (null = ~/.cache/datacurate); the shard cache holds at most cache_max_gb (0 = no cap)
    cache_dir: Optional[str] = None
    cache_max_gb: float = 50.0

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


def set_path(raw: dict, parts: list[str], value, where: str = "--set") -> None:
    node = raw
    for p in parts[:-1]:
        if node.get(p) is None:
            node[p] = {}
        if not isinstance(node[p], dict):
            raise ConfigError(f"{where} {'.'.join(parts)}: '{p}' is not a section")
        node = node[p]
    node[parts[-1]] = value


def load_train_config(source: str | dict | None = None, overrides: list[str] | None = None, cls: type = TrainConfig,
                      **given) -> TrainConfig:
    """YAML file / dict / nothing + ``--set`` overrides + CLI values (``shards=``, ``output=``,
    ``workers=``; None = not given) -> a validated :class:`TrainConfig`."""
    if source is None:
        raw = {}
    elif isinstance(source, dict):
        raw = dict(source)
    else:
        raw = read_yaml(source, "training config")
        section = "doremi" if cls is not TrainConfig and "doremi" in raw and "model" not in raw else "train"
        raw = raw[section] if set(raw) == {section} else raw
    for item in overrides or []:
        set_path(raw, *parse_override(item))
    for k, v in given.items():
        if v is not None:
            raw[k] = v
    cfg = from_dict(cls, raw, "train" if cls is TrainConfig else "doremi")
    if not cfg.shards:
        raise ConfigError("train: no shards given (--shards DIR or shards: in the YAML)")
    if not cfg.output:
        raise ConfigError("train: no output given (--output DIR or output: in the YAML)")
    return cfg
