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

from datacurate.formats import storage
from datacurate.core.coerce import from_dict
from datacurate.configs.pipeline import RayConfig, to_dict


def _worker(config: dict) -> None:
    from datacurate.configs.train import TrainConfig
    from datacurate.train.loop import train

    train(from_dict(TrainConfig, config["cfg"], "train"), resume=config["resume"], objective=config["objective"],
          log=(lambda m: None) if config["quiet"] else None)


def run_train(cfg, resume: bool = False, ray_cfg: RayConfig | None = None, objective=None,
              quiet: bool = False) -> dict:
    """Train ``cfg`` (a :class:`TrainConfig`) on ``cfg.workers`` Ray Train workers;
    ``objective`` (DoReMi's Group DRO settings) as in the loop. ``s3://``
    shards and outputs are handled by each rank's loop (:func:`datacurate.train.remote.mirrored`).
    ``quiet``: the workers log nothing."""
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from datacurate.engine.ray.cluster import init_ray, shutdown
    from datacurate.train.loop import pick_device

    started = init_ray(ray_cfg or RayConfig())
    try:
        use_gpu = pick_device(cfg.device) == "cuda" if cfg.device != "auto" else bool(ray.cluster_resources().get("GPU"))
        raw = to_dict(cfg)  # absolute paths: the workers may not share the driver's working directory
        raw.update(shards=storage.abspath(cfg.shards), output=storage.abspath(cfg.output), workers=1,
                   device="cuda" if use_gpu else "cpu")
        if cfg.rho1.reference:
            raw["rho1"]["reference"] = storage.abspath(cfg.rho1.reference)
        if isinstance(cfg.data.domain_weights, str):
            raw["data"]["domain_weights"] = storage.abspath(cfg.data.domain_weights)
        trainer = TorchTrainer(
            _worker, train_loop_config={"cfg": raw, "resume": resume, "objective": objective, "quiet": quiet},
            torch_config=TorchConfig(backend="nccl" if use_gpu else "gloo"),
            scaling_config=ScalingConfig(num_workers=cfg.workers, use_gpu=use_gpu),
            run_config=RunConfig(storage_path=_ray_dir(cfg), name="train"),
        )
        _fit(trainer)
    finally:
        if started:
            shutdown()
    return json.loads(storage.read_text(storage.join(storage.abspath(cfg.output), "final.json")))


def _fit(trainer) -> None:
    """``trainer.fit()`` in a thread, the driver's main thread waiting: called from the main
    thread, Ray Train replaces the SIGINT handler with its own (it aborts the run and the
    process exits with status 1, silently); so Ctrl-C stays the CLI's one line. An
    interrupted driver's ``finally`` shuts its Ray down, and the run with it."""
    import threading

    failed: list[BaseException] = []

    def fit() -> None:
        try:
            trainer.fit()
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            failed.append(e)

    thread = threading.Thread(target=fit, name="datacurate-ray-train", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.5)
    if failed:
        raise failed[0]


def _ray_dir(cfg) -> str:
    """Ray Train's own run state: OUT/_ray, or under ``cache_dir`` for an ``s3://`` OUT."""
    if storage.is_remote(cfg.output):
        return os.path.join(cfg.cache_dir or storage.cache_root(), "ray_train", storage.url_key(cfg.output))
    return os.path.abspath(os.path.join(cfg.output, "_ray"))
