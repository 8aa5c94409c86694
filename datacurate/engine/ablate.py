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

from datacurate.formats import storage
from datacurate.configs.ablation import (HELDOUT, AblationConfig, arm_pipeline, arm_train_config, config_sha256,
                                        reference_configs)
from datacurate.configs.pipeline import ConfigError, to_dict
from datacurate.core.errors import doing
from datacurate.phases import faults
from datacurate.engine.launch import launch_train
from datacurate.core.intervals import excludes_zero, paired_difference, t_interval
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
        from datacurate.formats.tokenizer import load_tokenizer
        from datacurate.train.downstream import read_task, read_texts

        self.cfg = cfg.eval
        self.texts = {name: read_texts(path) for name, path in {**self.cfg.text, **heldout_texts(cfg)}.items()}
        self.tasks = {name: read_task(path) for name, path in self.cfg.tasks.items()}
        self.fixed = self.cfg.tokenizer != "arm"
        self._encoded: dict[str, tuple] = {}
        if self.fixed:
            self.tok, self.info = load_tokenizer(self.cfg.tokenizer)

    def tokenizer(self, shards: str):
        from datacurate.formats.tokenizer import load_tokenizer

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

    def __call__(self, checkpoint_dir: str, shards: str, device: str, names: Optional[list[str]] = None) -> dict:
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
            if names is not None and name not in names:
                continue
            key = (name, info.sha256)
            if key not in self._encoded:
                self._encoded[key] = [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]
            res = text_loss(model, self._encoded[key], info.eos_id, self.cfg.seq_len, device)
            scores[name], detail[name] = res["loss"], {"tokens": res["tokens"], "unit": "nats/token"}
        for name, items in self.tasks.items():
            if names is not None:
                continue
            res = score_task(model, items, encode, info.eos_id, model.shape.max_seq_len, device)
            scores[name] = res["acc_norm"]
            detail[name] = {"acc": res["acc"], "acc_norm": res["acc_norm"], "n": res["n"], "unit": "acc_norm"}
        return {"eval": scores, "detail": detail, "step": state["step"], "tokenizer_sha256": info.sha256,
                "flops_per_token": model.flops_per_token}


def heldout_texts(cfg: AblationConfig) -> dict[str, str]:
    """``heldout/<domain>``: path of the held-out documents (after :func:`_split`)."""
    split = _read_json(os.path.join(cfg.holdout_dir, "holdout.json")) if cfg.holdout.fraction else None
    return {HELDOUT + d: p for d, p in (split or {}).get("heldout", {}).items()}


def _split(cfg: AblationConfig, log) -> None:
    """The held-out documents out of the arms' input (the same split on every run: a
    hash of (seed, id)); ``OUT/_ablate/holdout/``."""
    from datacurate.engine.holdout import split_input

    if not cfg.holdout.fraction:
        return
    h = cfg.holdout
    res = split_input(arm_pipeline(cfg, cfg.baseline, raw_input=True).input, h.fraction, h.seed, h.max_docs,
                      cfg.holdout_dir)
    _write_json(os.path.join(cfg.holdout_dir, "holdout.json"), res)
    log("[ablate] held out of every arm: " + ", ".join(f"{d} {n}" for d, n in res["counts"]["heldout_docs"].items())
        + f" documents; the arms' input: {res['counts']['train_docs']:,} documents")


def _reference(cfg: AblationConfig, resume: bool, log) -> None:
    """The ablation's reference model (``reference:``), once, before any arm."""
    from datacurate.engine.runner import run_pipeline

    if cfg.reference.input is None:
        return
    pcfg, tc = reference_configs(cfg)
    if resume and os.path.isfile(os.path.join(tc.output, "final.json")):
        log("[ablate] resume: the reference model was trained before")
        return
    log(f"[ablate] reference: curating -> {pcfg.output.path}, training {tc.steps} steps -> {tc.output}")
    with doing("the reference model"):
        run_pipeline(pcfg, resume=resume, log=_unit_log(log, "reference"), progress=False)
        launch_train(tc, resume=resume, ray_cfg=cfg.ray, log=_unit_log(log, "reference"))


def _curve(cfg: AblationConfig, evaluator: "Evaluator", tc, final: dict, shards: str, device: str) -> list[dict]:
    """The curve evals at every kept checkpoint: per point step, tokens, FLOPs and seconds
    of training so far (from metrics.jsonl), and the losses; the last point is the final model."""
    from datacurate.core.curves import cumulative
    from datacurate.report.scan import read_jsonl
    from datacurate.train.checkpoint import steps_in

    names = [m for n in (cfg.eval.curve or evaluator.texts) for m in cfg.eval.groups.get(n, [n])]
    ckpt_root = os.path.join(tc.output, "checkpoints")
    steps = read_jsonl(os.path.join(tc.output, "metrics.jsonl"))
    spent, points = None, []
    for step in steps_in(ckpt_root):
        res = evaluator(os.path.join(ckpt_root, f"step-{step}"), shards, device, names=names)
        spent = spent or cumulative([r for r in steps if "loss" in r], res["flops_per_token"], tc.data.tokens_per_step)
        flops, secs = spent.get(step, (None, None))
        groups = {g: sum(res["eval"][m] for m in ms) / len(ms) for g, ms in cfg.eval.groups.items()
                  if all(m in res["eval"] for m in ms)}
        points.append({"step": step, "tokens": step * tc.data.tokens_per_step, "flops": flops, "seconds": secs,
                       "eval": {**res["eval"], **groups}})
    return points


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
        evaluator, device = evaluator or Evaluator(cfg), device or pick_device(cfg.budget.device)
        log(f"[ablate] {unit}: eval on " + ", ".join([*evaluator.texts, *evaluator.tasks]))
        with doing("eval"):
            res = evaluator(final["checkpoint"], tc.shards, device)
    res.pop("flops_per_token")
    res.update(arm=arm, seed=seed, steps=tc.steps, tokens=final["tokens"])
    if cfg.eval.curve_every:
        res["curve"] = _curve(cfg, evaluator, tc, final, tc.shards, device)
    _write_json(os.path.join(tc.output, "eval.json"), res)
    log(f"[ablate] {arm} seed {seed}: " + "  ".join(f"{k} {v:.4f}" for k, v in res["eval"].items()))
    return res


def run_ablation(cfg: AblationConfig, resume: bool = False, log: Optional[Callable[[str], None]] = None,
                 report: bool = True) -> dict:
    """Run (or continue) the ablation ``cfg``; ``ablation.json``'s content."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    from datacurate.engine.ray.cluster import refuse_relative_in_job

    refuse_relative_in_job({"output": cfg.output})
    Evaluator(cfg)  # the eval files are read before any work: a bad one fails now
    _start(cfg, resume, log)
    os.environ[faults.DRIVER_ENV] = str(os.getpid())  # the tests' fault injection (kill-driver)
    _split(cfg, log)
    _reference(cfg, resume, log)
    evaluator = Evaluator(cfg)  # with the held-out domains
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
    from datacurate.formats.shards import read_manifest

    return sum(int(b["tokens"]) for b in read_manifest(shards)["buckets"].values())


def _derived(cfg: AblationConfig, scores: dict) -> dict:
    """One seed's summaries of its text losses: the mean and the worst held-out domain,
    the mean of each ``eval.groups`` entry."""
    out = {}
    domains = [v for k, v in scores.items() if k.startswith(HELDOUT)]
    if domains:
        out["domains_mean"], out["domains_worst"] = sum(domains) / len(domains), max(domains)
    for name, members in cfg.eval.groups.items():
        out[name] = sum(scores[m] for m in members) / len(members)
    return out


def _at_budget(runs: dict, names: list[str]) -> dict:
    """``<eval>@flops`` / ``<eval>@seconds`` of every run: its curve's loss at the compute
    the cheapest run of the ablation spent (the smallest final FLOPs / seconds of all arms
    and seeds), so every arm is compared at equal compute as well as at equal tokens."""
    from datacurate.core.curves import at

    out: dict = {arm: [{} for _ in rs] for arm, rs in runs.items()}
    budgets = {}
    for axis in ("flops", "seconds"):
        ends = [r["curve"][-1][axis] for rs in runs.values() for r in rs]
        if not ends or any(e is None for e in ends):
            continue
        budgets[axis] = min(ends)
        for arm, rs in runs.items():
            for k, r in enumerate(rs):
                xs = [p[axis] for p in r["curve"]]
                for name in names:
                    out[arm][k][f"{name}@{axis}"] = at(xs, [p["eval"][name] for p in r["curve"]], budgets[axis])
    return {"values": out, "budgets": budgets}


def _to_baseline(arm_runs: list[dict], base_runs: list[dict], name: str) -> dict:
    """Per seed, the training tokens at which the arm's curve first reaches the loss the
    baseline's run of that seed ended at (None: not within its budget); the baseline's
    tokens over them is the speed-up (RHO-1 reports 5-10x)."""
    from datacurate.core.curves import first_reach

    tokens = [first_reach([p["tokens"] for p in a["curve"]], [p["eval"][name] for p in a["curve"]],
                          b["curve"][-1]["eval"][name]) for a, b in zip(arm_runs, base_runs)]
    base = [b["curve"][-1]["tokens"] for b in base_runs]
    speedup = [bt / t if t else None for t, bt in zip(tokens, base)]
    reached = [t for t in tokens if t is not None]
    return {"tokens": tokens, "baseline_tokens": base, "speedup": speedup,
            "reached": f"{len(reached)} of {len(tokens)} seeds",
            "mean_tokens": sum(reached) / len(reached) if len(reached) == len(tokens) else None,
            "speedup_interval": t_interval(speedup) if all(x is not None for x in speedup) else None}


def summarize(cfg: AblationConfig, tokenizer: dict) -> dict:
    """``ablation.json`` from the arms' ``eval.json`` files: per arm and eval the mean and
    Student-t interval over seeds; per arm the paired difference to the baseline. Besides
    the evals themselves: the held-out domains' mean and worst, ``eval.groups``, and with
    curves the loss at equal FLOPs and seconds and the tokens to the baseline's final loss."""
    runs = {arm: [_read_json(os.path.join(cfg.arm_dir(arm), f"seed-{s}", "eval.json")) for s in cfg.seeds]
            for arm in cfg.arms}
    scores = {arm: [{**r["eval"], **_derived(cfg, r["eval"])} for r in rs] for arm, rs in runs.items()}
    curved = sorted(runs[cfg.baseline][0]["curve"][-1]["eval"]) if cfg.eval.curve_every else []
    budget = _at_budget(runs, curved) if curved else {"values": {}, "budgets": {}}
    for arm, vals in budget["values"].items():
        for k, v in enumerate(vals):
            scores[arm][k].update(v)
    names = [n for n in scores[cfg.baseline][0] if n not in cfg.eval.tasks] + list(cfg.eval.tasks)
    lower_better = {n: n not in cfg.eval.tasks for n in names}
    arms: dict = {}
    for arm in cfg.arms:
        pcfg = arm_pipeline(cfg, arm)
        tc = arm_train_config(cfg, arm, pcfg, 0)
        kept = _kept_tokens(tc.shards)
        stats = _read_json(os.path.join(pcfg.output.path, "stats.json")) or {}
        trained = runs[arm][0]["tokens"]
        arms[arm] = {
            "eval": {n: {**t_interval(seeds), "seeds": seeds} if None not in (seeds := [sc[n] for sc in scores[arm]])
                     else {"mean": None, "ci": [None, None], "seeds": seeds} for n in names},
            "kept_tokens": kept, "kept_docs": (stats.get("totals") or {}).get("kept"),
            "train_tokens": trained, "epochs": trained / kept if kept else None,
            "domain_weights": tc.data.domain_weights, "steps": tc.steps,
            "curated": os.path.relpath(pcfg.output.path, cfg.output)}
        if curved:
            arms[arm]["curves"] = [{"seed": s, "points": r["curve"]} for s, r in zip(cfg.seeds, runs[arm])]
    base = arms[cfg.baseline]
    diffs = {}
    for arm in cfg.arms:
        if arm == cfg.baseline:
            continue
        diffs[arm] = {}
        for name, low in lower_better.items():
            a, b = arms[arm]["eval"][name]["seeds"], base["eval"][name]["seeds"]
            if None in a or None in b:
                continue
            d = paired_difference(a, b)
            diffs[arm][name] = {**d, "seeds": [x - y for x, y in zip(a, b)], "distinguishable": excludes_zero(d["ci"]),
                                "better": (d["mean"] < 0) == low}
            if name in curved:
                diffs[arm][name]["to_baseline_final"] = _to_baseline(runs[arm], runs[cfg.baseline], name)
    holdout = _read_json(os.path.join(cfg.holdout_dir, "holdout.json")) if cfg.holdout.fraction else None
    return {"baseline": cfg.baseline, "seeds": cfg.seeds, "level": 0.95,
            "interval": "Student t over seeds (mean ± t_{0.975,n-1} s/sqrt(n)); diffs paired by seed",
            "units": {n: ("nats/token" if low else "acc_norm") for n, low in lower_better.items()},
            "lower_is_better": lower_better, "tokenizer": tokenizer,
            "budget": {"tokens": cfg.budget.tokens, "model": to_dict(cfg.budget.model), "seeds": cfg.budget.seeds},
            "compute_budget": budget["budgets"], "holdout": holdout and holdout["counts"],
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
            mean = "n/a" if e["mean"] is None else f"{e['mean']:.4f}"
            lines.append(f"  {arm:<22}{mean:>9}  {_ci(e):<20}{diff}{a['kept_tokens']:>12,}"
                         f"{a['epochs']:>8.2f}")
            if d:
                verdicts.append(f"  {arm} vs {base} on {name}: {d['mean']:+.4f} "
                                + (("distinguishable from seed noise (" + ("better" if d["better"] else "worse") + ")")
                                   if d["distinguishable"] else "within seed noise (the interval holds 0)"))
                reach = d.get("to_baseline_final")
                if reach:
                    verdicts.append(f"    reaches {base}'s final {name} loss at " + ", ".join(
                        "never" if t is None else f"{t:,.0f}" for t in reach["tokens"])
                        + f" tokens (seeds; {base}: {reach['baseline_tokens'][0]:,})")
    tok = summary["tokenizer"]
    for axis, b in (summary.get("compute_budget") or {}).items():
        lines.append(f"<eval>@{axis}: the loss at {b:,.4g} {axis}, what the cheapest run spent (curves interpolated)")
    lines.append(f"text losses with {'one tokenizer for all arms: ' + tok['path'] if tok['mode'] == 'fixed' else 'each arm' + chr(39) + 's own tokenizer'}; "
                 f"{len(summary['seeds'])} seeds, {summary['interval']}")
    return "\n".join(lines + ["differences to the baseline:"] + verdicts)
