"""Training from and to object storage (``shards: s3://...``, ``output: s3://...``), as the
README's "Object storage" section says under **Training**: remote shards are fetched into
a capped local cache (keyed by the URL and the manifest's sha256, every file checked
against the manifest's size and xxh3-128 digest) and memory-mapped there; a remote output
is a local mirror (:func:`mirrored`, around the loop) whose checkpoints are uploaded whole,
``state.json`` last, before ``checkpoints/latest`` names them.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil

import numpy as np

from datacurate.formats import storage
from datacurate.configs.pipeline import ConfigError
from datacurate.formats.shards import DOMAIN_DTYPE, MANIFEST, file_digest
from datacurate.train import checkpoint


def cache_shards(url: str, cache_dir: str | None = None, max_bytes: int | None = None) -> str:
    """A local directory holding the shard set at ``url`` (see the module docstring)."""
    root = cache_dir or os.path.join(storage.cache_root(), "shards")
    try:
        raw = storage.read_bytes(storage.join(url, MANIFEST))
    except FileNotFoundError:
        raise FileNotFoundError(f"no {MANIFEST} in {url} (not a complete token shard set)") from None
    manifest = json.loads(raw)
    local = os.path.join(root, f"{storage.url_key(url)}-{hashlib.sha256(raw).hexdigest()[:12]}")
    dtype = np.dtype(manifest["dtype"])
    files = {"tokenizer.json": None} if storage.isfile(storage.join(url, "tokenizer.json")) else {}
    digests = {}
    for b in manifest["buckets"].values():
        for f in b["files"]:
            files[f["tokens"]] = f["n"] * int(b["seq_len"]) * dtype.itemsize
            files[f["domains"]] = f["n"] * DOMAIN_DTYPE.itemsize
            digests.update({f[k]: f[f"{k}_xxh3"] for k in ("tokens", "domains") if f"{k}_xxh3" in f})
    total = sum(v or 0 for v in files.values())
    if max_bytes is not None and total > max_bytes:
        raise ConfigError(f"{url}: the shards hold {total / 1e9:.2f} GB, more than the shard cache's cap "
                          f"({max_bytes / 1e9:.2f} GB, cache_max_gb)")
    if max_bytes is not None:
        _evict(root, keep=local, room=max_bytes - total)
    for rel, want in files.items():
        target = os.path.join(local, rel)
        if os.path.isfile(target) and (want is None or os.path.getsize(target) == want):
            continue
        src = storage.join(url, *rel.split("/"))
        if want is not None and storage.size(src) != want:
            raise ConfigError(f"{src}: {storage.size(src):,} bytes, the manifest says {want:,} (truncated or overwritten)")
        storage.get_file(src, target)
        got_size = os.path.getsize(target)
        if want is not None and got_size != want:
            os.remove(target)
            raise ConfigError(f"{src}: downloaded {got_size:,} bytes, the manifest says {want:,}")
        if rel in digests:
            with open(target, "rb") as fh:
                got = file_digest(fh)
            if got != digests[rel]:
                os.remove(target)  # never memory-mapped, and fetched again next time
                raise ConfigError(f"{src}: checksum {got} is not the manifest's {digests[rel]} (corrupted or "
                                  "overwritten)")
    storage.write_bytes(os.path.join(local, MANIFEST), raw)  # last: a complete local copy
    os.utime(local)
    return local


def _evict(root: str, keep: str, room: int) -> None:
    """Delete cached shard sets, least recently used first, until the others fit in ``room``."""
    if not os.path.isdir(root):
        return
    sets = []
    for name in os.listdir(root):
        d = os.path.join(root, name)
        if d != keep and os.path.isdir(d):
            size = sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)
            sets.append((os.path.getmtime(d), size, d))
    used = sum(s for _, s, _ in sets)
    for _, size, d in sorted(sets):
        if used <= room:
            break
        shutil.rmtree(d, ignore_errors=True)
        used -= size


class Checkpoints:
    """A run's ``checkpoints/``, as the loop sees it: saved under ``local``; for an ``s3://``
    output (``url``) each is then uploaded (``latest`` only once it is whole), with metrics.jsonl."""

    def __init__(self, local: str, keep: int, url: str | None = None):
        self.local, self.root, self.keep, self.url = local, os.path.join(local, "checkpoints"), keep, url
        self.latest = storage.join(url or local, "checkpoints", checkpoint.LATEST)

    def clear(self) -> None:
        """A fresh run: the earlier run's checkpoints go (in the bucket too, with its final.json)."""
        shutil.rmtree(self.root, ignore_errors=True)
        for name in ("checkpoints", "final.json") if self.url else ():
            storage.delete(storage.join(self.url, name))

    def save(self, step: int, model, optimizer, state: dict) -> None:
        checkpoint.save(self.root, step, model, optimizer, state, keep=self.keep)
        if not self.url:
            return
        remote, name = storage.join(self.url, "checkpoints"), f"step-{step}"
        storage.upload_tree(os.path.join(self.root, name), storage.join(remote, name), last=("state.json",))
        storage.write_text(storage.join(remote, checkpoint.LATEST), name)  # only now: the checkpoint is whole
        keep = {f"step-{s}" for s in checkpoint.steps_in(self.root)}
        for old in storage.listdir(remote):
            if old.startswith("step-") and old not in keep:
                storage.delete(storage.join(remote, old))
        self.put("metrics.jsonl")

    def put(self, name: str) -> None:
        if os.path.isfile(os.path.join(self.local, name)):
            storage.put_file(os.path.join(self.local, name), storage.join(self.url, name))


def _cached(cfg) -> str:
    """``cfg.shards``, or their local copy in the shard cache when they are remote."""
    if not storage.is_remote(cfg.shards):
        return cfg.shards
    max_bytes = int(cfg.cache_max_gb * 1e9) if cfg.cache_max_gb else None
    return cache_shards(cfg.shards, cfg.cache_dir and os.path.join(cfg.cache_dir, "shards"), max_bytes)


@contextlib.contextmanager
def mirrored(cfg, resume: bool, rank: int = 0):
    """Around the training loop: yields (cfg with local shards and output, its :class:`Checkpoints`).
    A remote output is a local mirror (on ``resume`` holding the bucket's latest checkpoint)
    whose checkpoints are uploaded as they are saved, and whose config.yaml, metrics.jsonl
    and final.json are uploaded when the loop returns (rank 0)."""
    given, cfg = cfg, copy.deepcopy(cfg)
    cfg.shards = _cached(cfg)
    if not storage.is_remote(cfg.output):
        yield cfg, Checkpoints(cfg.output, cfg.keep_checkpoints)
        return
    url = cfg.output.rstrip("/")
    storage.check_bucket(url)
    # one mirror per rank: every rank may need the checkpoint to resume, rank 0 alone writes
    local = os.path.join(cfg.cache_dir or storage.cache_root(), "train", storage.url_key(url), f"rank{rank}")
    shutil.rmtree(local, ignore_errors=True)
    os.makedirs(local)
    latest = storage.join(url, "checkpoints", checkpoint.LATEST)
    if resume and storage.isfile(latest):
        name = storage.read_text(latest).strip()
        src = storage.join(url, "checkpoints", name)
        for f in storage.listdir(src):
            storage.get_file(storage.join(src, f), os.path.join(local, "checkpoints", name, f))
        os.symlink(name, os.path.join(local, "checkpoints", checkpoint.LATEST))
        if storage.isfile(storage.join(url, "metrics.jsonl")):
            storage.get_file(storage.join(url, "metrics.jsonl"), os.path.join(local, "metrics.jsonl"))
    cfg.output = local
    ckpts = Checkpoints(local, cfg.keep_checkpoints, url)
    yield cfg, ckpts
    if rank == 0:
        with open(os.path.join(local, "config.yaml")) as f:
            text = f.read().replace(local, url).replace(cfg.shards, given.shards)
        storage.write_text(storage.join(url, "config.yaml"), text)
        ckpts.put("metrics.jsonl")
        ckpts.put("final.json")


@contextlib.contextmanager
def mirrored_output(cfg, resume: bool, last: str):
    """DoReMi's whole output (reference/, proxy/, weights) for an ``s3://`` output: written to
    a local mirror (kept for ``--resume`` on this machine), uploaded when the run is done,
    ``last`` after everything else. Remote shards are cached as for training."""
    local = copy.deepcopy(cfg)
    local.shards = _cached(cfg)
    if storage.is_remote(cfg.output):
        storage.check_bucket(cfg.output)
        local.output = os.path.join(cfg.cache_dir or storage.cache_root(), "doremi", storage.url_key(cfg.output))
        if not resume:
            shutil.rmtree(local.output, ignore_errors=True)
    yield local
    if storage.is_remote(cfg.output):
        storage.delete(storage.join(cfg.output, last))
        storage.upload_tree(local.output, cfg.output, last=(last,))
