"""Token shards on disk: the format the ``decompose`` stage writes and training reads.

Readable with ``json`` and ``numpy.memmap`` alone: ``manifest.json`` (written last: its
presence marks a complete shard set), ``tokenizer.json`` and per bucket length ``L``
``len<L>/shard-<k>.{tokens,domains}.bin``; the README's "Token shards" gives every file
and manifest field. Each file entry holds ``tokens_xxh3`` / ``domains_xxh3``, the xxh3-128
digest of its bytes (hashed while compacting), which a training run checks shards
fetched from object storage against.

Writing has two steps. Each work part first writes one small piece per bucket
(:func:`write_piece`); at a million documents that is thousands of tiny files, and a
reader would open every one. :func:`compact` then concatenates each bucket's pieces, in
the manifest's order, into files of at most ``target_bytes`` of tokens, streaming with
bounded reads, whatever the number of parts. Every file is written under a temporary
name and renamed (or, on S3, uploaded whole), so a crash never leaves half a file behind
a complete name; the manifest comes last, so a crash before it leaves no manifest, an
incomplete set that a rerun replaces.
"""

from __future__ import annotations

import json
import re
from itertools import groupby

import numpy as np
import xxhash

from datacurate.formats import storage
from datacurate.core.coerce import ConfigError

FORMAT = "datacurate-token-shards"
VERSION = 1
MANIFEST = "manifest.json"
DOMAIN_DTYPE = np.dtype("<u2")
COPY_BUFFER = 16 << 20  # bytes per read while compacting: memory stays bounded whatever a bucket's size


def bucket_dir(seq_len: int) -> str:
    return f"len{seq_len}"


def write_file(path: str, data: bytes | np.ndarray) -> None:
    with storage.atomic_file(path) as f:  # appears whole under ``path`` (local or s3://) or not at all
        if isinstance(data, np.ndarray):
            np.ascontiguousarray(data).tofile(f)
        else:
            f.write(data)


def token_array(tokens: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``tokens`` as little-endian ``dtype``; a ValueError when an id does not fit it."""
    dt = np.dtype(dtype).newbyteorder("<")
    if tokens.size and int(tokens.max()) > np.iinfo(dt).max:
        raise ValueError(f"token id {int(tokens.max())} does not fit {dt.name}")
    return np.ascontiguousarray(tokens.astype(dt, copy=False))


def write_piece(root: str, part: str, tokens: np.ndarray, domains: np.ndarray, dtype: np.dtype) -> dict:
    """One part's sequences of one length -> ``lenL/part-<part>.{tokens,domains}.bin``.

    ``tokens`` is (n, L); returns the manifest entry of the piece.
    """
    n, seq_len = tokens.shape
    rel = f"{bucket_dir(seq_len)}/part-{part}"
    toks = token_array(tokens, dtype)
    doms = np.ascontiguousarray(domains.astype(DOMAIN_DTYPE, copy=False))
    write_file(storage.join(root, rel + ".tokens.bin"), toks)
    write_file(storage.join(root, rel + ".domains.bin"), doms)
    return {"tokens": rel + ".tokens.bin", "domains": rel + ".domains.bin", "n": int(n),
            "tokens_xxh3": xxhash.xxh3_128(toks.tobytes()).hexdigest(),
            "domains_xxh3": xxhash.xxh3_128(doms.tobytes()).hexdigest()}


def check_dir(root: str, overwrite: bool) -> None:
    """Refuse a non-empty ``root`` that is not a shard set, or a shard set without ``overwrite``."""
    names = storage.listdir(root) if storage.isdir(root) else []
    if not names:
        return
    ours = [n for n in names if n in (MANIFEST, "tokenizer.json") or
            (re.fullmatch(r"len\d+", n) and storage.isdir(storage.join(root, n)))]
    if not ours or (not storage.exists(storage.join(root, MANIFEST)) and len(ours) < len(names)):
        raise ConfigError(f"decompose: output {root} is a non-empty directory that holds no token shards")
    if not overwrite:
        raise ConfigError(f"decompose: output {root} already holds shards; set output.overwrite: true")


def prepare_dir(root: str, overwrite: bool) -> None:
    """Make ``root`` ready for a new shard set: an earlier one is removed when
    ``overwrite`` (only its manifest, tokenizer copy and ``len<L>/`` folders: other files
    stay); a non-empty directory that is not a shard set is refused."""
    check_dir(root, overwrite)
    if storage.isdir(root):
        for name in storage.listdir(root):
            if name in (MANIFEST, "tokenizer.json") or re.fullmatch(r"len\d+", name):
                storage.delete(storage.join(root, name))
    storage.makedirs(root)


def manifest_order(pieces: list[dict]) -> list[dict]:
    """Entries (``{"seq_len", "tokens", "domains", "n"}``) by bucket, then file name: the
    order in which a bucket's files make its sequence list."""
    return sorted(pieces, key=lambda p: (p["seq_len"], p["tokens"]))


def copy_bytes(src, dst, nbytes: int, digest) -> None:
    """``nbytes`` from ``src`` to ``dst`` in bounded reads, hashed into ``digest`` on the way."""
    while nbytes:
        chunk = src.read(min(nbytes, COPY_BUFFER))
        if not chunk:
            raise ValueError(f"{getattr(src, 'name', 'a piece')}: shorter than its manifest entry says")
        dst.write(chunk)
        digest.update(chunk)
        nbytes -= len(chunk)


def file_digest(f) -> str:
    """The ``xxh3_128`` hex digest of a binary file object, read in bounded chunks: the
    checksum the manifest records for each shard file (``tokens_xxh3``, ``domains_xxh3``)."""
    h = xxhash.xxh3_128()
    for chunk in iter(lambda: f.read(COPY_BUFFER), b""):
        h.update(chunk)
    return h.hexdigest()


def _compact_bucket(root: str, seq_len: int, pieces: list[dict], target_bytes: int, itemsize: int) -> list[dict]:
    """One bucket's non-empty ``pieces`` (in order) -> ``shard-<k>`` files; their entries."""
    widths = {"tokens": seq_len * itemsize, "domains": DOMAIN_DTYPE.itemsize}  # bytes per sequence
    for p in pieces:
        for key, w in widths.items():
            if storage.size(storage.join(root, p[key])) != p["n"] * w:
                raise ValueError(f"{root}: piece {p[key]} does not hold {p['n']} sequences of {seq_len}")
    starts = np.cumsum([0] + [p["n"] for p in pieces])  # first sequence of each piece in the bucket
    per_file = max(1, target_bytes // widths["tokens"])  # whole sequences: at least one a file
    n_files = -(-int(starts[-1]) // per_file)
    digits = max(5, len(str(n_files - 1)))  # one width per bucket, so names sort in order
    entries = []
    for k in range(n_files):
        a, b = k * per_file, min(int(starts[-1]), (k + 1) * per_file)
        rel = f"{bucket_dir(seq_len)}/shard-{k:0{digits}d}"
        entry = {"seq_len": seq_len, "tokens": rel + ".tokens.bin", "domains": rel + ".domains.bin", "n": b - a}
        for key, w in widths.items():
            digest = xxhash.xxh3_128()
            with storage.atomic_file(storage.join(root, entry[key])) as dst:
                for j in range(np.searchsorted(starts, a, "right") - 1, np.searchsorted(starts, b, "left")):
                    lo, hi = max(a, starts[j]), min(b, starts[j + 1])
                    with storage.open_input(storage.join(root, pieces[j][key])) as src:
                        src.seek(int(lo - starts[j]) * w)
                        copy_bytes(src, dst, int(hi - lo) * w, digest)
            entry[f"{key}_xxh3"] = digest.hexdigest()
        entries.append(entry)
    return entries


def compact(root: str, pieces: list[dict], target_bytes: int, itemsize: int) -> list[dict]:
    """Concatenate each bucket's pieces, in :func:`manifest_order`, into ``len<L>/shard-<k>``
    files of at most ``target_bytes`` of tokens (``itemsize`` bytes a token; a file holds
    at least one sequence), then delete the pieces; returns the new files' entries."""
    if target_bytes < 1:
        raise ValueError("target_bytes must be positive")
    out = []
    for seq_len, group in groupby(manifest_order(pieces), key=lambda p: p["seq_len"]):
        group = list(group)
        out += _compact_bucket(root, seq_len, [p for p in group if p["n"]], target_bytes, itemsize)
        for p in group:  # the bucket's shard files are complete: its pieces can go
            for key in ("tokens", "domains"):
                storage.delete(storage.join(root, p[key]))
    return out


def build_manifest(pieces: list[dict], **fields) -> dict:
    """Merge the files' entries (``{"seq_len", "tokens", "domains", "n"}``) into per-bucket lists."""
    buckets: dict[str, dict] = {}
    for p in manifest_order(pieces):
        b = buckets.setdefault(str(p["seq_len"]), {"seq_len": p["seq_len"], "sequences": 0, "tokens": 0, "files": []})
        b["sequences"] += p["n"]
        b["tokens"] += p["n"] * p["seq_len"]
        b["files"].append({k: p[k] for k in ("tokens", "domains", "n", "tokens_xxh3", "domains_xxh3") if k in p})
    return {"format": FORMAT, "version": VERSION, **fields, "buckets": buckets}


def write_manifest(root: str, manifest: dict) -> None:
    write_file(storage.join(root, MANIFEST), json.dumps(manifest, indent=2).encode())


def read_manifest(root: str) -> dict:
    path = storage.join(root, MANIFEST)
    if not storage.isfile(path):
        raise FileNotFoundError(f"no {MANIFEST} in {root} (not a complete token shard set)")
    manifest = json.loads(storage.read_text(path))
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} manifest")
    return manifest


def copy_tokenizer(root: str, tokenizer_path: str) -> None:
    write_file(storage.join(root, "tokenizer.json"), storage.read_bytes(tokenizer_path))
