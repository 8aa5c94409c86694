"""Typed configuration of ``datacurate ablate``: which recipes, which budget, which evals.

The same rules as a pipeline's (:mod:`datacurate.configs.pipeline`): defaults <- YAML <- ``--set
key=value``; an unknown key is a one-line error with a did-you-mean, before any work. The
keys (``input``, ``output``, ``arms``, ``baseline``, ``budget``, ``eval``, ``jobs``) are
the README's "Ablations" section. Arm ``a`` writes ``OUT/a/curated/`` (its run) and
``OUT/a/seed-<k>/``; a pipeline's own ``train:`` section is not used: every arm trains by
``budget`` plus its own override, so the recipes differ in data alone.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Literal, Optional

from datacurate.core.coerce import ConfigError, from_dict, opt, parse_override, read_yaml, set_key
from datacurate.configs.pipeline import PipelineConfig, RayConfig, load_config, pipeline_override, pipeline_train_config, to_dict
from datacurate.configs.train import ModelConfig

SET_BY_BUDGET = ("model", "steps", "seed", "device", "shards", "output")
HELDOUT = "heldout/"  # eval names of the held-out domains: heldout/<domain>


@dataclass
class ArmConfig:
    stages: Optional[list[Any]] = opt(None, "inline stages, as a pipeline's stages:")
    pipeline: Optional[str] = opt(None, "a pipeline YAML (its stages and doremi:; its train: is not used)")
    base: Optional[str] = opt(None, "a pipeline YAML changed by `set`")
    set: Optional[dict[str, Any]] = opt(None, "{stage.key: value} overrides of `base`, as --set", whole_keys=True)
    train: Optional[dict[str, Any]] = opt(None, "train keys for this arm only (e.g. data.domain_weights)")
    doremi: Optional[dict[str, Any]] = opt(None, "a pipeline doremi: section: train by DoReMi weights")

    def validate(self) -> None:
        given = [k for k in ("stages", "pipeline", "base") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("an arm is one of {stages: [...]}, {pipeline: PATH} or {base: PATH, set: {...}}"
                             + (f"; got {', '.join(given)}" if given else ""))
        if self.set is not None and self.base is None:
            raise ValueError("set: needs base: (the pipeline it changes)")
        for key in SET_BY_BUDGET:
            if key in (self.train or {}):
                raise ValueError(f"train.{key} is the budget's (the same for every arm)")


@dataclass
class BudgetConfig:
    model: ModelConfig = opt(ModelConfig, "the train model: keys (preset, n_layer, ...)")
    tokens: int = opt(1_000_000, "training tokens per run (arms that keep less data repeat it)")
    seeds: int = opt(3, "runs per arm, seeds 0 .. seeds-1 (a seed sets the init and the data order)")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    train: dict[str, Any] = opt(dict, "other train keys, the same for every arm")

    def validate(self) -> None:
        if self.tokens < 1 or self.seeds < 1:
            raise ValueError("tokens and seeds must be positive")
        for key in SET_BY_BUDGET:
            if key in self.train:
                raise ValueError(f"train.{key}: set budget.{key} instead" if key in ("model", "device") else
                                 f"train.{key} is decided by the ablation (tokens, seeds, OUT)")


@dataclass
class EvalConfig:
    text: dict[str, str] = opt(dict, "NAME: held-out text file (loss, nats per token)")
    tasks: dict[str, str] = opt(dict, "NAME: multiple-choice JSONL (acc_norm)")
    tokenizer: Optional[str] = opt(None, 'null: the shipped sample tokenizer for all arms; a path; "arm": each its own')
    seq_len: int = opt(256, "window of the text loss (every model's max_seq_len must reach it)")
    groups: dict[str, list[str]] = opt(dict, "NAME: [text evals]: per seed, the mean of their losses")
    curve_every: int = opt(0, "steps between evaluated checkpoints (a loss curve against tokens, FLOPs and "
                              "seconds); 0: the final model only")
    curve: list[str] = opt(list, "the text evals on the curve; empty: all of them")

    def validate(self) -> None:
        if set(self.text) & set(self.tasks):
            raise ValueError(f"names used twice: {sorted(set(self.text) & set(self.tasks))}")
        if self.seq_len < 2:
            raise ValueError("seq_len must be >= 2")
        if self.curve_every < 0:
            raise ValueError("curve_every must be >= 0")


@dataclass
class HoldoutConfig:
    fraction: float = opt(0.0, "share of each input domain's documents that no arm trains on, evaluated per "
                               "domain as heldout/<domain> (0: none)")
    seed: int = opt(0, "which documents: a hash of (seed, id)")
    max_docs: Optional[int] = opt(None, "held-out documents per domain at most (the first by input order)")

    def validate(self) -> None:
        if not 0.0 <= self.fraction < 1.0:
            raise ValueError("fraction must be in [0, 1)")
        if self.max_docs is not None and self.max_docs < 1:
            raise ValueError("max_docs must be >= 1")


@dataclass
class ReferenceConfig:
    input: Any = opt(None, "text a reference model trains on before the arms (a pipeline input:); an arm "
                           "uses it with train: {rho1: {reference: reference}}")
    steps: int = opt(100, "its steps (budget.model, budget.train's tokens_per_step, seed 0)")
    stages: list[Any] = opt(lambda: ["tokenize", "decompose"], "its curation (ends with decompose)")

    def validate(self) -> None:
        if self.steps < 1:
            raise ValueError("steps must be >= 1")


@dataclass
class AblationConfig:
    input: Any = opt(None, "a pipeline's input: (a path, a list, or a mapping)")
    output: str = "out/ablation"
    arms: dict[str, ArmConfig] = opt(dict, "NAME: the arm's recipe")
    baseline: Optional[str] = opt(None, "default: the first arm")
    budget: BudgetConfig = opt(BudgetConfig, "the training budget of every arm")
    eval: EvalConfig = opt(EvalConfig, "what every model is evaluated on")
    holdout: HoldoutConfig = opt(HoldoutConfig, "documents of the input that no arm sees, evaluated per domain")
    reference: ReferenceConfig = opt(ReferenceConfig, "a model trained once on its own text (RHO-1's reference)")
    ray: RayConfig = opt(RayConfig, "for every arm's curation")
    jobs: Optional[int] = opt(None, "units (an arm's curation, a seed's run) at once on Ray; null: 1 (cluster: CPUs)")

    def validate(self) -> None:
        if self.input is None:
            raise ValueError("no input given")
        if not self.eval.text and not self.eval.tasks and not self.holdout.fraction:
            raise ValueError("eval: give at least one text: or tasks: entry")
        for name, members in self.eval.groups.items():
            unknown = [m for m in members if m not in self.eval.text and not m.startswith(HELDOUT)]
            if not members or unknown:
                raise ValueError(f"eval.groups.{name}: " + (f"not a text eval: {', '.join(unknown)}" if unknown
                                                            else "name at least one text eval"))
        if self.jobs is not None and self.jobs < 1:
            raise ValueError("jobs must be >= 1")
        if len(self.arms) < 2:
            raise ValueError("arms: give at least two arms to compare")
        for name in self.arms:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise ValueError(f"arms: name {name!r} must be letters, digits, '_', '.', '-' (it names OUT/{name})")
        self.baseline = self.baseline or next(iter(self.arms))
        if self.baseline not in self.arms:
            raise ValueError(f"baseline: {self.baseline!r} is not an arm ({', '.join(self.arms)})")

    @property
    def seeds(self) -> list[int]:
        return list(range(self.budget.seeds))

    def arm_dir(self, arm: str) -> str:
        return os.path.join(self.output, arm)

    @property
    def reference_dir(self) -> str:
        return os.path.join(self.output, "_ablate", "reference")

    @property
    def holdout_dir(self) -> str:
        return os.path.join(self.output, "_ablate", "holdout")


def load_ablation_config(source: str | dict, overrides: list[str] | None = None) -> AblationConfig:
    raw = copy.deepcopy(source) if isinstance(source, dict) else read_yaml(source, "ablation")
    for item in overrides or []:
        set_key(raw, *parse_override(item), AblationConfig)
    cfg = from_dict(AblationConfig, raw, "ablation")
    for name in cfg.arms:  # every arm's pipeline and training config, checked before any work
        arm_train_config(cfg, name, arm_pipeline(cfg, name), 0)
    return cfg


def arm_pipeline(cfg: AblationConfig, name: str, raw_input: bool = False) -> PipelineConfig:
    """The arm's curation as a pipeline on the shared input (less the held-out documents,
    unless ``raw_input``), writing ``OUT/<arm>/curated`` (its shards there too, wherever
    its YAML put them); no train: section."""
    from datacurate.registry import STAGES

    arm, where = cfg.arms[name], f"arms.{name}"
    if arm.stages is not None:
        raw = {"stages": copy.deepcopy(arm.stages)}
    else:
        raw = read_yaml(arm.pipeline or arm.base, f"{where} pipeline")
        for key, value in (arm.set or {}).items():
            pipeline_override(raw, [p for p in str(key).split(".") if p], value, f"{where}.set:")
    raw.pop("train", None)
    if arm.doremi is not None:
        raw["doremi"] = copy.deepcopy(arm.doremi)
    for i, entry in enumerate(raw.get("stages") or []):  # shards go under the arm's own directory
        stage = next(iter(entry), None) if isinstance(entry, dict) else None
        if getattr(STAGES.get(stage), "writes_shards", False):
            raw["stages"][i] = {stage: {k: v for k, v in dict(entry[stage] or {}).items() if k != "output"}}
    arm_input = copy.deepcopy(cfg.input)
    if cfg.holdout.fraction and not raw_input:  # the rest of the input, written by engine.holdout before any curation
        arm_input = {**(arm_input if isinstance(arm_input, dict) else {}), "format": "jsonl",
                     "path": os.path.join(cfg.holdout_dir, "train.jsonl")}
        for key in ("text_field", "id_field", "domain_field", "rename"):
            arm_input.pop(key, None)
    raw.update(input=arm_input, output={"path": os.path.join(cfg.arm_dir(name), "curated")},
               ray=to_dict(cfg.ray))
    try:
        pcfg = load_config(raw)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    if not any(s.cls.writes_shards for s in pcfg.stages):
        raise ConfigError(f"{where}: no decompose stage: an arm must write token shards to train on "
                          "(end its stages with tokenize and decompose)")
    return pcfg


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def arm_train_config(cfg: AblationConfig, name: str, pcfg: PipelineConfig, seed: int):
    """Seed ``seed`` of arm ``name``: the budget's training, the arm's override, its shards,
    DoReMi's weights when the arm has a doremi: section and sets none itself."""
    raw = _merge(cfg.budget.train, cfg.arms[name].train or {})
    data = raw.setdefault("data", {})
    data.setdefault("eval_fraction", 0.0)
    tps = data.get("tokens_per_step", 8192)
    if not isinstance(tps, int) or tps < 1:
        raise ConfigError(f"arms.{name}: data.tokens_per_step must be a positive integer")
    if cfg.eval.curve_every:  # every step logged (its time and length), a checkpoint per curve point
        raw.update(log_every=1, checkpoint_every=cfg.eval.curve_every, keep_checkpoints=0)
    raw.update(model=to_dict(cfg.budget.model), steps=math.ceil(cfg.budget.tokens / tps), seed=seed,
               device=cfg.budget.device, output=os.path.join(cfg.arm_dir(name), f"seed-{seed}"))
    rho1 = raw.get("rho1") or {}
    if rho1.get("reference") == "reference":  # the ablation's own reference model
        if cfg.reference.input is None:
            raise ConfigError(f"arms.{name}: rho1.reference: reference needs a reference: section (its input:)")
        rho1["reference"] = os.path.join(cfg.reference_dir, "train", "checkpoints", "latest")
    try:
        tc = pipeline_train_config(raw, pcfg, "train")
    except ConfigError as e:
        raise ConfigError(f"arms.{name}: {e}") from None
    return tc


def reference_configs(cfg: AblationConfig):
    """The reference model's curation and training (``OUT/_ablate/reference/``)."""
    pcfg = load_config({"input": copy.deepcopy(cfg.reference.input), "stages": copy.deepcopy(cfg.reference.stages),
                        "output": {"path": os.path.join(cfg.reference_dir, "curated")}, "ray": to_dict(cfg.ray)})
    raw = copy.deepcopy(cfg.budget.train)
    raw.setdefault("data", {}).setdefault("eval_fraction", 0.0)
    raw.pop("rho1", None)
    raw.update(model=to_dict(cfg.budget.model), steps=cfg.reference.steps, seed=0, device=cfg.budget.device,
               output=os.path.join(cfg.reference_dir, "train"))
    return pcfg, pipeline_train_config(raw, pcfg, "train")


def config_sha256(cfg: AblationConfig) -> str:
    """What decides the results (not where OUT is, not the Ray settings)."""
    d = to_dict(cfg)
    for k in ("output", "ray"):
        d.pop(k, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()

