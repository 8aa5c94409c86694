"""Run a pipeline end to end: check, plan, execute on Ray, write the report."""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import json
import os
import posixpath
import re
import sys
import time
from dataclasses import dataclass
from typing import Callable

from datacurate.core import errors
from datacurate.formats import storage
from datacurate.configs.pipeline import ConfigError, PipelineConfig, check_order, check_words, dump_config, to_dict
from datacurate.phases import faults, layout
from datacurate.phases.journal import Journal
from datacurate.engine.launch import launch_doremi, launch_train, quiet
from datacurate.engine.progress import Progress
from datacurate.engine.process import build_stages, check_columns, reserved_columns
from datacurate.engine.stats import StageStats, finalize, format_funnel
from datacurate.formats.io import KINDS, InputError, check_consumed, plan_reads
from datacurate.report.scan import read_json
from datacurate.core.schema import INPUT_STAGE

OWNED = ("kept", "rejected", "stats.json", "config.yaml", layout.WORK, "report.html")


def _owned(cfg: PipelineConfig) -> tuple[str, ...]:
    """What a run writes under OUT: OWNED, the default outputs stages declare
    (``Stage.default_outputs``), and train/ and doremi/ when its sections write there."""
    from datacurate.registry import STAGES

    declared = tuple(sorted({n for cls in STAGES.values() for n in cls.default_outputs}))
    extra = tuple(name for name, sec in (("doremi", cfg.doremi), ("train", cfg.train))
                  if sec is not None and storage.abspath(sec.output) == storage.join(storage.abspath(cfg.output.path), name))
    return OWNED + declared + extra


def check_model_sections(cfg: PipelineConfig) -> None:
    """Before any curation: what the doremi: / train: sections read that exists already
    (a reference checkpoint, a domain-weights file) is there, so a long curation does not
    end in a one-line error that could have come first."""
    for name, sec in (("doremi", cfg.doremi), ("train", cfg.train)):
        if sec is None:
            continue
        from datacurate.train import checkpoint  # torch: ~2.7 CPU-s a run without these sections never pays

        refs = [sec.rho1.reference] + ([sec.doremi.reference] if name == "doremi" else [])
        for ref in filter(None, refs):
            checkpoint.resolve(ref)
        w = sec.data.domain_weights
        from_doremi = cfg.doremi is not None and w == os.path.join(cfg.doremi.output, "domain_weights.json")
        if isinstance(w, str) and not from_doremi and not storage.isfile(w):
            raise ConfigError(f"{name}.data.domain_weights: file not found: {w}")


OUTSIDE = "outputs"  # journal key: stage outputs staged outside OUT (see context.StagedOutputs)


def check_output(cfg: PipelineConfig) -> None:
    """OUT is a directory (or absent), and holds no earlier run unless ``overwrite``."""
    out = cfg.output.path
    if storage.isfile(out):
        raise ConfigError(f"output: {out} exists and is not a directory")
    present = [p for p in _owned(cfg) if p != layout.WORK and storage.exists(storage.join(out, p))]
    if present and not cfg.output.overwrite:
        raise ConfigError(f"output: {out} already holds a run ({', '.join(present)}); set output.overwrite: true")


def write_places(cfg: PipelineConfig) -> dict[str, str]:
    """Where a run writes, by the key that names it: OUT, the directories stages name
    (``Stage.output_key``), and a train or doremi output."""
    places = {"output": cfg.output.path}
    for s in cfg.stages:
        key = s.cls.output_key
        if key and getattr(s.config, key):
            places[f"{s.name}.{key}"] = getattr(s.config, key)
    places.update({f"{name}.output": sec.output for name, sec in (("train", cfg.train), ("doremi", cfg.doremi))
                   if sec is not None})
    return places


def _remote_outputs(cfg: PipelineConfig) -> list[str]:
    """The ``s3://`` places a run writes."""
    return [u for u in write_places(cfg).values() if storage.is_remote(u)]


def config_sha256(cfg: PipelineConfig) -> str:
    """Hash of what decides a run's outputs: input, stages, output format, train and
    doremi sections (not where OUT is, and not the Ray settings)."""
    d = to_dict(cfg)
    d.pop("ray", None)
    d["output"] = {k: v for k, v in d["output"].items() if k not in ("path", "overwrite", "keep_work")}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def _discard_unfinished(out: str) -> None:
    """Before a new run: the staged outputs and work of an unfinished one go."""
    journal = Journal(layout.journal(layout.staging(out)))
    for staged in journal.get("run", OUTSIDE, {}):
        storage.delete(staged)
    storage.delete(layout.work(out))
    storage.delete(layout.trash(out))


def _swap(cfg: PipelineConfig, journal: Journal, staging: str) -> None:
    """Put the staged outputs in place. The earlier run's ``stats.json`` goes first (OUT
    never looks complete in between), then its outputs, then the new ones move in; each
    step is recorded, so a crash inside the swap is finished by ``--resume``. Locally a
    move is a rename of each top-level entry; on S3, which has no rename, each object is
    copied server-side to its final key and then deleted from the staging prefix (a
    resumed swap moves what is still there)."""
    out = cfg.output.path
    outside = journal.get("run", OUTSIDE, {})
    state = journal.get("run", "swap", {})
    if not state.get("cleared"):
        storage.delete(storage.join(out, "stats.json"))
        for name in (set(_owned(cfg)) | set(storage.listdir(staging))) - {layout.WORK}:
            storage.delete(storage.join(out, name))
        for staged, info in outside.items():
            if storage.isdir(info["final"]):
                for name in storage.listdir(info["final"]):
                    if any(fnmatch.fnmatch(name, pat) for pat in info["owns"]):
                        storage.delete(storage.join(info["final"], name))
        journal.record("run", "swap", {"cleared": True})
    _move_tree(staging, out, skip=layout.WORK)
    for staged, info in outside.items():
        if storage.isdir(staged):
            _move_tree(staged, info["final"])
            storage.delete(staged)
    journal.record("run", "swap", {"cleared": True, "moved": True})


def _move_tree(src: str, dst: str, skip: str | None = None) -> None:
    """Every entry of ``src`` (but ``skip``) to the same name under ``dst``."""
    if not storage.is_remote(src):
        os.makedirs(dst, exist_ok=True)
        for name in os.listdir(src):
            if name != skip:
                os.replace(os.path.join(src, name), os.path.join(dst, name))
        return
    from concurrent.futures import ThreadPoolExecutor

    moves = [(f, storage.join(dst, f[len(src.rstrip("/")) + 1:])) for f in storage.walk_files(src)
             if skip is None or not f[len(src.rstrip("/")) + 1:].startswith(skip + "/")]
    with ThreadPoolExecutor(16) as pool:  # server-side copies: the requests, not the bytes, take the time
        list(pool.map(lambda m: storage.move(*m), moves))


def _drop_temporaries(root: str) -> None:
    """Half-written files a killed task left (``*.tmp<pid>``): never part of the output
    (S3 has none: an object appears whole or not at all)."""
    if storage.is_remote(root):
        return
    for d, _, files in os.walk(root):
        for name in files:
            if re.search(r"\.tmp\d*(\.npy)?$", name):
                os.remove(os.path.join(d, name))


def run_pipeline(cfg: PipelineConfig, progress: bool | None = None, log: Callable[[str], None] | None = None,
                 resume: bool = False, report: bool = True) -> dict:
    """Run ``cfg``; return the stats report (also written to OUT/stats.json).

    The run writes into ``OUT/_work/run`` and journals what it finished; only when
    curation is complete do its outputs replace an earlier run's, and ``stats.json``,
    written last, marks OUT complete. ``resume`` continues an interrupted run of the same
    configuration, skipping every task and phase it finished.
    """
    default_log = log is None  # then progress may redraw in place on a terminal
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    return _run(cfg, progress, log, resume, report, default_log)


@dataclass
class Run:
    """One run's state after its checks, as :func:`_work` and :func:`_curate` read it."""

    cfg: PipelineConfig
    tasks: list  # the read tasks (io.plan_reads: .skipped / .empty name the files not read)
    journal: Journal
    staging: str  # OUT/_work/run, absolute: workers may not share the driver's cwd
    digest: str  # the configuration's sha256 (stats.json's config_sha256)
    fresh: bool  # False: --resume continues an unfinished run
    show: bool  # progress lines
    log: Callable[[str], None]
    default_log: bool  # log is standard error: progress may redraw in place on a terminal


def _run(cfg: PipelineConfig, progress: bool | None, log: Callable[[str], None], resume: bool, report: bool,
         default_log: bool = True) -> dict:
    from datacurate.engine.ray.cluster import refuse_relative_in_job
    from datacurate.stages.base import GlobalStage

    refuse_relative_in_job(write_places(cfg))
    tasks = plan_reads(cfg.input, reserved=reserved_columns(cfg.stages))  # fails fast on bad inputs and fields
    check_columns(cfg.stages, tasks.columns)  # a stage needing a column the input cannot have: one line, now
    for url in _remote_outputs(cfg):
        storage.check_bucket(url)  # one line for a missing bucket, refused credentials, a dead endpoint
    check_order(cfg.stages)
    check_words(cfg.stages)  # a word segmenter the kept languages need and cannot load: one line, now
    for i, stage in enumerate(build_stages(cfg.stages)):  # fails fast on a missing model file before Ray starts
        if isinstance(stage, GlobalStage):
            stage.preflight(cfg, i)
    check_model_sections(cfg)
    out = cfg.output.path
    staging = layout.staging(storage.abspath(out))  # workers may not share the driver's cwd
    journal = Journal(layout.journal(staging))
    digest = config_sha256(cfg)
    started = journal.get("run", "config")
    if started is not None and journal.get("run", "finished"):  # a complete run's journal (output.keep_work)
        started = None
    if resume and started is not None and started["sha256"] != digest:
        raise ConfigError(f"--resume: the unfinished run in {out} has another configuration (sha256 "
                          f"{started['sha256'][:12]}, now {digest[:12]}); run without --resume to start over")
    if resume and started is None:
        done = read_json(storage.join(out, "stats.json"))
        if done is not None and done.get("config_sha256") == digest:
            log(f"[datacurate] --resume: {out} holds a complete run of this configuration; nothing to do")
            if not cfg.output.keep_work:
                layout.clear_work(out)  # finishes a clean-up a crash interrupted
            return done
        log(f"[datacurate] --resume: no unfinished run in {out}; starting a new one")
    fresh = not (resume and started is not None)
    if fresh:
        check_output(cfg)
        _discard_unfinished(out)
        _writable(staging, out)
        journal.record("run", "config", {"sha256": digest})
        storage.write_text(storage.join(staging, "config.yaml"), dump_config(cfg))
    try:
        show = cfg.ray.progress if progress is None else progress
        rep = _work(Run(cfg, tasks, journal, staging, digest, fresh, show, log, default_log))
    except (ConfigError, InputError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - an operational error becomes one line (errors.stopped); others re-raise
        one_line = errors.stopped(e)
        if one_line is e:
            raise
        raise one_line from e
    if report:
        _write_report(out, log)
    return rep


def _writable(staging: str, out: str) -> None:
    """OUT can be written (one line before any work, not a failure in a worker)."""
    try:
        storage.makedirs(staging)
    except OSError as e:
        found = errors.explain(e)
        raise ConfigError(f"output: cannot write to {out}: {found[0] if found else e}") from None
    if not storage.is_remote(staging) and not os.access(staging, os.W_OK):
        raise ConfigError(f"output: cannot write to {out}: permission denied")


def _work(run: Run) -> dict:
    """Curation, the swap, the doremi: and train: sections, stats.json: everything after
    the checks, journaled, so that ``--resume`` continues it wherever it stopped."""
    cfg, journal, fresh, show, log = run.cfg, run.journal, run.fresh, run.show, run.log
    out = cfg.output.path
    rep = journal.get("run", "curation")
    if rep is None:
        rep = _curate(run)
        journal.record("run", "curation", rep)
    elif not fresh:
        log("[datacurate] resume: curation was complete")
    if not journal.get("run", "swap", {}).get("moved"):
        with errors.doing(f"the move of the outputs into {out}"):
            _swap(cfg, journal, run.staging)
    if cfg.doremi is not None:  # before train: its weights are train's domain_weights by default
        rep["doremi"] = launch_doremi(cfg.doremi, not fresh, cfg.ray, log if show else quiet)
    if cfg.train is not None:
        rep["train"] = launch_train(cfg.train, not fresh, cfg.ray, log if show else quiet)
    rep["config_sha256"] = run.digest
    storage.write_text(storage.join(out, "stats.json"), json.dumps(rep, indent=2))  # last: marks a complete run
    journal.record("run", "finished", True)
    if not cfg.output.keep_work:
        with errors.doing("the clean-up of a complete run (--resume completes it)"):
            layout.clear_work(out)
    return rep


def _write_report(out: str, log) -> None:
    try:
        from datacurate.report import write_report
    except ImportError:  # the report module is optional in a trimmed install
        return
    try:
        write_report(out)
    except Exception as e:  # noqa: BLE001 - a failed report never fails a finished run
        log(f"[datacurate] warning: report.html not written: {type(e).__name__}: {e}")


@dataclass
class Curation:
    """What :func:`_curate`'s phases share: the run, its configuration pointed at the staging
    area, the progress tracker, and the tasks and phases done / skipped (for the resume line)."""

    run: Run
    run_cfg: PipelineConfig  # cfg with output.path = the staging area
    outputs: object  # phases.context.StagedOutputs: stage outputs staged outside OUT
    tracker: Progress
    global_info: dict  # stats key -> {"metrics", "phase_seconds"} of each global stage
    skipped: int = 0
    total: int = 0


def _curate(run: Run) -> dict:
    """Every segment's map tasks and every global stage, into ``run.staging``: the start
    (logs, Ray), then per segment its global phases and its map tasks, then the run's stats."""
    from datacurate.engine.process import segments_of
    from datacurate.engine.ray import cluster
    from datacurate.phases.context import StagedOutputs

    cfg, log = run.cfg, run.log
    t0 = time.perf_counter()
    run_cfg = copy.deepcopy(cfg)
    run_cfg.output.path = run.staging
    final_out = storage.abspath(cfg.output.path)
    if cfg.ray.address:  # on a cluster each node reads side inputs from the output's file system
        from datacurate.engine.side import stage_side_inputs

        stage_side_inputs(run_cfg.stages, layout.work(final_out))
    outputs = StagedOutputs(run.journal, run.staging, final_out)
    if run.show:
        log(f"[datacurate] {len(run.tasks)} read tasks over {len({t.path for t in run.tasks})} files -> "
            f"{cfg.output.path}")
    if getattr(run.tasks, "skipped", None):
        log(f"[datacurate] not read ({KINDS} only): {_few(run.tasks.skipped)}")
    os.environ[faults.DRIVER_ENV] = str(os.getpid())  # for the fault injection of tests (kill-driver)
    started = cluster.init_ray(cfg.ray)
    cur = Curation(run, run_cfg, outputs, Progress(run.show, log=None if run.default_log else log), {})
    segments = segments_of(run_cfg)
    try:
        for seg in segments:
            names = [stats_key(s) for s in seg.maps]
            if seg.global_before is None:
                items = [(f"t{t.index:06d}", json.dumps(t.to_dict())) for t in run.tasks]
                sizes = {f"t{t.index:06d}": t.size for t in run.tasks}
            else:
                names = [stats_key(seg.global_before)] + names
                items, sizes = _global_phases(cur, seg)
            later = [stats_key(s.global_before) for s in segments[seg.index + 1:]]
            _map_tasks(cur, seg, items, sizes, names, later)
        with errors.doing("the parts' common schema"):
            from datacurate.engine.ray import segments as ray_segments

            ray_segments.unify_fields(run_cfg)  # idempotent: a resumed run does it again
    finally:
        if started:
            cluster.shutdown()
    return _curation_stats(cur, time.perf_counter() - t0)


def _global_phases(cur: Curation, seg) -> tuple[list, dict]:
    """A segment's global stage (its phases over the previous segment's kept parts, in one
    in-process task for a small input; skipped when journaled done); the segment's items
    (the previous segment's parts) and their sizes."""
    from datacurate.engine.ray import segments as ray_segments
    from datacurate.engine.ray.context import RayContext
    from datacurate.phases.local import LocalContext, input_docs, run_global

    run, spec = cur.run, seg.global_before
    cfg, staging, journal, log = run.cfg, run.staging, run.journal, run.log
    info = journal.get(f"g{seg.index}", "done")
    if info is None:
        if run.show:
            log(f"[datacurate] {stats_key(spec)}: global phases")
        t1 = time.perf_counter()
        index = next(i for i, s in enumerate(cur.run_cfg.stages) if s is spec)  # two equal specs stay apart
        files = storage.list_files(layout.parts(staging, seg.index - 1), ".parquet")
        small = input_docs(files) < cfg.ray.small_input_docs  # all phases in one task, in-process
        if small and spec.cls.uses_accelerators and ray_segments.cluster_gpus():
            small = False  # a model stage on a cluster with GPUs: its pool gets them, however few the documents
        ctx = (LocalContext if small else RayContext)(
            staging, spec.name, journal, files, storage.abspath(cfg.output.path), cur.outputs, seg.index,
            cfg.output.compression, cfg.stages[:index], to_dict(cfg),
            **({} if small else {"log": log, "progress": cur.tracker.phase}))
        stage = spec.cls(spec.config)
        with errors.doing(spec.name):
            res = ray_segments.in_one_task(run_global, stage=stage, ctx=ctx) if small else run_global(stage, ctx)
        info = {"metrics": res["metrics"], "phase_seconds": time.perf_counter() - t1}
        journal.record(f"g{seg.index}", "done", info)
        cur.skipped += res["skipped"]
        cur.total += res["skipped"]
    else:
        log(f"[datacurate] resume: {stats_key(spec)}: skipped 1 of 1 global stages done before")
        cur.skipped += 1
        cur.total += 1
    cur.global_info[stats_key(spec)] = info
    listed = storage.sizes(layout.parts(staging, seg.index - 1), ".parquet")
    return [(posixpath.basename(p), p) for p in listed], {posixpath.basename(p): n for p, n in listed.items()}


def _map_tasks(cur: Curation, seg, items: list, sizes: dict, names: list[str], later: list[str]) -> None:
    """A segment's map tasks on Ray, but those the journal has done (their stats are counted again)."""
    from datacurate.engine.ray import segments as ray_segments

    run, tracker = cur.run, cur.tracker
    tracker.segment(seg.index, len(items), names, later, sum(sizes.values()))
    done = run.journal.entries(f"s{seg.index}")
    todo = [(k, v) for k, v in items if k not in done]
    for k, _ in items:
        if k in done:
            tracker(done[k], sizes[k], fresh=False)
    if not run.fresh and len(todo) < len(items):
        run.log(f"[datacurate] resume: segment {seg.index}: skipped {len(items) - len(todo)} of {len(items)} "
                "map tasks done before")
    cur.skipped += len(items) - len(todo)
    cur.total += len(items)
    with errors.doing(", ".join(names)):
        ray_segments.run_segment(cur.run_cfg, seg.index, todo, lambda st, key: tracker(st, sizes[key]), run.journal)


def _curation_stats(cur: Curation, seconds: float) -> dict:
    """The run's stats (the map tasks' and the global stages'), its inputs checked."""
    run = cur.run
    if not run.fresh:
        run.log(f"[datacurate] resume: in all, skipped {cur.skipped} of {cur.total} tasks and phases the "
                "interrupted run had done")
    _drop_temporaries(run.staging)
    for name, info in cur.global_info.items():
        st = cur.tracker.stats.setdefault("stages", {}).setdefault(name, StageStats())
        st += StageStats(seconds=info["phase_seconds"], metrics=info["metrics"])
    rep = finalize(cur.tracker.stats, [INPUT_STAGE] + [stats_key(s) for s in run.cfg.stages], seconds)
    _check_inputs(run.tasks, rep, run.log)
    return rep


def _check_inputs(tasks, rep: dict, log) -> None:
    """Per input file: its tasks consumed it whole and every record became a row (else one
    line naming the file fails the run); the files a directory or glob held that were not
    read, and the empty ones, go into stats.json (``input_files``) and a warning."""
    files = rep["input_files"]
    problems = check_consumed(tasks, files)
    if problems:
        more = f" (and {len(problems) - 1} more files: stats.json of the staged run)" if len(problems) > 1 else ""
        raise InputError(problems[0] + more)
    if not rep["totals"]["accounted"]:
        t = rep["totals"]
        raise InputError(f"accounting mismatch: read {t['read']:,} != kept {t['kept']:,} + rejected {t['rejected']:,}")
    files["not_read"] = list(tasks.skipped)
    files["empty"] = [s for s in tasks.files if not files.get("files", {}).get(s, {}).get("records")]
    if files["empty"]:
        log(f"[datacurate] warning: {_few(files['empty'])} held no documents")


def _few(names: list[str], n: int = 5) -> str:
    """``n`` names, and how many more (all of them are in stats.json)."""
    shown = ", ".join(names[:n])
    more = f" and {len(names) - n} more (stats.json)" if len(names) > n else ""
    return f"{len(names)} input file{'s' * (len(names) != 1)}: {shown}{more}"


def stats_key(spec) -> str:
    """A stage's key in stats.json (its name, unless its class tells two instances apart)."""
    return spec.cls.stats_key(spec.config)


__all__ = ["run_pipeline", "format_funnel"]
