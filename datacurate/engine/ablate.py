"""``datacurate ablate``: every arm curated once, trained once per seed, evaluated, compared.

Per arm ``a`` (one unit after another in this process; with ``jobs`` > 1, or on a cluster,
as Ray tasks, ``jobs`` at a time, a seed after its arm's curation: :func:`_run_parallel`):

1. **curate**: the arm's pipeline on the shared input -> ``OUT/a/curated/`` (kept,
   rejected, shards, stats.json, report.html, and ``doremi/`` when the arm has a
   ``doremi:`` section) through :func:`~datacurate.engine.runner.run_pipeline`, on Ray as
   every run is;
2. **train** seed k -> ``OUT/a/seed-<k>/`` through the one launcher
   (:func:`~datacurate.engine.launch.launch_train`: this process, or Ray Train with
   ``budget.train.workers > 1`` or a Ray address);
3. **evaluate** the final checkpoint -> ``OUT/a/seed-<k>/eval.json``.

Then ``OUT/ablation.json`` (:func:`summarize`) and ``OUT/report.html``.

**Resume.** ``eval.json`` marks a seed done and ``stats.json`` (with its config hash) an
arm's curation; a kill at any moment leaves either a done unit, or one whose own
``--resume`` continues it (the pipeline's journal, the training checkpoints). ``--resume``
skips every done unit, says so, and ends with the same ``ablation.json``: it holds no
timings, and training on CPU is bit-for-bit reproducible from a checkpoint. Resuming with
another configuration is a one-line error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Callable, Optional

from datacurate import storage
from datacurate.ablation_config import AblationConfig, arm_pipeline, arm_train_config, config_sha256
from datacurate.config import ConfigError, to_dict
from datacurate.errors import doing
from datacurate.phases import faults
from datacurate.engine.launch import launch_train
from datacurate.intervals import excludes_zero, paired_difference, t_interval
from datacurate.report.scan import read_json as _read_json

STATE = "_ablate"  # under OUT: the configuration's hash


def _write_json(path: str, value) -> None:
    storage.write_text(path, json.dumps(value, indent=2))  # whole or not at all (a renamed temporary)


def _start(cfg: AblationConfig, resume: bool, log) -> None:
    """A fresh OUT (what an earlier ablation of these arms left goes), or the same
    configuration's unfinished one when resuming."""
    import yaml

    out, digest = cfg.output, config_sha256(cfg)
    state = _read_json(os.path.join(out, STATE, "config.json"))
    if resume and state is not None:
        if state["sha256"] != digest:
            raise ConfigError(f"--resume: the ablation in {out} has another configuration (sha256 "
                              f"{state['sha256'][:12]}, now {digest[:12]}); run without --resume to start over")
        return
    if resume:
        log(f"[ablate] --resume: no ablation in {out}; starting a new one")
    for name in [STATE, "ablation.json", "report.html", *cfg.arms]:
        p = os.path.join(out, name)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    os.makedirs(os.path.join(out, STATE))
    with open(os.path.join(out, "ablation.yaml"), "w") as f:
        yaml.safe_dump(to_dict(cfg), f, sort_keys=False)
    _write_json(os.path.join(out, STATE, "config.json"), {"sha256": digest})


class Evaluator:
    """The eval sets, read (and, with one tokenizer for all arms, encoded) once."""

    def __init__(self, cfg: AblationConfig):
        from datacurate.tokenizer import load_tokenizer
        from datacurate.train.downstream import read_task, read_texts

        self.cfg = cfg.eval
        self.texts = {name: read_texts(path) for name, path in self.cfg.text.items()}
        self.tasks = {name: read_task(path) for name, path in self.cfg.tasks.items()}
        self.fixed = self.cfg.tokenizer != "arm"
        self._encoded: dict[str, tuple] = {}
        if self.fixed:
            self.tok, self.info = load_tokenizer(self.cfg.tokenizer)

    def tokenizer(self, shards: str):
        from datacurate.tokenizer import load_tokenizer

        if self.fixed:
            return self.tok, self.info
        if shards not in self._encoded:
            self._encoded[shards] = load_tokenizer(os.path.join(shards, "tokenizer.json"))
        return self._encoded[shards]

    def describe(self) -> dict:
        if self.fixed:
            return {"mode": "fixed", "path": self.info.path, "sha256": self.info.sha256}
        return {"mode": "arm", "note": "each arm's own tokenizer: text losses compare only between arms "
                                       "with the same tokenizer"}

    def __call__(self, checkpoint_dir: str, shards: str, device: str) -> dict:
        from datacurate.train import checkpoint
        from datacurate.train.downstream import score_task, text_loss

        tok, info = self.tokenizer(shards)
        model, state = checkpoint.load_model(checkpoint_dir, device)
        if state.get("tokenizer_sha256") != info.sha256:
            raise ConfigError(f"eval: {checkpoint_dir} was trained on tokens of another tokenizer than {info.path} "
                              "(give the arm's stage that makes tokens this tokenizer, or set eval.tokenizer: arm)")
        if model.shape.max_seq_len < self.cfg.seq_len:
            raise ConfigError(f"eval.seq_len {self.cfg.seq_len} is longer than the model's max_seq_len "
                              f"{model.shape.max_seq_len} (set budget.model.max_seq_len or eval.seq_len)")

        def encode(s: str) -> list[int]:
            return tok.encode(s, add_special_tokens=False).ids

        scores, detail = {}, {}
        for name, docs in self.texts.items():
            key = (name, info.sha256)
            if key not in self._encoded:
                self._encoded[key] = [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]
            res = text_loss(model, self._encoded[key], info.eos_id, self.cfg.seq_len, device)
            scores[name], detail[name] = res["loss"], {"tokens": res["tokens"], "unit": "nats/token"}
        for name, items in self.tasks.items():
            res = score_task(model, items, encode, info.eos_id, model.shape.max_seq_len, device)
            scores[name] = res["acc_norm"]
            detail[name] = {"acc": res["acc"], "acc_norm": res["acc_norm"], "n": res["n"], "unit": "acc_norm"}
        return {"eval": scores, "detail": detail, "step": state["step"], "tokenizer_sha256": info.sha256}


def _curate(cfg: AblationConfig, arm: str, resume: bool, log) -> None:
    """One arm's curation (unit ``arm``), unless a complete one of this configuration is there."""
    from datacurate.engine.runner import config_sha256 as run_sha256, run_pipeline

    pcfg = arm_pipeline(cfg, arm)
    done = _read_json(os.path.join(pcfg.output.path, "stats.json"))
    if resume and done is not None and done.get("config_sha256") == run_sha256(pcfg):
        log(f"[ablate] resume: {arm}: curation was complete")
        return
    log(f"[ablate] {arm}: curation -> {pcfg.output.path}")
    with doing(f"arm {arm}"):
        run_pipeline(pcfg, resume=resume, log=_unit_log(log, arm), progress=True)


STEP_EVERY_S = 10.0  # a unit's training progress: a line at most this often (and its last step)
_SHOWN = {"[doremi]": "DoReMi", "[train]": "training", "[datacurate]": "curation"}


def _unit_log(log, unit: str):
    """One unit's lines in the ablation's log: its DoReMi phases, resume and warning notes,
    and its training steps (step, loss, ETA) at most every :data:`STEP_EVERY_S` seconds and
    the last; the curation's live progress and the training's other lines stay out."""
    last = [-STEP_EVERY_S]

    def say(msg: str) -> None:
        tag, _, rest = msg.partition("] ")
        if tag + "]" not in _SHOWN:
            return
        if msg.startswith("[train] step "):
            done, steps = rest.split()[1].split("/")
            if time.monotonic() - last[0] < STEP_EVERY_S and done != steps:
                return
            last[0] = time.monotonic()
        elif not (tag == "[doremi" or rest.startswith(("resume", "note", "warning"))):
            return
        log(f"[ablate] {unit}: {_SHOWN[tag + ']']} {rest}")

    return say


def _seed_done(cfg: AblationConfig, arm: str, seed: int) -> bool:
    return os.path.isfile(os.path.join(cfg.arm_dir(arm), f"seed-{seed}", "eval.json"))


def _train(cfg: AblationConfig, arm: str, seed: int, resume: bool, log, evaluator: Optional["Evaluator"] = None,
           device: Optional[str] = None) -> dict:
    """One seed of one arm (unit ``arm/seed-<k>``): train, evaluate, write ``eval.json``."""
    from datacurate.train.loop import pick_device

    faults.point("ablate", "train")  # the tests' fault injection: a unit has started
    tc = arm_train_config(cfg, arm, arm_pipeline(cfg, arm), seed)
    unit = f"{arm} seed {seed}"
    log(f"[ablate] {unit}: training {tc.steps} steps x {tc.data.tokens_per_step:,} tokens -> {tc.output}")
    with doing(unit):
        final = launch_train(tc, resume=resume, ray_cfg=cfg.ray, log=_unit_log(log, unit))
        evaluator = evaluator or Evaluator(cfg)
        log(f"[ablate] {unit}: eval on " + ", ".join([*evaluator.texts, *evaluator.tasks]))
        with doing("eval"):
            res = evaluator(final["checkpoint"], tc.shards, device or pick_device(cfg.budget.device))
    res.update(arm=arm, seed=seed, steps=tc.steps, tokens=final["tokens"])
    _write_json(os.path.join(tc.output, "eval.json"), res)
    log(f"[ablate] {arm} seed {seed}: " + "  ".join(f"{k} {v:.4f}" for k, v in res["eval"].items()))
    return res


def run_ablation(cfg: AblationConfig, resume: bool = False, log: Optional[Callable[[str], None]] = None,
                 report: bool = True) -> dict:
    """Run (or continue) the ablation ``cfg``; ``ablation.json``'s content."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    from datacurate.engine.ray.cluster import refuse_relative_in_job

    refuse_relative_in_job({"output": cfg.output})
    evaluator = Evaluator(cfg)  # the eval files are read before any work: a bad one fails now
    _start(cfg, resume, log)
    os.environ[faults.DRIVER_ENV] = str(os.getpid())  # the tests' fault injection (kill-driver)
    tc = arm_train_config(cfg, cfg.baseline, arm_pipeline(cfg, cfg.baseline), cfg.seeds[0])
    log(f"[ablate] {len(cfg.arms)} arms x {len(cfg.seeds)} seeds: each arm's curation, then its trainings "
        f"({tc.steps} steps x {tc.data.tokens_per_step:,} tokens), each followed by an eval on "
        + ", ".join([*evaluator.texts, *evaluator.tasks]))
    if cfg.jobs != 1 and (cfg.jobs or cfg.ray.address):
        with doing("the ablation's units on Ray"):
            _run_parallel(cfg, resume, log)
    else:  # one unit after another, in this process
        for arm in cfg.arms:
            _curate(cfg, arm, resume, log)
            faults.point("ablate", "curated")
            for seed in cfg.seeds:
                if resume and _seed_done(cfg, arm, seed):
                    log(f"[ablate] resume: {arm} seed {seed}: trained and evaluated before")
                    continue
                _train(cfg, arm, seed, resume, log, evaluator)
                faults.point("ablate", "seed")
    summary = summarize(cfg, evaluator.describe())
    _write_json(os.path.join(cfg.output, "ablation.json"), summary)
    if report:
        try:
            from datacurate.report import write_ablation_report

            write_ablation_report(cfg.output)
        except Exception as e:  # noqa: BLE001 - a failed page never fails a finished ablation
            log(f"[ablate] warning: report.html not written: {type(e).__name__}: {e}")
    return summary


def _run_parallel(cfg: AblationConfig, resume: bool, log) -> None:
    """Arms' curations and seeds' trainings as Ray tasks, a seed after its arm's curation;
    ``OUT/_ablate/units.jsonl`` says where and when each ran. At once: ``jobs``, else (on a
    cluster) as many training runs as its CPUs hold, ``budget.train.workers`` CPUs each."""
    from datacurate.engine.launch import on_ray_train
    from datacurate.engine.ray.jobs import Job, cluster_cpus, run_jobs
    from datacurate.engine.ray.cluster import init_ray

    started = init_ray(cfg.ray)
    limit = cfg.jobs or max(1, cluster_cpus() // max(1, int(cfg.budget.train.get("workers", 1))))
    # a training run in the task: one CPU (and one torch thread); on Ray Train the task only waits
    cpus = 0 if on_ray_train(arm_train_config(cfg, cfg.baseline, arm_pipeline(cfg, cfg.baseline), 0), cfg.ray) else 1
    jobs = []
    for arm in cfg.arms:
        jobs.append(Job(arm, _curate, (cfg, arm, resume, _stderr)))
        for seed in cfg.seeds:
            if resume and _seed_done(cfg, arm, seed):
                log(f"[ablate] resume: {arm} seed {seed}: trained and evaluated before")
                continue
            jobs.append(Job(f"{arm}/seed-{seed}", _train, (cfg, arm, seed, resume, _stderr), after=arm,
                            num_cpus=cpus))
    log(f"[ablate] {len(jobs)} units, up to {limit} at once on Ray")
    try:
        with open(os.path.join(cfg.output, STATE, "units.jsonl"), "a") as units:
            for job, out in run_jobs(jobs, limit):
                units.write(json.dumps({"unit": job.key, **{k: out[k] for k in ("host", "pid", "started", "ended")}})
                            + "\n")
                units.flush()
                log(f"[ablate] {job.key}: done ({out['ended'] - out['started']:.0f} s, {out['host']} pid {out['pid']})")
                faults.point("ablate", "seed" if job.after else "curated")
    finally:
        if started:
            from datacurate.engine.ray.cluster import shutdown

            shutdown()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _kept_tokens(shards: str) -> int:
    from datacurate.shards import read_manifest

    return sum(int(b["tokens"]) for b in read_manifest(shards)["buckets"].values())


def summarize(cfg: AblationConfig, tokenizer: dict) -> dict:
    """``ablation.json`` from the arms' ``eval.json`` files: per arm and eval the mean and
    Student-t interval over seeds; per arm the paired difference to the baseline."""
    lower_better = {name: True for name in cfg.eval.text} | {name: False for name in cfg.eval.tasks}
    arms: dict = {}
    for arm in cfg.arms:
        pcfg = arm_pipeline(cfg, arm)
        runs = [_read_json(os.path.join(arm_train_config(cfg, arm, pcfg, s).output, "eval.json")) for s in cfg.seeds]
        tc = arm_train_config(cfg, arm, pcfg, 0)
        kept = _kept_tokens(tc.shards)
        stats = _read_json(os.path.join(pcfg.output.path, "stats.json")) or {}
        trained = runs[0]["tokens"]
        arms[arm] = {
            "eval": {name: {**t_interval([r["eval"][name] for r in runs]), "seeds": [r["eval"][name] for r in runs]}
                     for name in lower_better},
            "kept_tokens": kept, "kept_docs": (stats.get("totals") or {}).get("kept"),
            "train_tokens": trained, "epochs": trained / kept if kept else None,
            "domain_weights": tc.data.domain_weights, "steps": tc.steps,
            "curated": os.path.relpath(pcfg.output.path, cfg.output)}
    base = arms[cfg.baseline]
    diffs = {}
    for arm in cfg.arms:
        if arm == cfg.baseline:
            continue
        diffs[arm] = {}
        for name, low in lower_better.items():
            a, b = arms[arm]["eval"][name]["seeds"], base["eval"][name]["seeds"]
            d = paired_difference(a, b)
            diffs[arm][name] = {**d, "seeds": [x - y for x, y in zip(a, b)], "distinguishable": excludes_zero(d["ci"]),
                                "better": (d["mean"] < 0) == low}
    return {"baseline": cfg.baseline, "seeds": cfg.seeds, "level": 0.95,
            "interval": "Student t over seeds (mean ± t_{0.975,n-1} s/sqrt(n)); diffs paired by seed",
            "units": {name: ("nats/token" if low else "acc_norm") for name, low in lower_better.items()},
            "lower_is_better": lower_better, "tokenizer": tokenizer,
            "budget": {"tokens": cfg.budget.tokens, "model": to_dict(cfg.budget.model), "seeds": cfg.budget.seeds},
            "arms": arms, "diffs": diffs}


def _ci(d: dict) -> str:
    lo, hi = d["ci"]
    return "n/a" if lo is None else f"[{lo:+.4f}, {hi:+.4f}]" if "distinguishable" in d else f"[{lo:.4f}, {hi:.4f}]"


def format_table(summary: dict) -> str:
    """The console table: per eval and arm, mean [95 % CI], the paired difference to the
    baseline, data kept and epochs; then which differences are outside seed noise."""
    base = summary["baseline"]
    lines, verdicts = [], []
    for name, unit in summary["units"].items():
        lines.append(f"{name} ({unit}, {'lower' if summary['lower_is_better'][name] else 'higher'} is better)")
        lines.append(f"  {'arm':<22}{'mean':>9}  {'95% CI':<20}{'diff vs ' + base:>14}  {'95% CI':<22}"
                     f"{'kept tokens':>12}{'epochs':>8}")
        for arm, a in summary["arms"].items():
            e = a["eval"][name]
            d = summary["diffs"].get(arm, {}).get(name)
            diff = f"{d['mean']:>+14.4f}  {_ci(d):<22}" if d else f"{'(baseline)':>14}  {'':<22}"
            lines.append(f"  {arm:<22}{e['mean']:>9.4f}  {_ci(e):<20}{diff}{a['kept_tokens']:>12,}"
                         f"{a['epochs']:>8.2f}")
            if d:
                verdicts.append(f"  {arm} vs {base} on {name}: {d['mean']:+.4f} "
                                + (("distinguishable from seed noise (" + ("better" if d["better"] else "worse") + ")")
                                   if d["distinguishable"] else "within seed noise (the interval holds 0)"))
    tok = summary["tokenizer"]
    lines.append(f"text losses with {'one tokenizer for all arms: ' + tok['path'] if tok['mode'] == 'fixed' else 'each arm' + chr(39) + 's own tokenizer'}; "
                 f"{len(summary['seeds'])} seeds, {summary['interval']}")
    return "\n".join(lines + ["differences to the baseline:"] + verdicts)
