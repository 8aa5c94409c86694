"""Typed configuration: dataclasses loaded from YAML, strict about keys and types.

Merge order is defaults <- YAML <- ``--set key=value`` overrides. Every stage module
owns its ``XxxConfig`` dataclass; this module owns the root tree and the loader.
A misspelt key, a wrong type or an unknown stage is a :class:`ConfigError` raised
before any work starts, with a one-line message naming the offending path.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from datacurate.coerce import ConfigError, coerce, from_dict, unknown_key  # noqa: F401 - re-exported
from datacurate.input_config import InputConfig  # noqa: F401 - re-exported
from datacurate.registry import STAGES


@dataclass
class OutputConfig:
    path: str = "out"
    compression: str = "zstd"
    overwrite: bool = True  # replace kept/, rejected/ and stats.json of an earlier run
    keep_work: bool = False  # keep OUT/_work (intermediate parts and decisions of global stages)


@dataclass
class RayConfig:
    address: Optional[str] = None  # None: start an embedded local Ray; "auto" or ray://... for a cluster
    num_cpus: Optional[int] = None  # local Ray only; None = all cores
    object_store_memory_mb: Optional[int] = None  # local Ray only; None: 512 MiB per CPU
    progress: bool = True  # Ray Data progress bars and the live funnel line
    # a global stage whose input holds fewer documents runs all its phases in one task
    # (same output; a Ray Data groupby or join costs seconds however small the data); 0: never
    small_input_docs: int = 20_000


@dataclass
class StageSpec:
    name: str
    config: Any  # the stage's own config dataclass instance
    cls: Any = field(default=None, repr=False, compare=False)  # the stage class (default: the registry's)

    def __post_init__(self):
        self.cls = self.cls or STAGES[self.name]


@dataclass
class PipelineConfig:
    input: InputConfig = field(default_factory=InputConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    stages: list[StageSpec] = field(default_factory=list)
    doremi: Any = None  # datacurate.train.doremi.DoremiRunConfig: domain weights from the shards, for train
    train: Any = None  # datacurate.train.config.TrainConfig: train on the shards after curation


# ----------------------------------------------------------------------------- loading


def to_dict(obj: Any) -> Any:
    """The resolved configuration as plain YAML-able data."""
    if isinstance(obj, StageSpec):
        return {obj.name: to_dict(obj.config)}
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` -> (["a","b","c"], value parsed as a YAML scalar or list)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {item!r}: empty key")
    return parts, value


def _apply_override(raw: dict, parts: list[str], value: Any) -> None:
    head = parts[0]
    if head in ("input", "output") and isinstance(raw.get(head), (str, list)):
        raw[head] = {"path": raw[head]}
    if head in ("train", "doremi"):
        node = raw.get(head)
        if not isinstance(node, dict):
            node = raw[head] = {}
        for p in parts[1:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        if len(parts) < 2:
            raise ConfigError(f"--set {head}: name a key, e.g. {head}.seed=1")
        node[parts[-1]] = value
        return
    if head in ("input", "output", "ray"):
        node = raw.setdefault(head, {}) or {}
        raw[head] = node
        for p in parts[1:-1]:
            node = node.setdefault(p, {})
        if len(parts) == 1:
            raw[head] = value
        else:
            node[parts[-1]] = value
        return
    # stage override: "<stage name or index>.key[.sub]=value"
    stages = raw.get("stages") or []
    target = None
    for i, entry in enumerate(stages):
        name = next(iter(entry)) if isinstance(entry, dict) and entry else entry
        if head == name or head == str(i):
            target = (i, name)
            break
    if target is None:
        names = ["input", "output", "ray", "doremi", "train"] + [
            next(iter(e)) if isinstance(e, dict) and e else str(e) for e in stages]
        near = difflib.get_close_matches(head, names, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else f" (sections: {', '.join(names)})"
        raise ConfigError(f"--set {'.'.join(parts)}: no section or stage '{head}' in this pipeline{hint}")
    i, name = target
    if not isinstance(stages[i], dict):
        stages[i] = {name: {}}
    node = stages[i][name]
    if node is None:
        node = stages[i][name] = {}
    for p in parts[1:-1]:
        node = node.setdefault(p, {})
    if len(parts) < 2:
        raise ConfigError(f"--set {'.'.join(parts)}: name a parameter, e.g. {head}.param=value")
    node[parts[-1]] = value


def read_yaml(source: str | Path, what: str) -> dict:
    """A YAML file whose top level is a mapping, or a one-line :class:`ConfigError`."""
    p = Path(source)
    if not p.is_file():
        raise ConfigError(f"{what} file not found: {source}")
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"{source}: invalid YAML{at}: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    return raw


def load_config(
    source: str | Path | dict,
    overrides: list[str] | None = None,
    input_path: str | list[str] | None = None,
    output_path: str | None = None,
    ray_address: str | None = None,
) -> PipelineConfig:
    """YAML file (or dict) + overrides -> validated :class:`PipelineConfig`."""
    raw = dict(source) if isinstance(source, dict) else read_yaml(source, "pipeline")
    for item in overrides or []:
        _apply_override(raw, *parse_override(item))
    if input_path is not None:
        _apply_override(raw, ["input", "path"], input_path)
    if output_path is not None:
        _apply_override(raw, ["output", "path"], output_path)
    if ray_address is not None:
        _apply_override(raw, ["ray", "address"], ray_address)

    known = ["input", "output", "ray", "stages", "doremi", "train"]
    for key in raw:
        if key not in known:
            raise unknown_key(str(key), known, "pipeline")
    cfg = PipelineConfig()
    inp = raw.get("input")
    if isinstance(inp, (str, list)):
        inp = {"path": inp}
    cfg.input = coerce(inp, InputConfig, "input")
    if not cfg.input.path:
        raise ConfigError("input: no input path given (set 'input:' in the YAML or pass --input)")
    out = raw.get("output")
    if isinstance(out, str):
        out = {"path": out}
    cfg.output = coerce(out, OutputConfig, "output")
    cfg.ray = coerce(raw.get("ray"), RayConfig, "ray")
    stages_raw = raw.get("stages") or []
    if not isinstance(stages_raw, list):
        raise ConfigError("stages: expected a list of '- name: {params}' entries")
    for i, entry in enumerate(stages_raw):
        if isinstance(entry, str):
            entry = {entry: {}}
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(f"stages[{i}]: expected '- name: {{params}}', got {entry!r}")
        name, params = next(iter(entry.items()))
        if name not in STAGES:
            raise unknown_key(str(name), sorted(STAGES), f"stages[{i}]", what="stage")
        cfg.stages.append(StageSpec(name, coerce(params, STAGES[name].Config, f"stages[{i}].{name}")))
    check_order(cfg.stages)
    if raw.get("doremi") is not None:
        cfg.doremi = pipeline_train_config(raw["doremi"], cfg, "doremi")
    if raw.get("train") is not None:
        cfg.train = pipeline_train_config(raw["train"], cfg, "train")
        if cfg.doremi is not None and cfg.train.data.domain_weights is None:
            import os

            cfg.train.data.domain_weights = os.path.join(cfg.doremi.output, "domain_weights.json")
    return cfg


def pipeline_train_config(raw: Any, cfg: PipelineConfig, section: str):
    """The ``train:`` / ``doremi:`` sections: shards default to decompose's output, output to
    OUT/train / OUT/doremi. In ``doremi:`` the DoReMi keys (proxy_steps, eta, ...) sit beside
    the training keys (model, data, seed, ...)."""
    import dataclasses
    import os

    from datacurate.train.config import TrainConfig
    from datacurate.train.doremi import DoremiConfig, DoremiRunConfig

    cls = TrainConfig if section == "train" else DoremiRunConfig
    if section == "doremi" and isinstance(raw, dict):
        own = {f.name for f in dataclasses.fields(DoremiConfig)}
        raw = {**{k: v for k, v in raw.items() if k not in own},
               "doremi": {**(raw.get("doremi") or {}), **{k: v for k, v in raw.items() if k in own}}}
    tc = coerce(raw, cls, section)
    if tc.shards is None:
        dec = next((s for s in cfg.stages if s.cls.writes_shards), None)
        if dec is None:
            raise ConfigError(f"{section}: the pipeline has no decompose stage; set {section}.shards")
        tc.shards = dec.config.output or os.path.join(cfg.output.path, "shards")
    if tc.output is None:
        tc.output = os.path.join(cfg.output.path, section)
    return tc


def check_order(specs: list[StageSpec]) -> None:
    """Every stage's ``requires`` (e.g. decompose needs tokenize) runs before it, and no
    stage that rewrites text runs after tokenize."""
    for i, spec in enumerate(specs):
        for need in spec.cls.requires:
            if need not in [s.name for s in specs[:i]]:
                raise ConfigError(f"stages[{i}].{spec.name}: needs a '{need}' stage before it")
        tokens_made = any(s.cls.makes_tokens for s in specs[:i])
        if tokens_made and spec.cls.rewrites_text(spec.config):
            raise ConfigError(f"stages[{i}].{spec.name}: rewrites the text of kept documents, so it must run "
                              "before tokenize (the tokens would be of the old text)")


def dump_config(cfg: PipelineConfig) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, allow_unicode=True)
