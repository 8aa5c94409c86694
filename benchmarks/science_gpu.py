"""The four science ablations at the GPU budget (issue 50): curated here, trained on a lent GPU.

    python benchmarks/science_gpu.py prepare          # here (Ray): the corpus, every arm's curation, the carry
    python benchmarks/science_gpu.py run              # on the GPU (no Ray): DoReMi's and RHO-1's helper
                                                      # models, 5 seeds x 2 arms x 4, eval, ablation.json
    python benchmarks/science_gpu.py probe            # on the GPU: tokens/s of the planned shape (eager)
    python benchmarks/science_gpu.py prepare --smoke  # the same at toy size on the CPU (the tests)

The ablation files are ``pipelines/ablations/science_gpu/*.yaml`` (budget: benchmarks/science_plan.py).
``prepare`` runs :mod:`datacurate.engine.ablate`'s curation units (each arm's pipeline; for an
arm with a ``doremi:`` section the pipeline without it, for the reference its curation) and packs
what training and evaluation read (each arm's shards and ``stats.json``, the eval texts) into
``benchmarks/.science_gpu/carry/science.tar.zst``; identical files (arms with the same stages
on the same input) are stored once, as hard links. ``run`` unpacks it and runs the rest of
ablate's units in this process, one after another, as ``datacurate ablate`` does without Ray
(:func:`run_rest`): the RHO-1 reference, DoReMi's reference and proxy
(:func:`~datacurate.engine.launch.launch_doremi`), every seed's training and eval, then
:func:`~datacurate.engine.ablate.summarize`; the ``ablation.json`` files go to
``benchmarks/results/science_gpu/<name>.ablation.json`` (``--smoke``: ``benchmarks/.science_gpu/smoke/results``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["dsir", "doremi", "curriculum", "rho1"]
CONFIGS = os.path.join(ROOT, "pipelines", "ablations", "science_gpu")
CORPUS = "benchmarks/science_corpus"
WORK = os.path.join(ROOT, "benchmarks", ".science_gpu")
SMOKE = os.environ.get("SCIENCE_GPU_SMOKE") or os.path.join(WORK, "smoke")  # --smoke's folder (the tests: a tmp dir)
OUT = "benchmarks/.science_gpu/out"  # the YAML files' outputs
RESULTS = os.path.join(ROOT, "benchmarks", "results", "science_gpu")
CARRY_LIMIT = 64 * 2**20
# --smoke: the same files at toy size (a 0.12 MB slice of every domain, 2 seeds, 2 steps)
SMOKE_SET = ["budget.tokens=4096", "budget.seeds=2", "budget.device=cpu", "budget.train.threads=1",
             "budget.train.data.tokens_per_step=2048", "budget.train.optim.warmup_steps=1",
             "budget.model.n_layer=1", "budget.model.n_embd=32", "budget.model.n_head=2"]
SMOKE_ARMS = {"doremi": ["arms.doremi.doremi.reference_steps=2", "arms.doremi.doremi.proxy_steps=2",
                         "arms.doremi.doremi.data.tokens_per_step=2048", "arms.doremi.doremi.threads=1",
                         "arms.doremi.doremi.optim.warmup_steps=1", "arms.doremi.doremi.model.n_layer=1",
                         "arms.doremi.doremi.model.n_embd=32", "arms.doremi.doremi.model.n_head=2"],
              "curriculum": ["eval.curve_every=1"], "rho1": ["eval.curve_every=1", "reference.steps=2"]}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _swap_paths(node, old: str, new: str):
    if isinstance(node, dict):
        return {k: _swap_paths(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_swap_paths(v, old, new) for v in node]
    return new + node[len(old):] if isinstance(node, str) and node.startswith(old) else node


def load(name: str, smoke: bool):
    """Ablation ``name``'s config: the YAML, with ``--smoke`` its toy corpus, outputs and budget."""
    import yaml

    from datacurate.configs.ablation import load_ablation_config

    with open(os.path.join(CONFIGS, f"{name}.yaml")) as f:
        raw = yaml.safe_load(f)
    if smoke:
        raw = _swap_paths(raw, CORPUS, os.path.join(SMOKE, "corpus"))
        raw = _swap_paths(raw, OUT, os.path.join(SMOKE, "out"))
    return load_ablation_config(raw, (SMOKE_SET + SMOKE_ARMS.get(name, [])) if smoke else None)


def _without_doremi(pcfg):
    return dataclasses.replace(pcfg, doremi=None) if pcfg.doremi is not None else pcfg


def prepare(smoke: bool, corpus_mb: float | None = None) -> str:
    """The corpus (unless built), every curation unit, the carry; the carry's path."""
    from datacurate.configs.ablation import arm_pipeline, reference_configs
    from datacurate.engine import ablate
    from datacurate.engine.runner import run_pipeline

    os.chdir(ROOT)
    corpus = os.path.join(SMOKE, "corpus") if smoke else os.path.join(ROOT, CORPUS)
    if not os.path.isfile(os.path.join(corpus, "manifest.json")):
        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
        import science_corpus

        science_corpus.build(corpus, os.path.join(ROOT, "benchmarks", ".cache", "science"),
                             corpus_mb or (0.12 if smoke else 12.0), 4 if smoke else 64, log=_log,
                             piece=3000 if smoke else science_corpus.PIECE, target_docs=4 if smoke else 0)
    base = _base(smoke)
    members = {os.path.relpath(os.path.join(corpus, sub), base) for sub in ("heldout", "target", "manifest.json")}
    for name in NAMES:
        cfg = load(name, smoke)
        ablate._start(cfg, False, _log)
        units = [(f"{name}/{arm}", _without_doremi(arm_pipeline(cfg, arm))) for arm in cfg.arms]
        if cfg.reference.input is not None:
            units.insert(0, (f"{name}/reference", reference_configs(cfg)[0]))
        for unit, pcfg in units:
            _log(f"[science_gpu] {unit}: curation -> {pcfg.output.path}")
            run_pipeline(pcfg, log=_log, progress=False, report=False)
            members.add(os.path.relpath(os.path.join(pcfg.output.path, "stats.json"), base))
            members.add(os.path.relpath(_shards_dir(pcfg), base))
    return pack(sorted(members), _carry(smoke), base)


def _base(smoke: bool) -> str:
    """What the carry's paths are relative to: the repository (--smoke: its toy folder)."""
    return SMOKE if smoke else ROOT


def _carry(smoke: bool) -> str:
    return os.path.join(SMOKE if smoke else WORK, "carry", "science.tar.zst")


def _shards_dir(pcfg) -> str:
    """The directory of the token shards a curation wrote (the one holding their manifest)."""
    for dp, dns, fs in sorted(os.walk(pcfg.output.path)):
        dns.sort()
        if "manifest.json" in fs and "tokenizer.json" in fs:
            return dp
    raise FileNotFoundError(f"no token shards under {pcfg.output.path}")


def pack(members: list[str], dest: str, base: str) -> str:
    """``members`` (paths under the repository) into one zstd tar; a file whose bytes an earlier
    one had is stored as a hard link to it."""
    import hashlib

    import zstandard

    os.makedirs(os.path.dirname(dest), exist_ok=True)
    seen: dict[str, str] = {}
    os.chdir(base)
    files = sorted({os.path.join(dp, f) if os.path.isdir(m) else m for m in members
                    for dp, _, fs in (os.walk(m) if os.path.isdir(m) else [("", [], [m])]) for f in (fs or [m])})
    with open(dest, "wb") as raw, zstandard.ZstdCompressor(level=19, threads=-1).stream_writer(raw) as zf, \
            tarfile.open(fileobj=zf, mode="w|") as tf:
        for path in files:
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
            info = tf.gettarinfo(path, arcname=path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if digest in seen:
                info.type, info.linkname, info.size = tarfile.LNKTYPE, seen[digest], 0
                tf.addfile(info)
                continue
            seen[digest] = path
            with open(path, "rb") as f:
                tf.addfile(info, f)
    os.chdir(ROOT)
    size = os.path.getsize(dest)
    _log(f"[science_gpu] carry: {len(files)} files ({len(files) - len(seen)} stored as links), "
         f"{size / 2**20:.1f} MiB -> {dest}")
    if size > CARRY_LIMIT:
        _log(f"[science_gpu] warning: the carry is over the device's {CARRY_LIMIT / 2**20:.0f} MiB (with the wheels)")
    return dest


def unpack(src: str, base: str) -> None:
    """The carry's files into the repository, replacing what is there (a link: a copy of its target)."""
    import zstandard

    with open(src, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zf, \
            tarfile.open(fileobj=zf, mode="r|") as tf:
        for m in tf:
            dest = os.path.join(base, m.name)
            if m.name.startswith("/") or ".." in m.name.split("/") or not (m.isfile() or m.islnk()):
                raise ValueError(f"{src}: unexpected member {m.name}")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if m.islnk():
                if os.path.abspath(dest) != os.path.abspath(os.path.join(base, m.linkname)):
                    shutil.copyfile(os.path.join(base, m.linkname), dest)
                continue
            with tf.extractfile(m) as f, open(dest + ".tmp", "wb") as out:
                shutil.copyfileobj(f, out)
            os.replace(dest + ".tmp", dest)


def run_rest(cfg, log=_log) -> dict:
    """Ablate's units after curation, in this process (no Ray): the reference, DoReMi, every
    seed; ``ablation.json``'s content (also written to the ablation's output)."""
    from datacurate.configs.ablation import arm_pipeline, reference_configs
    from datacurate.engine import ablate
    from datacurate.engine.launch import launch_doremi, launch_train

    evaluator = ablate.Evaluator(cfg)
    if cfg.reference.input is not None:
        _, tc = reference_configs(cfg)
        log(f"[science_gpu] reference: {tc.steps} steps -> {tc.output}")
        launch_train(tc, log=ablate._unit_log(log, "reference"))
    for arm in cfg.arms:
        pcfg = arm_pipeline(cfg, arm)
        if pcfg.doremi is not None:
            log(f"[science_gpu] {arm}: DoReMi's reference and proxy -> {pcfg.doremi.output}")
            launch_doremi(pcfg.doremi, log=ablate._unit_log(log, arm))
        for seed in cfg.seeds:
            ablate._train(cfg, arm, seed, False, log, evaluator)
    summary = ablate.summarize(cfg, evaluator.describe())
    with open(os.path.join(cfg.output, "ablation.json"), "w") as f:
        json.dump(summary, f, indent=2)
    return summary


def run(smoke: bool, names: list[str], results: str | None = None) -> dict:
    from datacurate.configs.ablation import arm_pipeline
    from datacurate.engine.ablate import format_table

    os.chdir(ROOT)
    if smoke:  # toy models: more threads only contend on a shared machine
        import torch

        torch.set_num_threads(1)
    unpack(_carry(smoke), _base(smoke))
    results = results or (os.path.join(SMOKE, "results") if smoke else RESULTS)
    os.makedirs(results, exist_ok=True)
    times = {}
    for name in names:
        cfg = load(name, smoke)
        t0 = time.monotonic()
        summary = run_rest(cfg)
        times[name] = round(time.monotonic() - t0, 1)
        shutil.copyfile(os.path.join(cfg.output, "ablation.json"), os.path.join(results, f"{name}.ablation.json"))
        for arm in cfg.arms:  # DoReMi's evidence: the domain weights over the proxy's steps, and the final ones
            doremi = arm_pipeline(cfg, arm).doremi
            for f in ("weights.jsonl", "domain_weights.json") if doremi is not None else ():
                shutil.copyfile(os.path.join(doremi.output, f), os.path.join(results, f"{name}.{arm}.{f}"))
        _log(f"[science_gpu] {name}: {times[name]} s\n" + format_table(summary))
    with open(os.path.join(results, "timings.json"), "w") as f:
        json.dump({"seconds": times, "smoke": smoke, "device": _device()}, f, indent=2)
    return times


def _device() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def probe(seconds: float = 20.0) -> dict:
    """Eager training steps of the plan's shape on random tokens: tokens/s and MFU (issue 50's probe)."""
    import torch

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import science_plan as sp

    from datacurate.configs.train import ModelConfig
    from datacurate.train.model import GPT

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    p = sp.plan()
    shape = ModelConfig(n_layer=sp.LAYERS, n_head=sp.HEADS, n_embd=p["pick"]["d"]).resolve(sp.VOCAB, sp.SEQ)
    model = GPT(shape).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev == "cuda")
    x = torch.randint(0, sp.VOCAB, (sp.TOKENS_PER_STEP // sp.SEQ, sp.SEQ), device=dev)
    steps, t0 = 0, None
    while t0 is None or time.monotonic() - t0 < seconds:
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            loss = model(x[:, :-1], x[:, 1:])
        loss = loss[0] if isinstance(loss, tuple) else loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps += 1
        if steps == 3:  # warm-up steps are not timed
            if dev == "cuda":
                torch.cuda.synchronize()
            t0, steps = time.monotonic(), 0
    if dev == "cuda":
        torch.cuda.synchronize()
    tps = steps * x.numel() / (time.monotonic() - t0)
    mfu = tps * sp.flops_per_token(p["pick"]["d"]) / sp.PEAK
    out = {"device": _device(), "tokens_per_s": round(tps), "mfu": mfu, "shape": dataclasses.asdict(shape)}
    _log(f"[science_gpu] probe: {out}\n" + sp.describe(sp.plan(mfu)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["prepare", "run", "probe", "smoke"])
    ap.add_argument("--smoke", action="store_true", help="toy sizes on the CPU")
    ap.add_argument("--only", nargs="*", default=NAMES, choices=NAMES, help="run only these ablations")
    ap.add_argument("--results", help="where the ablation.json files go")
    a = ap.parse_args()
    if a.mode == "probe":
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "probe.json"), "w") as f:
            json.dump(probe(), f, indent=2)
        return 0
    if a.mode in ("prepare", "smoke"):
        prepare(a.smoke or a.mode == "smoke")
    if a.mode in ("run", "smoke"):
        run(a.smoke or a.mode == "smoke", a.only, a.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
