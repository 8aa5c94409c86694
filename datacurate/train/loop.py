"""The training loop: token shards -> a GPT, read top to bottom in one sitting.

set-up (shards, sampler, model, optimiser, RHO-1 reference, resume) -> for each step:
batch -> forward -> loss (plain mean, or RHO-1's selected tokens) -> backward -> clip
-> AdamW step -> log -> eval -> checkpoint.

* AdamW (fused on GPU), linear warm-up then cosine decay to ``lr * min_lr_ratio``
  (the learning rate is a function of the step, so resuming needs no scheduler object).
* bf16 autocast and ``torch.compile(dynamic=False)`` on GPU (one graph per bucket length: dataset
  decomposition has at most ~6 lengths); fp32 on CPU.
* The batch of step ``s`` is a pure function of (seed, s) (:class:`StepSampler`), so a
  resumed run, or one with another worker count, sees the same data.
* Data-parallel: when ``torch.distributed`` is initialised (Ray Train sets it up, see
  :mod:`datacurate.engine.ray.train`) the model is wrapped in DDP, each rank trains on
  its slice of the global batch and rank 0 writes every output. This loop never imports Ray.
* The loss is an :class:`~datacurate.train.objective.Objective` (plain, RHO-1 or DoReMi's
  Group DRO), :func:`make_objective`'s pick, over per-token losses from the head ``train.loss``
  picks (full logits, or a fused linear + cross-entropy: :mod:`datacurate.train.fused_loss`);
  ``s3://`` shards and outputs are handled around the loop (:func:`datacurate.train.remote.mirrored`).
* MFU = flops per token (6N + 12·n_layer·d·T, :meth:`GPT.flops_per_token`) x tokens/s
  over the accelerator's dense bf16 peak; null on CPU.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from dataclasses import asdict

import numpy as np
import torch
import torch.distributed as dist
import yaml

from datacurate.configs.pipeline import ConfigError, to_dict
from datacurate.train import checkpoint, remote
from datacurate.train.data import DeviceBatches, ShardDataset, StepSampler
from datacurate.train.doremi import GroupDRO
from datacurate.train.evaluate import eval_loss, eval_tokens
from datacurate.train.fused_loss import resolve as resolve_loss
from datacurate.train.model import GPT, compile_model
from datacurate.train.objective import Objective, Part, PlainObjective
from datacurate.train.rho1 import Reference, Rho1Objective
from datacurate.configs.train import GroupDROConfig, TrainConfig

PEAK_BF16 = {"H100": 989.4e12, "H200": 989.4e12, "H800": 989.4e12, "A100": 312e12, "L4": 121e12}


def pick_device(want: str) -> str:
    if want == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: cuda requested but torch sees no GPU")
    return "cuda" if want == "cuda" or (want == "auto" and torch.cuda.is_available()) else "cpu"


def make_autocast(device: str, precision: str = "auto"):
    """A context factory: bf16 autocast (``precision`` bf16, or auto on cuda), else fp32."""
    if precision == "bf16" or (precision == "auto" and device == "cuda"):
        return lambda: torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup_steps``, then cosine from ``lr`` to ``lr * min_lr_ratio``."""
    peak, o = cfg.lr, cfg.optim
    if step < o.warmup_steps:
        return peak * (step + 1) / o.warmup_steps
    t = (step - o.warmup_steps) / max(1, cfg.steps - o.warmup_steps)
    return peak * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


def make_optimizer(model: GPT, cfg: TrainConfig, device: str) -> torch.optim.AdamW:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n != "wpe.weight"]
    other = [p for n, p in model.named_parameters() if p.dim() < 2 or n == "wpe.weight"]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.optim.weight_decay},
                              {"params": other, "weight_decay": 0.0}], lr=cfg.lr,
                             betas=(cfg.optim.beta1, cfg.optim.beta2), fused=device == "cuda")


def peak_flops(device: str) -> float | None:
    if device != "cuda":
        return None
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def make_objective(cfg: TrainConfig, dro: GroupDROConfig | None, ds: ShardDataset, device: str, autocast,
                   compiled: bool, main: bool, head: str = "plain") -> Objective:
    """The loss from the config: Group DRO for a DoReMi proxy, RHO-1 with a reference, else plain
    (``head``: the loss head a frozen reference's forward pass uses, as the trained model's)."""
    if dro is not None:
        return GroupDRO(ds, device, autocast, dro.reference, dro.eta, dro.smoothing, dro.sidecar,
                        dro.out_dir if main else None, compiled, head)
    if cfg.rho1.reference:
        return Rho1Objective(Reference(cfg.rho1.reference, ds, device, cfg.rho1.sidecar, autocast, compiled, head),
                             cfg.rho1.ratio)
    return PlainObjective()


def train(cfg: TrainConfig, resume: bool = False, log=None, objective: GroupDROConfig | None = None) -> dict:
    """Train per ``cfg``; returns ``final.json``'s content. Under torch.distributed every rank
    calls this. ``objective``: a DoReMi proxy's Group DRO (None: plain, or RHO-1 per ``cfg.rho1``)."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    with remote.mirrored(cfg, resume, rank) as (local, ckpts):  # s3:// shards cached, an s3:// output mirrored
        return _train(local, ckpts, resume, log, objective)


def _train(cfg: TrainConfig, ckpts: remote.Checkpoints, resume: bool, log, objective) -> dict:
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    main = rank == 0
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    device = pick_device(cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    autocast = make_autocast(device, cfg.precision)

    # ---- set-up: data, model, optimiser, objective (RHO-1 / Group DRO reference), resume
    ds = ShardDataset(cfg.shards)
    sampler = StepSampler(ds, cfg.data, cfg.steps, cfg.seed, rank, world)
    torch.manual_seed(cfg.seed)
    shape = cfg.model.resolve(vocab_size=int(ds.tokenizer["vocab_size"]), max_seq_len=max(ds.seq_lens))
    if shape.max_seq_len < max(ds.seq_lens):
        raise ConfigError(f"model.max_seq_len {shape.max_seq_len} is shorter than the longest bucket ({max(ds.seq_lens)})")
    head = resolve_loss(cfg.loss, device)  # plain logits, or a fused linear + cross-entropy
    model = GPT(shape, loss=head).to(device)
    opt = make_optimizer(model, cfg, device)
    compiled = cfg.compile if cfg.compile is not None else device == "cuda"
    obj = make_objective(cfg, objective, ds, device, autocast, compiled, main, head)
    metrics_path = os.path.join(cfg.output, "metrics.jsonl")
    meta = {"shape": asdict(shape), "tokenizer_sha256": ds.tokenizer["sha256"], "config": to_dict(cfg),
            "domains": ds.domains}
    start, tokens_seen = 0, 0
    if resume and checkpoint.steps_in(ckpts.root):
        state = checkpoint.restore(checkpoint.resolve(ckpts.root), model, opt, shape, ds.tokenizer["sha256"])
        start, tokens_seen = state["step"], state["tokens"]
        if main and state["config"].get("steps") != cfg.steps:  # the LR schedule and curriculum follow steps
            log(f"[train] note: resuming a run of {state['config'].get('steps')} steps with steps={cfg.steps}: the "
                "learning-rate schedule and the grow_p2 cycles are those of the new length from here on")
        obj.load_state_dict(state.get("objective", {}))
    if main:
        os.makedirs(cfg.output, exist_ok=True)
        if not start:  # a fresh run: an earlier run's checkpoints would mix with this one's
            ckpts.clear()
        checkpoint.truncate_jsonl(metrics_path, start)
        with open(os.path.join(cfg.output, "config.yaml"), "w") as f:
            yaml.safe_dump(to_dict(cfg), f, sort_keys=False)
        log(f"[train] {cfg.model.preset} GPT {shape.n_layer}x{shape.n_embd}: {model.describe_params()}; "
            f"{len(ds):,} sequences in buckets {ds.seq_lens}, {cfg.steps} steps x {cfg.data.tokens_per_step:,} "
            f"tokens on {device} x {world}, {obj.describe()}, loss head {head}" + (f", resuming at step {start}" if start else ""))
    # one graph per bucket length (dataset decomposition has a handful), not dynamic shapes
    net = compile_model(model) if compiled else model
    ids = [torch.cuda.current_device()] if device == "cuda" else None
    fwd = torch.nn.parallel.DistributedDataParallel(net, device_ids=ids) if world > 1 else net
    peak = peak_flops(device)
    metrics = open(metrics_path, "a") if main else None
    batches = DeviceBatches(ds, sampler, obj.sides, device)
    last_eval = None
    has_eval = any(len(v) for v in sampler.eval_index.values())  # eval_fraction 0: no eval

    # ---- the loop
    t_start = time.perf_counter()
    for step in range(start, cfg.steps):
        t0 = time.perf_counter()
        lr = lr_at(step, cfg)
        for g in opt.param_groups:
            g["lr"] = lr
        batch, tokens, side = batches.get(step)  # tokens (B, L), side arrays (B, L-1) each, on the device
        # micro-batches weighted by their share of the batch (B need not divide by grad_accum)
        parts = [Part(tokens[r], {k: v[r] for k, v in side.items()}, batch.domains[r], len(r) / len(tokens))
                 for r in np.array_split(np.arange(len(tokens)), cfg.optim.grad_accum) if len(r)]
        obj.begin_step(parts, net)
        loss_sum = torch.zeros((), device=device)
        for i, part in enumerate(parts):
            sync = world == 1 or i == len(parts) - 1
            with (contextlib.nullcontext() if sync else fwd.no_sync()):
                with autocast():
                    losses = fwd(part.tokens[:, :-1], part.tokens[:, 1:])  # (b, L-1)
                obj.loss(losses, part).backward()
            loss_sum += losses.detach().mean() * part.share  # the full-token loss is what we log
        batches.prefetch(step + 1)  # the GPU is still busy with this step's kernels
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if world > 1:
            dist.all_reduce(loss_sum, op=dist.ReduceOp.AVG)
        done, tokens_seen = step + 1, tokens_seen + cfg.data.tokens_per_step
        obj.end_step(done)
        if main and (done % cfg.log_every == 0 or done == cfg.steps):
            loss_val = loss_sum.item()
            dt = time.perf_counter() - t0
            tps = cfg.data.tokens_per_step / dt
            mfu = model.flops_per_token(batch.seq_len) * tps / (peak * world) if peak else None
            _write(metrics, {"step": done, "tokens": tokens_seen, "seq_len": batch.seq_len, "loss": loss_val,
                             "lr": lr, "tokens_per_s": round(tps, 1), "mfu": mfu})
            metrics.flush()  # followable while it runs
            if done % max(1, cfg.steps // 20) == 0 or done == cfg.steps:
                eta = (time.perf_counter() - t_start) / (done - start) * (cfg.steps - done)
                log(f"[train] step {done}/{cfg.steps}  loss {loss_val:.4f}  L {batch.seq_len}  lr {lr:.2e}  "
                    f"{tps:,.0f} tok/s" + (f"  MFU {mfu:.1%}" if mfu else "") +
                    f"  ETA {int(eta) // 60}:{int(eta) % 60:02d}")
        if has_eval and ((cfg.eval_every and done % cfg.eval_every == 0) or done == cfg.steps):
            if main:
                last_eval = eval_loss(model, ds, sampler.eval_index, device, cfg.data.tokens_per_step, autocast)
                _write(metrics, {"step": done, "tokens": tokens_seen, "eval_loss": last_eval,
                                 "eval_tokens": eval_tokens(ds, sampler.eval_index)})
                log(f"[train] eval at step {done}: " + "  ".join(f"{k} {v:.4f}" for k, v in last_eval.items()))
            if world > 1:
                dist.barrier()
        if (cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == cfg.steps:
            if main:
                metrics.flush()
                extra = {"objective": obj.state_dict()}  # an objective without state writes none
                ckpts.save(done, model, opt, {**meta, "tokens": tokens_seen, **(extra if extra["objective"] else {})})
            if world > 1:
                dist.barrier()

    final = {"steps": cfg.steps, "tokens": tokens_seen, "eval_loss": last_eval, "checkpoint": ckpts.latest}
    if main:
        metrics.close()
        if last_eval is None:  # resumed from the very last checkpoint: nothing left to run
            last_eval = _last_eval(metrics_path)
            final["eval_loss"] = last_eval
        checkpoint.write_json(os.path.join(cfg.output, "final.json"), final)
    return final


def _write(f, record: dict) -> None:
    f.write(json.dumps(record) + "\n")


def _last_eval(path: str):
    with open(path) as f:
        evals = [json.loads(ln) for ln in f if '"eval_loss"' in ln]
    return evals[-1]["eval_loss"] if evals else None
