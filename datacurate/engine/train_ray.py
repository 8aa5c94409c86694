"""Data-parallel training on Ray Train: the same loop (:func:`datacurate.train.loop.train`)
in ``workers`` processes under ``TorchTrainer`` (DDP over gloo on CPU, nccl on GPU).

Ray Train starts the workers and the ``torch.distributed`` process group; the loop sees
an initialised process group, wraps the model in DDP and takes its rank's share of each
step's global batch. Rank 0 writes metrics and checkpoints to the output directory (a
path every worker sees: local disk on one machine, a shared file system on a cluster).
Results travel through files (``final.json``), not ``ray.train.report``.
"""

from __future__ import annotations

import json
import os

from datacurate.config import RayConfig, from_dict, to_dict


def _worker(config: dict) -> None:
    from datacurate.train.config import TrainConfig
    from datacurate.train.loop import train

    train(from_dict(TrainConfig, config["cfg"], "train"), resume=config["resume"], objective=config["objective"])


def run_train(cfg, resume: bool = False, ray_cfg: RayConfig | None = None, objective=None) -> dict:
    """Train ``cfg`` (a :class:`TrainConfig`) on ``cfg.workers`` Ray Train workers;
    ``objective`` (a picklable factory, e.g. DoReMi's Group DRO) as in the loop."""
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from datacurate.engine.ray_backend import init_ray, shutdown
    from datacurate.train.loop import pick_device

    started = init_ray(ray_cfg or RayConfig())
    try:
        use_gpu = pick_device(cfg.device) == "cuda" if cfg.device != "auto" else bool(ray.cluster_resources().get("GPU"))
        raw = to_dict(cfg)
        raw.update(shards=os.path.abspath(cfg.shards), output=os.path.abspath(cfg.output), workers=1,
                   device="cuda" if use_gpu else "cpu")
        if cfg.rho1.reference:
            raw["rho1"]["reference"] = os.path.abspath(cfg.rho1.reference)
        if isinstance(cfg.data.domain_weights, str):
            raw["data"]["domain_weights"] = os.path.abspath(cfg.data.domain_weights)
        trainer = TorchTrainer(
            _worker, train_loop_config={"cfg": raw, "resume": resume, "objective": objective},
            torch_config=TorchConfig(backend="nccl" if use_gpu else "gloo"),
            scaling_config=ScalingConfig(num_workers=cfg.workers, use_gpu=use_gpu),
            run_config=RunConfig(storage_path=os.path.abspath(os.path.join(cfg.output, "_ray")), name="train"),
        )
        trainer.fit()
    finally:
        if started:
            shutdown()
    with open(os.path.join(cfg.output, "final.json")) as f:
        return json.load(f)
