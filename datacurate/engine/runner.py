"""Run a pipeline end to end: check, plan, execute on Ray, write the report."""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import time
from typing import Callable

from datacurate.config import ConfigError, PipelineConfig, check_order, dump_config
from datacurate.engine.stats import finalize, format_funnel, merge
from datacurate.io import plan_reads
from datacurate.schema import INPUT_STAGE

OWNED = ("kept", "rejected", "stats.json", "config.yaml", "_work", "shards")


def _owned(cfg: PipelineConfig) -> tuple[str, ...]:
    """What a run writes under OUT: OWNED, plus train/ and doremi/ when its sections write there."""
    extra = tuple(name for name, sec in (("doremi", cfg.doremi), ("train", cfg.train))
                  if sec is not None and os.path.abspath(sec.output) == os.path.abspath(os.path.join(cfg.output.path, name)))
    return OWNED + extra


def check_model_sections(cfg: PipelineConfig) -> None:
    """Before any curation: what the doremi: / train: sections read that exists already
    (a reference checkpoint, a domain-weights file) is there, so a long curation does not
    end in a one-line error that could have come first."""
    from datacurate.train import checkpoint

    for name, sec in (("doremi", cfg.doremi), ("train", cfg.train)):
        if sec is None:
            continue
        refs = [sec.rho1.reference] + ([sec.doremi.reference] if name == "doremi" else [])
        for ref in filter(None, refs):
            checkpoint.resolve(ref)
        w = sec.data.domain_weights
        from_doremi = cfg.doremi is not None and w == os.path.join(cfg.doremi.output, "domain_weights.json")
        if isinstance(w, str) and not from_doremi and not os.path.isfile(w):
            raise ConfigError(f"{name}.data.domain_weights: file not found: {w}")


def prepare_output(cfg: PipelineConfig) -> None:
    out = cfg.output.path
    if os.path.exists(out) and not os.path.isdir(out):
        raise ConfigError(f"output: {out} exists and is not a directory")
    present = [p for p in _owned(cfg) if os.path.exists(os.path.join(out, p))]
    if present and not cfg.output.overwrite:
        raise ConfigError(f"output: {out} already holds a run ({', '.join(present)}); set output.overwrite: true")
    for p in present:
        full = os.path.join(out, p)
        shutil.rmtree(full) if os.path.isdir(full) else os.remove(full)
    os.makedirs(out, exist_ok=True)


class _Progress:
    def __init__(self, n_tasks: int, enabled: bool, stream=sys.stderr, every: float = 2.0):
        self.n_tasks, self.enabled, self.stream, self.every = n_tasks, enabled, stream, every
        self.t0 = self.last = time.perf_counter()
        self.stats: dict = {}

    def __call__(self, task_stats: dict) -> None:
        merge(self.stats, task_stats)
        now = time.perf_counter()
        if self.enabled and (now - self.last >= self.every or self.stats.get("tasks") == self.n_tasks):
            self.last = now
            s = self.stats
            rej = sum(s.get("rejected", {}).values())
            rate = s.get("read", 0) / max(now - self.t0, 1e-9)
            print(f"[datacurate] tasks {s.get('tasks', 0)}/{self.n_tasks}  read {s.get('read', 0):,}  "
                  f"kept {s.get('kept', 0):,}  rejected {rej:,}  {rate:,.0f} docs/s",
                  file=self.stream, flush=True)


def run_pipeline(cfg: PipelineConfig, progress: bool | None = None, log: Callable[[str], None] | None = None) -> dict:
    """Run ``cfg``; return the stats report (also written to OUT/stats.json)."""
    from datacurate.engine import global_ops, ray_backend
    from datacurate.engine.process import build_stages, work_dir

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    tasks = plan_reads(cfg.input)  # fails fast on missing or unreadable inputs
    check_order(cfg.stages)
    build_stages(cfg.stages)  # fails fast on a missing model file before Ray starts
    for spec in cfg.stages:
        if spec.name == "decompose":
            from datacurate.engine.token_ops import check_decompose

            check_decompose(spec, cfg)
    check_model_sections(cfg)
    prepare_output(cfg)
    with open(os.path.join(cfg.output.path, "config.yaml"), "w") as f:
        f.write(dump_config(cfg))
    show = cfg.ray.progress if progress is None else progress
    if show:
        log(f"[datacurate] {len(tasks)} read tasks over {len({t.path for t in tasks})} files -> {cfg.output.path}")
    started = ray_backend.init_ray(cfg.ray)
    tracker = _Progress(len(tasks), show)
    global_info: dict = {}
    try:
        segments = ray_backend.segments_of(cfg)
        for seg in segments:
            if seg.global_before is None:
                items = [json.dumps(t.to_dict()) for t in tasks]
            else:
                name = seg.global_before.name
                if show:
                    log(f"[datacurate] {name}: global phases")
                global_info[name] = global_ops.run_global(seg.global_before, cfg, seg.index)
                items = sorted(glob.glob(os.path.join(work_dir(cfg.output.path, seg.index - 1), "*.parquet")))
                tracker.n_tasks += len(items)
            ray_backend.run_segment(cfg, seg.index, items, tracker)
    finally:
        if started:
            ray_backend.shutdown()
    if not cfg.output.keep_work:
        shutil.rmtree(os.path.join(cfg.output.path, "_work"), ignore_errors=True)
    for name, info in global_info.items():
        st = tracker.stats.setdefault("stages", {}).setdefault(name, {"in": 0, "kept": 0, "rejected": {}, "seconds": 0.0})
        st["seconds"] = st.get("seconds", 0.0) + info["phase_seconds"]
        merge(st.setdefault("metrics", {}), info["metrics"])
    report = finalize(tracker.stats, [INPUT_STAGE] + [s.name for s in cfg.stages], time.perf_counter() - t0)
    if not report["totals"]["accounted"]:
        _write_stats(cfg, report)
        raise RuntimeError(f"accounting mismatch: {report['totals']}")
    if cfg.doremi is not None:
        report["doremi"] = run_domain_weights(cfg.doremi, cfg.ray, log if show else None)
    if cfg.train is not None:
        report["train"] = run_training(cfg.train, cfg.ray, log if show else None)
    _write_stats(cfg, report)  # last: its presence marks a complete run
    return report


def _write_stats(cfg: PipelineConfig, report: dict) -> None:
    tmp = os.path.join(cfg.output.path, "stats.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, os.path.join(cfg.output.path, "stats.json"))


def run_domain_weights(dc, ray_cfg, log=None) -> dict:
    """The pipeline's ``doremi:`` section: DoReMi's weights for the train: section."""
    from datacurate.train.doremi import run_doremi

    quiet = log or (lambda m: None)
    if dc.workers > 1:
        from datacurate.engine.train_ray import run_train

        return run_doremi(dc, lambda c, r, o: run_train(c, resume=r, ray_cfg=ray_cfg, objective=o), log=quiet)
    from datacurate.train.loop import train

    return run_doremi(dc, lambda c, r, o: train(c, resume=r, objective=o, log=quiet), log=quiet)


def run_training(tc, ray_cfg, log=None) -> dict:
    """The pipeline's ``train:`` section on its shards: in this process, or on Ray Train
    with ``workers > 1``."""
    if tc.workers > 1:
        from datacurate.engine.train_ray import run_train

        return run_train(tc, ray_cfg=ray_cfg)
    from datacurate.train.loop import train

    return train(tc, log=log or (lambda m: None))


__all__ = ["run_pipeline", "format_funnel"]
