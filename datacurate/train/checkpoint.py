"""Checkpoints: ``OUT/checkpoints/step-<N>/`` (``model.pt``, ``optim.pt``, ``state.json``)
and ``OUT/checkpoints/latest`` (a relative symlink to the newest complete one).

A checkpoint is written under ``step-<N>.tmp`` and renamed, and ``latest`` is switched
by renaming a new link over it, so a kill at any moment leaves the previous checkpoint
complete and ``latest`` pointing at a complete one. ``state.json`` holds the step, the
tokens seen, the model shape, the tokenizer's sha256, the RNG states, the resolved
training config and ``weights_sha256`` (a hash of the weights themselves, which the
RHO-1 sidecar records to refuse losses of another reference).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from typing import Optional

import torch

from datacurate.formats import storage
from datacurate.train.model import GPT, GPTShape

LATEST = "latest"


class CheckpointError(ValueError):
    """A checkpoint that is missing, incomplete or does not fit (one line)."""


def weights_sha256(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return h.hexdigest()


def save(root: str, step: int, model: GPT, optimizer: Optional[torch.optim.Optimizer], state: dict, keep: int = 0) -> str:
    """Write ``root/step-<step>`` atomically, point ``latest`` at it, keep the newest ``keep``."""
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, f"step-{step}")
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    torch.save(model.state_dict(), os.path.join(tmp, "model.pt"))
    if optimizer is not None:
        torch.save(optimizer.state_dict(), os.path.join(tmp, "optim.pt"))
    state = {**state, "step": step, "weights_sha256": weights_sha256(model),
             "rng": {"torch": torch.get_rng_state().tolist()}}
    with open(os.path.join(tmp, "state.json"), "w") as f:
        json.dump(state, f)
    if os.path.exists(final):
        shutil.rmtree(final)
    os.replace(tmp, final)
    link = os.path.join(root, LATEST + ".tmp")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(f"step-{step}", link)
    os.replace(link, os.path.join(root, LATEST))
    if keep:
        for old in steps_in(root)[:-keep]:
            shutil.rmtree(os.path.join(root, f"step-{old}"), ignore_errors=True)
    return final


def steps_in(root: str) -> list[int]:
    if not os.path.isdir(root):
        return []
    return sorted(int(m.group(1)) for n in os.listdir(root) if (m := re.fullmatch(r"step-(\d+)", n))
                  and os.path.isfile(os.path.join(root, n, "state.json")))


def resolve(path: str) -> str:
    """A checkpoint directory from a checkpoint dir, ``.../checkpoints/latest``, a
    ``checkpoints/`` dir or a training output dir; in a bucket (``s3://``), downloaded first."""
    if storage.is_remote(path):
        path = fetch_checkpoint(path)
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint not found: {path}")
    for cand in (path, os.path.join(path, LATEST), os.path.join(path, "checkpoints", LATEST)):
        real = os.path.realpath(cand)
        if os.path.isfile(os.path.join(real, "state.json")) and os.path.isfile(os.path.join(real, "model.pt")):
            return real
    raise CheckpointError(f"{path}: not a complete checkpoint (no state.json + model.pt, no checkpoints/latest)")


def fetch_checkpoint(url: str, cache_dir: str | None = None) -> str:
    """A checkpoint in a bucket (a checkpoint prefix, ``.../checkpoints``, ``.../checkpoints/latest``
    or a training output) downloaded into the cache; its local directory."""
    url = url.rstrip("/")
    pointers = (url, storage.join(url, LATEST), storage.join(url, "checkpoints", LATEST))  # ``latest``: "step-<N>"
    src = url if storage.isfile(storage.join(url, "state.json")) else next(
        (storage.join(p.rsplit("/", 1)[0], storage.read_text(p).strip()) for p in pointers if storage.isfile(p)), None)
    if src is None:
        raise CheckpointError(f"{url}: not a complete checkpoint (no state.json + model.pt, no checkpoints/latest)")
    local = os.path.join(cache_dir or os.path.join(storage.cache_root(), "checkpoints"), storage.url_key(src))
    for name in storage.listdir(src):
        storage.get_file(storage.join(src, name), os.path.join(local, name))
    return local


def write_json(path: str, data) -> None:
    """``data`` as JSON at ``path``, written whole (a temporary file renamed over it)."""
    storage.write_text(path, json.dumps(data, indent=2))


def truncate_jsonl(path: str, step: int) -> None:
    """Keep the records of ``path`` (metrics.jsonl, weights.jsonl) up to ``step``, the checkpoint
    resumed from: a resumed run appends exactly what an uninterrupted one would have written."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = [ln for ln in f if ln.strip()]
    keep = []
    for ln in lines:
        try:
            if json.loads(ln)["step"] <= step:
                keep.append(ln)
        except (ValueError, KeyError):
            break  # a line cut by the kill
    storage.write_text(path, "".join(keep))


def read_state(path: str) -> dict:
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)


def load_model(path: str, device: str = "cpu", tokenizer_sha256: Optional[str] = None, longest: int = 0,
               name: Optional[str] = None) -> tuple[GPT, dict]:
    """(model in eval mode, state) of checkpoint ``path``; refuses another tokenizer's, and one
    whose max_seq_len is shorter than ``longest`` (the shards' longest bucket; ``name``: the
    checkpoint as that error names it, default ``path``)."""
    given, path = path, resolve(path)
    state = read_state(path)
    if tokenizer_sha256 and state.get("tokenizer_sha256") != tokenizer_sha256:
        raise CheckpointError(f"{path}: trained with tokenizer {str(state.get('tokenizer_sha256'))[:12]}…, the shards "
                              f"use {tokenizer_sha256[:12]}…")
    model = GPT(GPTShape(**state["shape"]))
    try:
        model.load_state_dict(torch.load(os.path.join(path, "model.pt"), map_location="cpu", weights_only=True))
    except (RuntimeError, EOFError, OSError) as e:
        raise CheckpointError(f"{path}: model.pt does not load ({str(e).splitlines()[0]})") from None
    if longest > model.shape.max_seq_len:
        raise CheckpointError(f"{name or given}: max_seq_len {model.shape.max_seq_len} is shorter than the longest "
                              f"bucket ({longest})")
    return model.to(device).eval(), state


def restore(path: str, model: GPT, optimizer: torch.optim.Optimizer, shape: GPTShape, tokenizer_sha256: str) -> dict:
    """Load a checkpoint into ``model`` / ``optimizer`` for ``--resume``; returns its state."""
    state = read_state(path)
    if GPTShape(**state["shape"]) != shape:
        raise CheckpointError(f"{path}: checkpoint shape {state['shape']} differs from this run's {shape.__dict__}")
    if state.get("tokenizer_sha256") != tokenizer_sha256:
        raise CheckpointError(f"{path}: checkpoint was trained on shards of another tokenizer")
    model.load_state_dict(torch.load(os.path.join(path, "model.pt"), map_location="cpu", weights_only=True))
    optimizer.load_state_dict(torch.load(os.path.join(path, "optim.pt"), map_location="cpu", weights_only=True))
    torch.set_rng_state(torch.tensor(state["rng"]["torch"], dtype=torch.uint8))
    return state
