"""Token shards on disk: the format the ``decompose`` stage writes and training reads.

Readable with ``json`` and ``numpy.memmap`` alone::

    shards/
      manifest.json                   written last: its presence marks a complete shard set
      tokenizer.json                  a copy of the tokenizer that made the tokens
      len64/part-<P>.tokens.bin       raw little-endian [n, 64] array of token ids (dtype in the manifest)
      len64/part-<P>.domains.bin      raw uint16 [n]: domain id of each sequence (index into "domains")
      len128/ ... len2048/            one directory per sequence length (bucket D_i has length 2^i)

``manifest["buckets"][str(L)]["files"]`` lists each part with its sequence count ``n``,
so ``np.memmap(path, dtype=manifest["dtype"], mode="r", shape=(n, L))`` opens it.
Every file is written under a temporary name and renamed (``os.replace``), so a crash
never leaves half a file behind a complete name; a retried task rewrites the same names.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np

from datacurate.config import ConfigError

FORMAT = "datacurate-token-shards"
VERSION = 1
MANIFEST = "manifest.json"
DOMAIN_DTYPE = np.dtype("<u2")


def bucket_dir(seq_len: int) -> str:
    return f"len{seq_len}"


def _write_bytes(path: str, data: bytes | np.ndarray) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        if isinstance(data, np.ndarray):
            np.ascontiguousarray(data).tofile(f)
        else:
            f.write(data)
    os.replace(tmp, path)


def write_piece(root: str, part: str, tokens: np.ndarray, domains: np.ndarray, dtype: np.dtype) -> dict:
    """One part's sequences of one length -> ``lenL/part-<part>.{tokens,domains}.bin``.

    ``tokens`` is (n, L); returns the manifest entry of the piece.
    """
    n, seq_len = tokens.shape
    rel = os.path.join(bucket_dir(seq_len), f"part-{part}")
    dt = np.dtype(dtype).newbyteorder("<")
    if tokens.size and int(tokens.max()) > np.iinfo(dt).max:
        raise ValueError(f"token id {int(tokens.max())} does not fit {dt.name}")
    _write_bytes(os.path.join(root, rel + ".tokens.bin"), tokens.astype(dt, copy=False))
    _write_bytes(os.path.join(root, rel + ".domains.bin"), domains.astype(DOMAIN_DTYPE, copy=False))
    return {"tokens": rel + ".tokens.bin", "domains": rel + ".domains.bin", "n": int(n)}


def check_dir(root: str, overwrite: bool) -> None:
    """Refuse a non-empty ``root`` that is not a shard set, or a shard set without ``overwrite``."""
    if not (os.path.isdir(root) and os.listdir(root)):
        return
    ours = [n for n in os.listdir(root) if n in (MANIFEST, "tokenizer.json") or
            (re.fullmatch(r"len\d+", n) and os.path.isdir(os.path.join(root, n)))]
    if not ours or (not os.path.exists(os.path.join(root, MANIFEST)) and len(ours) < len(os.listdir(root))):
        raise ConfigError(f"decompose: output {root} is a non-empty directory that holds no token shards")
    if not overwrite:
        raise ConfigError(f"decompose: output {root} already holds shards; set output.overwrite: true")


def prepare_dir(root: str, overwrite: bool) -> None:
    """Make ``root`` ready for a new shard set: an earlier one is removed when
    ``overwrite`` (only its manifest, tokenizer copy and ``len<L>/`` folders: other files
    stay); a non-empty directory that is not a shard set is refused."""
    check_dir(root, overwrite)
    if os.path.isdir(root):
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if name in (MANIFEST, "tokenizer.json"):
                os.remove(path)
            elif os.path.isdir(path) and re.fullmatch(r"len\d+", name):
                shutil.rmtree(path)
    os.makedirs(root, exist_ok=True)


def build_manifest(pieces: list[dict], **fields) -> dict:
    """Merge the pieces' entries (``{"seq_len", "tokens", "domains", "n"}``) into per-bucket lists."""
    buckets: dict[str, dict] = {}
    for p in sorted(pieces, key=lambda p: (p["seq_len"], p["tokens"])):
        b = buckets.setdefault(str(p["seq_len"]), {"seq_len": p["seq_len"], "sequences": 0, "tokens": 0, "files": []})
        b["sequences"] += p["n"]
        b["tokens"] += p["n"] * p["seq_len"]
        b["files"].append({k: p[k] for k in ("tokens", "domains", "n")})
    return {"format": FORMAT, "version": VERSION, **fields, "buckets": buckets}


def write_manifest(root: str, manifest: dict) -> None:
    _write_bytes(os.path.join(root, MANIFEST), json.dumps(manifest, indent=2).encode())


def read_manifest(root: str) -> dict:
    path = os.path.join(root, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {MANIFEST} in {root} (not a complete token shard set)")
    with open(path) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} manifest")
    return manifest


def copy_tokenizer(root: str, tokenizer_path: str) -> None:
    with open(tokenizer_path, "rb") as f:
        _write_bytes(os.path.join(root, "tokenizer.json"), f.read())
