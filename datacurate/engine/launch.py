"""The one way a model is trained: ``datacurate train`` / ``doremi`` and a pipeline's
``train:`` / ``doremi:`` sections all come here.

* Where: in this process when ``workers`` is 1 and no Ray cluster is named; on Ray Train
  (:mod:`datacurate.engine.ray.train`) with ``workers > 1`` or a Ray address
  (``--ray-address``, ``ray.address`` or ``$RAY_ADDRESS``), so a named cluster trains there.
* Storage: ``s3://`` shards are cached locally and an ``s3://`` training output is mirrored
  per checkpoint around the loop (:func:`datacurate.train.remote.mirrored`, on every
  rank); DoReMi's output (two models and the weights) runs into a local mirror uploaded at
  the end (:func:`datacurate.train.remote.mirrored_output`). ``resume`` reads the latest
  checkpoint from the bucket (training) or keeps the local mirror (DoReMi).
* Logging: ``log`` takes every progress line (None: standard error); Ray Train's workers
  print to standard error unless ``log`` is given as ``quiet``.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

from datacurate.configs.pipeline import RayConfig
from datacurate.engine.ray.cluster import refuse_relative_in_job
from datacurate.core.errors import doing


def quiet(msg: str) -> None:
    """A ``log`` that drops every line."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def on_ray_train(cfg, ray_cfg: Optional[RayConfig]) -> bool:
    """Several workers, or a named cluster: Ray Train; otherwise this process."""
    return cfg.workers > 1 or bool(ray_cfg is not None and ray_cfg.address)


def _runner(cfg, ray_cfg: Optional[RayConfig], log: Callable[[str], None]):
    """``run(train_cfg, resume, objective) -> final`` for ``cfg`` (see :func:`on_ray_train`)."""
    if on_ray_train(cfg, ray_cfg):
        from datacurate.engine.ray.train import run_train

        return lambda c, resume, objective: run_train(c, resume=resume, ray_cfg=ray_cfg, objective=objective,
                                                      quiet=log is quiet)
    from datacurate.train.loop import train

    return lambda c, resume, objective: train(c, resume=resume, objective=objective, log=log)


def launch_train(cfg, resume: bool = False, ray_cfg: Optional[RayConfig] = None,
                 log: Optional[Callable[[str], None]] = None) -> dict:
    """Train ``cfg`` (a :class:`~datacurate.configs.train.TrainConfig`); ``final.json``'s content."""
    refuse_relative_in_job({"output": cfg.output})
    with doing("training"):
        return _runner(cfg, ray_cfg, log or _stderr)(cfg, resume, None)


def launch_doremi(cfg, resume: bool = False, ray_cfg: Optional[RayConfig] = None,
                  log: Optional[Callable[[str], None]] = None) -> dict:
    """DoReMi's domain weights for ``cfg`` (a :class:`~datacurate.configs.train.DoremiRunConfig`),
    also written to ``OUT/domain_weights.json``."""
    from datacurate.train.doremi import run_doremi
    from datacurate.train.remote import mirrored_output

    refuse_relative_in_job({"output": cfg.output})
    log = log or _stderr
    with doing("DoReMi"), mirrored_output(cfg, resume, last="domain_weights.json") as local:
        return run_doremi(local, _runner(local, ray_cfg, log), resume=resume, log=log)
