"""A run whose outputs are in an object store (``output: s3://bucket/prefix``).

S3 has no rename, so the local run's "stage, then swap in" cannot happen in the bucket.
Instead the run is the local one, into a local mirror of OUT (``output.work_dir``, by
default ``~/.cache/datacurate/runs/<url>``), with its journal, ``_work`` and
``--resume``; when it is complete it is *published*:

1. the earlier run's ``stats.json`` is deleted (OUT no longer looks complete), then the
   earlier run's outputs;
2. every file is uploaded to its final key: one PUT or one completed multipart upload
   each, which S3 makes visible only whole, so no reader ever sees half a part;
3. ``stats.json`` is uploaded last: its presence marks a complete run.

A crash at any point leaves no ``stats.json`` under OUT; ``--resume`` finishes the local
run if it was unfinished, and publishes again. Text files name the local mirror where the
run wrote; they are published with the URL in its place.

Inputs are read from the bucket by the workers themselves (:mod:`datacurate.io`); the
mirror must be visible to every worker that writes parts, so on a multi-node cluster set
``output.work_dir`` to a shared file system (one machine needs nothing).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
from typing import Callable

from datacurate import storage
from datacurate.config import ConfigError, PipelineConfig

TEXT_SUFFIXES = (".json", ".jsonl", ".yaml", ".html", ".md")


def _rewrite(obj, mapping: dict[str, str]):
    """Every string in a config tree that starts with a mapped URL, with its local mirror."""
    if isinstance(obj, str):
        for url, local in mapping.items():
            if obj == url or obj.startswith(url + "/"):
                return local + obj[len(url):]
        return obj
    if isinstance(obj, list):
        return [_rewrite(v, mapping) for v in obj]
    if isinstance(obj, dict):
        return {k: _rewrite(v, mapping) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            setattr(obj, f.name, _rewrite(getattr(obj, f.name), mapping))
    return obj


def mirrors(cfg: PipelineConfig) -> dict[str, str]:
    """{output URL: its local mirror}: OUT, and the remote outputs outside it (a
    ``decompose.output``, ``train.output`` or ``doremi.output`` in another prefix)."""
    out = cfg.output.path.rstrip("/")
    work = cfg.output.work_dir or os.path.join(storage.cache_root(), "runs", storage.url_key(out))
    found = {out: os.path.join(os.path.abspath(work), "out")}
    others = [s.config.output for s in cfg.stages if s.name == "decompose"]
    others += [sec.output for sec in (cfg.train, cfg.doremi) if sec is not None]
    for url in others:
        if storage.is_remote(url) and not (url.rstrip("/") + "/").startswith(out + "/"):
            found[url.rstrip("/")] = os.path.join(os.path.abspath(work), "extra", storage.url_key(url))
    return found


def check_remote_output(cfg: PipelineConfig, owned: tuple[str, ...]) -> None:
    """The buckets answer, and OUT holds no earlier run unless ``overwrite``."""
    out = cfg.output.path.rstrip("/")
    for url in mirrors(cfg):
        storage.check_bucket(url)
    present = [n for n in owned if n != "_work" and storage.exists(storage.join(out, n))]
    if present and not cfg.output.overwrite:
        raise ConfigError(f"output: {out} already holds a run ({', '.join(present)}); set output.overwrite: true")


def _read_json(path: str):
    try:
        return json.loads(storage.read_text(path) if storage.is_remote(path) else open(path).read())
    except (FileNotFoundError, ValueError):
        return None


def run_remote(cfg: PipelineConfig, run_local: Callable, owned: Callable, digest: str, resume: bool, log) -> dict:
    """``run_local(local_cfg)`` into the mirrors, then publish (see the module docstring)."""
    out = cfg.output.path.rstrip("/")
    mapping = mirrors(cfg)
    local_cfg = _rewrite(copy.deepcopy(cfg), mapping)
    local_cfg.output.overwrite = True  # the mirror is ours; the bucket's earlier run was checked above
    local_out = mapping[out]
    unfinished = os.path.isdir(os.path.join(local_out, "_work"))
    done_local = _read_json(os.path.join(local_out, "stats.json"))
    if resume and not unfinished and done_local is None:
        done = _read_json(storage.join(out, "stats.json"))
        if done is not None and done.get("config_sha256") == digest:
            log(f"[datacurate] --resume: {out} holds a complete run of this configuration; nothing to do")
            return done
    if not (resume and (unfinished or done_local is not None)):
        check_remote_output(cfg, owned(cfg))
        for local in mapping.values():
            shutil.rmtree(local, ignore_errors=True)
    else:
        for url in mapping:
            storage.check_bucket(url)
    if resume and done_local is not None and done_local.get("config_sha256") == digest and not unfinished:
        log(f"[datacurate] resume: the run was complete locally in {local_out}; publishing it")
        rep = done_local
    else:
        rep = run_local(local_cfg, resume and unfinished)
        rep["config_sha256"] = digest  # of the configuration as given (the mirror's paths are not part of it)
        with open(os.path.join(local_out, "stats.json"), "w") as f:
            json.dump(rep, f, indent=2)
    publish(mapping, owned(cfg), out, log)
    if not cfg.output.keep_work:
        for local in mapping.values():
            shutil.rmtree(local, ignore_errors=True)
    return _unmap(rep, mapping)


def _unmap(obj, mapping: dict[str, str]):
    text = json.dumps(obj)
    for url, local in mapping.items():
        text = text.replace(json.dumps(local)[1:-1], json.dumps(url)[1:-1])
    return json.loads(text)


def publish(mapping: dict[str, str], owned: tuple[str, ...], out: str, log) -> None:
    """Replace what the bucket holds under each URL with its mirror, ``stats.json`` last."""
    stats = storage.join(out, "stats.json")
    storage.delete(stats)  # first: from here on OUT does not look complete
    for url, local in mapping.items():
        names = set(os.listdir(local)) if os.path.isdir(local) else set()
        for name in sorted((names | (set(owned) if url == out else set())) - {"_work", "stats.json"}):
            storage.delete(storage.join(url, name))
    n = 0
    for url, local in mapping.items():
        for d, dirs, files in os.walk(local):
            dirs[:] = sorted(x for x in dirs if not (d == local and x == "_work"))
            for name in sorted(files) + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                rel = os.path.relpath(os.path.join(d, name), local)
                target = storage.join(url, *rel.split(os.sep))
                if os.path.islink(os.path.join(d, name)):  # a checkpoint dir's latest: an object naming its target
                    storage.write_text(target, os.readlink(os.path.join(d, name)))
                elif rel != "stats.json":
                    _upload(os.path.join(d, name), target, mapping)
                else:
                    continue
                n += 1
    _upload(os.path.join(mapping[out], "stats.json"), stats, mapping)
    log(f"[datacurate] published {n + 1} files to {', '.join(mapping)}")


def _upload(local: str, url: str, mapping: dict[str, str]) -> None:
    if not local.endswith(TEXT_SUFFIXES):
        storage.put_file(local, url)
        return
    with open(local, "rb") as f:
        data = f.read()
    for remote, mirror in mapping.items():  # the mirror's paths, in plain and JSON-escaped form
        data = data.replace(mirror.encode(), remote.encode())
    storage.write_bytes(url, data)
