"""Compare two runs' outputs: kept and rejected rows (per part file), stats.json apart from
timings and paths, and the bytes of every shard file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow.parquet as pq

TIMING = ("seconds", "wall_seconds", "docs_per_second", "write_seconds", "phase_seconds")
PATHS = ("filter_saved_to", "shards", "output")


def _strip(obj, root: str):
    if isinstance(obj, dict):
        return {k: _strip(v, root) for k, v in obj.items() if k not in TIMING and k not in PATHS}
    if isinstance(obj, list):
        return [_strip(v, root) for v in obj]
    if isinstance(obj, str):
        return obj.replace(root, "OUT")
    return obj


def snapshot(out: str | Path) -> dict:
    out = Path(out)
    snap: dict = {"files": sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
                                  and p.name != "report.html")}
    for kind in ("kept", "rejected"):
        for p in sorted((out / kind).glob("*.parquet")):
            snap[f"{kind}/{p.name}"] = pq.read_table(p).to_pylist()
    stats = json.loads((out / "stats.json").read_text())
    snap["stats"] = _strip(stats, str(out.resolve()))
    shards = out / "shards"
    if shards.is_dir():
        for p in sorted(shards.rglob("*")):
            if p.is_file() and p.name != "manifest.json":
                snap[f"shards/{p.relative_to(shards)}"] = hashlib.sha256(p.read_bytes()).hexdigest()
        man = json.loads((shards / "manifest.json").read_text())
        man.pop("source_run", None)
        snap["manifest"] = man
    return snap


def assert_same(a: str | Path, b: str | Path) -> None:
    sa, sb = snapshot(a), snapshot(b)
    assert sa["files"] == sb["files"], (set(sa["files"]) ^ set(sb["files"]))
    for key in sa:
        if isinstance(sa[key], dict) and isinstance(sb[key], dict) and sa[key] != sb[key]:
            diff = {k: (sa[key].get(k), sb[key].get(k)) for k in set(sa[key]) | set(sb[key])
                    if sa[key].get(k) != sb[key].get(k)}
            raise AssertionError(f"{key} differs between {a} and {b}: {str(diff)[:1500]}")
        assert sa[key] == sb[key], f"{key} differs between {a} and {b}"


def tree_digest(out: str | Path) -> dict:
    """sha256 of every file under ``out`` (to show a directory was left untouched)."""
    out = Path(out)
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and not os.path.islink(p)}
