"""Typed configuration: dataclasses loaded from YAML, strict about keys and types.

Merge order is defaults <- YAML <- ``--set key=value`` overrides. Every stage module
owns its ``XxxConfig`` dataclass; this module owns the root tree and the loader.
A misspelt key, a wrong type or an unknown stage is a :class:`ConfigError` raised
before any work starts, with a one-line message naming the offending path.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import os
from dataclasses import dataclass
from typing import Any, Optional

import yaml

from datacurate.core.coerce import (ConfigError, coerce, opt, parse_override, read_yaml,  # noqa: F401
                               set_key, unknown_key)
from datacurate.configs.input import InputConfig  # noqa: F401 - re-exported
from datacurate.registry import STAGES
from datacurate.stages.classifier_keys import split_calibration
from datacurate.text import words
from datacurate.configs.train import DoremiConfig, DoremiRunConfig, TrainConfig


@dataclass
class OutputConfig:
    path: str = "out"
    compression: str = "zstd"
    overwrite: bool = opt(True, "replace kept/, rejected/ and stats.json of an earlier run")
    keep_work: bool = opt(False, "keep OUT/_work (intermediate parts and decisions of global stages)")


@dataclass
class RayConfig:
    address: Optional[str] = opt(None, 'None: start an embedded local Ray; "auto" or ray://... for a cluster')
    num_cpus: Optional[int] = opt(None, "local Ray only; None = all cores")
    object_store_memory_mb: Optional[int] = opt(None, "local Ray only; None: 512 MiB per CPU")
    progress: bool = opt(True, "Ray Data progress bars and the live funnel line")
    dashboard: bool = opt(False, "local Ray only: start Ray's dashboard (http://127.0.0.1:8265); "
                           "it costs a run ~4 CPU-s of start-up (its head modules, a process each)")
    small_input_docs: int = opt(20_000, "a global stage whose input holds fewer documents runs all its phases in one "
                                "task (same output; a Ray Data groupby or join costs seconds however small); 0: never")


@dataclass
class StageSpec:
    name: str
    config: Any  # the stage's own config dataclass instance
    cls: Any = dataclasses.field(default=None, repr=False, compare=False)  # the stage class (default: the registry's)

    def __post_init__(self):
        self.cls = self.cls or STAGES[self.name].for_config(self.config)


@dataclass
class PipelineConfig:
    input: InputConfig = opt(InputConfig, "the documents to curate (a path, a list, or a mapping)")
    output: OutputConfig = opt(OutputConfig, "OUT: kept/, rejected/, stats.json, report.html")
    ray: RayConfig = opt(RayConfig, "where and how Ray runs")
    stages: list[StageSpec] = opt(list, "- name: {params}, in order")
    doremi: Optional[DoremiRunConfig] = opt(None, "DoReMi domain weights from the shards, for train")
    train: Optional[TrainConfig] = opt(None, "train on the shards after curation")


SECTIONS = [f.name for f in dataclasses.fields(PipelineConfig)]


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


def pipeline_override(raw: dict, parts: list[str], value: Any, where: str = "--set") -> None:
    """A ``--set`` on a pipeline's YAML: a stage's keys go by its name or index
    (``langid.min_score``, ``1.c4.enabled``), the sections' by theirs (``input.text_field``)."""
    stages = [next(iter(e)) if isinstance(e, dict) and e else str(e) for e in raw.get("stages") or []]
    if parts[0] not in SECTIONS and parts[0] not in stages + [str(i) for i in range(len(stages))]:
        near = difflib.get_close_matches(parts[0], SECTIONS + stages, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else f" (sections: {', '.join(SECTIONS + stages)})"
        raise ConfigError(f"{where} {'.'.join(parts)}: no section or stage '{parts[0]}' in this pipeline{hint}")
    set_key(raw, parts if parts[0] in SECTIONS else ["stages", *parts], value, PipelineConfig, where)


def load_config(
    source: str | os.PathLike | dict,
    overrides: list[str] | None = None,
    input_path: str | list[str] | None = None,
    output_path: str | None = None,
    ray_address: str | None = None,
) -> PipelineConfig:
    """YAML file (or dict) + overrides -> validated :class:`PipelineConfig`."""
    raw = copy.deepcopy(source) if isinstance(source, dict) else read_yaml(source, "pipeline")
    for item in overrides or []:
        pipeline_override(raw, *parse_override(item))
    for key, value in (("input", input_path), ("output", output_path), ("ray", ray_address)):
        if value is not None:
            set_key(raw, [key, "address" if key == "ray" else "path"], value, PipelineConfig)

    for key in raw:
        if key not in SECTIONS:
            raise unknown_key(str(key), SECTIONS, "pipeline")
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
        params, calib = split_calibration(STAGES[name], params)  # quality: {top_fraction: 0.1}
        cfg.stages.append(StageSpec(name, coerce(params, STAGES[name].Config, f"stages[{i}].{name}")))
        if calib is not None:
            cfg.stages.append(StageSpec("score_rank", coerce(calib, STAGES["score_rank"].Config, f"stages[{i}].{name}")))
    check_order(cfg.stages)
    if raw.get("doremi") is not None:
        cfg.doremi = pipeline_train_config(raw["doremi"], cfg, "doremi")
    if raw.get("train") is not None:
        cfg.train = pipeline_train_config(raw["train"], cfg, "train")
    return cfg


def pipeline_train_config(raw: Any, cfg: PipelineConfig, section: str):
    """The ``train:`` / ``doremi:`` sections: shards default to decompose's output, output to
    OUT/train / OUT/doremi, ``train:``'s domain weights to DoReMi's when ``cfg`` has a
    ``doremi:`` section. In ``doremi:`` the DoReMi keys (proxy_steps, eta, ...) sit beside
    the training keys (model, data, seed, ...)."""
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
    if section == "train" and cfg.doremi is not None and tc.data.domain_weights is None:
        tc.data.domain_weights = os.path.join(cfg.doremi.output, "domain_weights.json")
    return tc


def check_order(specs: list[StageSpec]) -> None:
    """Every stage's ``requires`` (e.g. decompose needs tokenize) runs before it, and no
    stage that rewrites text runs after tokenize, and no two stages share a key in
    stats.json or an output directory (their counts or files would mix)."""
    keys: dict[str, int] = {}
    dirs: dict[str, int] = {}
    for i, spec in enumerate(specs):
        key, d = spec.cls.stats_key(spec.config), spec.cls.output_dir(spec.config, "OUT")
        if key in keys:
            raise ConfigError(f"stages[{i}].{spec.name}: counted as '{key}' in stats.json, as stages[{keys[key]}] "
                              "is; a stage may appear twice only when its settings tell the two apart")
        if d is not None and d in dirs:
            raise ConfigError(f"stages[{i}].{spec.name}: writes {d}, as stages[{dirs[d]}] does; give one of them "
                              "another output directory")
        keys[key] = i
        if d is not None:
            dirs[d] = i
        for need in spec.cls.requires:
            if need not in [s.name for s in specs[:i]]:
                raise ConfigError(f"stages[{i}].{spec.name}: needs a '{need}' stage before it")
        tokens_made = any(s.cls.makes_tokens for s in specs[:i])
        if tokens_made and spec.cls.rewrites_text(spec.config):
            raise ConfigError(f"stages[{i}].{spec.name}: rewrites the text of kept documents, so it must run "
                              "before tokenize (the tokens would be of the old text)")


def check_words(specs: list[StageSpec]) -> None:
    """A pipeline whose stages cut text into words (``Stage.uses_words``) can load the word
    segmenter of every language it keeps (langid's ``languages``; without a keep-list, every
    language written without spaces): else one ConfigError naming the language, the package
    and the pip command, before any work (not a crash in a worker)."""
    if not any(spec.cls.uses_words for spec in specs):
        return
    keep = next((spec.config.languages for spec in specs if spec.name == "langid"), None)
    if isinstance(keep, dict):
        keep = list(keep)
    if not isinstance(keep, (list, tuple)) or not all(isinstance(x, str) for x in keep):
        keep = sorted(words.UNSPACED_LANGS)
    words.check_segmenters(keep)


def dump_config(cfg: PipelineConfig) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, allow_unicode=True)
