"""Training from and to object storage (``shards: s3://...``, ``output: s3://...``).

* Shards: every file the manifest lists is streamed into a local cache
  (``cache_dir``, default ``~/.cache/datacurate/shards``) and memory-mapped there, as a
  local shard set is. A file is checked against the size the manifest gives it (``n`` x
  sequence length x item size) before and after the download, and after it against the
  xxh3-128 digest the manifest records (a mismatch is a one-line error and the file is
  dropped from the cache); the cache is keyed by the
  URL and the manifest's sha256, so a rewritten shard set is fetched again. The cache is
  capped (``cache_max_gb``): older cached shard sets go first, and a set larger than the
  cap is a one-line error.
* Output: the loop writes into a local mirror of the output; each checkpoint is then
  uploaded file by file (each object appears whole: one PUT or one completed multipart
  upload), ``state.json`` last, and only then is ``checkpoints/latest`` (an object holding
  ``step-<N>``) rewritten: ``latest`` never names an incomplete checkpoint.
  ``--resume`` reads ``latest`` from the bucket and downloads that checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil

import numpy as np

from datacurate import storage
from datacurate.config import ConfigError
from datacurate.shards import DOMAIN_DTYPE, MANIFEST, file_digest
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
    tmp = os.path.join(local, f"{MANIFEST}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(raw)
    os.replace(tmp, os.path.join(local, MANIFEST))  # last: a complete local copy
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


def fetch_checkpoint(url: str, cache_dir: str | None = None) -> str:
    """A checkpoint in a bucket (a checkpoint prefix, ``.../checkpoints``, ``.../checkpoints/latest``
    or a training output) downloaded into the cache; its local directory."""
    url = url.rstrip("/")
    candidates = [url] if storage.isfile(storage.join(url, "state.json")) else []
    for pointer in (url, storage.join(url, checkpoint.LATEST), storage.join(url, "checkpoints", checkpoint.LATEST)):
        if not candidates and storage.isfile(pointer):
            candidates.append(storage.join(pointer.rsplit("/", 1)[0], storage.read_text(pointer).strip()))
    if not candidates:
        raise checkpoint.CheckpointError(f"{url}: not a complete checkpoint (no state.json + model.pt, no "
                                         "checkpoints/latest)")
    src = candidates[0]
    local = os.path.join(cache_dir or os.path.join(storage.cache_root(), "checkpoints"), storage.url_key(src))
    for name in storage.listdir(src):
        storage.get_file(storage.join(src, name), os.path.join(local, name))
    return local


class Sync:
    """Mirrors a local training output to its URL (a no-op for a local output)."""

    def __init__(self, url: str | None = None, local: str | None = None, names: dict[str, str] | None = None):
        self.url, self.local = url, local
        self.names = names or {}  # local path -> URL, for the text files uploaded (config.yaml)

    def start(self, fresh: bool) -> None:
        """A fresh run: the earlier run's checkpoints in the bucket go (as the local loop's do)."""
        if self.url and fresh:
            storage.delete(storage.join(self.url, "checkpoints"))
            storage.delete(storage.join(self.url, "final.json"))

    def checkpoint(self, ckpt_dir: str, step: int) -> None:
        if not self.url:
            return
        remote = storage.join(self.url, "checkpoints")
        name = f"step-{step}"
        storage.upload_tree(os.path.join(ckpt_dir, name), storage.join(remote, name), last=("state.json",))
        storage.write_text(storage.join(remote, checkpoint.LATEST), name)  # only now: the checkpoint is whole
        keep = {f"step-{s}" for s in checkpoint.steps_in(ckpt_dir)}
        for old in storage.listdir(remote):
            if old.startswith("step-") and old not in keep:
                storage.delete(storage.join(remote, old))
        self._put("metrics.jsonl")

    def finish(self, final: dict) -> dict:
        if not self.url:
            return final
        final = {**final, "checkpoint": storage.join(self.url, "checkpoints", checkpoint.LATEST)}
        with open(os.path.join(self.local, "config.yaml")) as f:
            text = f.read()
        for path, url in self.names.items():
            text = text.replace(path, url)
        storage.write_text(storage.join(self.url, "config.yaml"), text)
        self._put("metrics.jsonl")
        storage.write_text(storage.join(self.url, "final.json"), json.dumps(final, indent=2))
        return final

    def _put(self, name: str) -> None:
        path = os.path.join(self.local, name)
        if os.path.isfile(path):
            storage.put_file(path, storage.join(self.url, name))


def localize(cfg, resume: bool, rank: int = 0):
    """(cfg with local shards and output, Sync): remote shards cached, a remote output
    mirrored locally, and on ``resume`` its latest checkpoint fetched from the bucket."""
    if not (storage.is_remote(cfg.shards) or storage.is_remote(cfg.output)):
        return cfg, Sync()
    given, cfg = cfg, copy.deepcopy(cfg)
    max_bytes = int(cfg.cache_max_gb * 1e9) if cfg.cache_max_gb else None
    if storage.is_remote(cfg.shards):
        cfg.shards = cache_shards(cfg.shards, cfg.cache_dir and os.path.join(cfg.cache_dir, "shards"), max_bytes)
    if not storage.is_remote(cfg.output):
        return cfg, Sync()
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
    return cfg, Sync(url, local, {local: url, cfg.shards: given.shards})



@contextlib.contextmanager
def mirrored_output(cfg, resume: bool, last: str):
    """DoReMi's whole output (reference/, proxy/, weights) for an ``s3://`` output: written to
    a local mirror (kept for ``--resume`` on this machine), uploaded when the run is done,
    ``last`` after everything else. Remote shards are cached as for training."""
    if not (storage.is_remote(cfg.shards) or storage.is_remote(cfg.output)):
        yield cfg
        return
    local = copy.deepcopy(cfg)
    if storage.is_remote(cfg.shards):
        local.shards = cache_shards(cfg.shards, cfg.cache_dir and os.path.join(cfg.cache_dir, "shards"),
                                    int(cfg.cache_max_gb * 1e9) if cfg.cache_max_gb else None)
    if storage.is_remote(cfg.output):
        storage.check_bucket(cfg.output)
        local.output = os.path.join(cfg.cache_dir or storage.cache_root(), "doremi", storage.url_key(cfg.output))
        if not resume:
            shutil.rmtree(local.output, ignore_errors=True)
    yield local
    if storage.is_remote(cfg.output):
        storage.delete(storage.join(cfg.output, last))
        storage.upload_tree(local.output, cfg.output, last=(last,))
