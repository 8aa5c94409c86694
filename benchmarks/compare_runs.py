"""Compare the outputs of two pipeline runs row by row: same documents kept, same reasons, same columns.

    .venv/bin/python benchmarks/compare_runs.py OUT_A OUT_B

Reads ``kept/`` and ``rejected/`` of both output directories, orders the rows by ``id``,
and compares every column the two have in common (text, annotations, reject reasons),
then the shard files byte for byte (all but ``manifest.json``, which holds the
run's paths), then ``stats.json`` apart from timings. Prints one line per difference;
exit status 1 when there is one. Used to show that a speed-up left a run's outputs unchanged (issue 18).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def rows(out: Path, kind: str) -> pa.Table:
    parts = sorted((out / kind).glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in parts], promote_options="default") if parts else pa.table({})
    return table.sort_by("id") if table.num_rows else table


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every shard file; manifest.json names the run's own paths, so it is left out."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "manifest.json"}


TIMINGS = {"seconds", "docs_per_second", "wall_seconds", "write_seconds", "phase_seconds", "config_sha256"}


def untimed(obj):
    """``stats.json`` without what differs from run to run: timings (and the config hash,
    which covers the output path)."""
    if isinstance(obj, dict):
        return {k: untimed(v) for k, v in obj.items() if k not in TIMINGS and not k.endswith("_seconds")}
    if isinstance(obj, list):
        return [untimed(v) for v in obj]
    return obj


def stats_differences(a: Path, b: Path) -> list[str]:
    import json

    sa, sb = (untimed(json.loads((d / "stats.json").read_text())) for d in (a, b))
    out: list[str] = []

    def walk(x, y, path):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                walk(x.get(k, "<absent>"), y.get(k, "<absent>"), f"{path}.{k}")
        elif x != y and not (isinstance(x, str) and isinstance(y, str) and str(a) in x and str(b) in y):
            out.append(f"stats.json{path}: {x!r} vs {y!r}")

    walk(sa, sb, "")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    a, b = Path(args.a), Path(args.b)
    problems = []
    for kind in ("kept", "rejected"):
        ta, tb = rows(a, kind), rows(b, kind)
        if ta.num_rows != tb.num_rows:
            problems.append(f"{kind}: {ta.num_rows} rows vs {tb.num_rows}")
            continue
        common = [c for c in ta.column_names if c in tb.column_names]
        for c in common:
            x, y = ta.column(c).combine_chunks(), tb.column(c).combine_chunks()
            if not x.equals(y.cast(x.type)):
                diff = pc.sum(pc.invert(pc.fill_null(pc.equal(x, y.cast(x.type)), False))).as_py()
                problems.append(f"{kind}: column {c} differs in {diff} of {ta.num_rows} rows")
        only = sorted(set(ta.column_names) ^ set(tb.column_names))
        print(f"{kind}: {ta.num_rows} rows, {len(common)} columns compared" + (f" (in one run only: {only})" if only else ""))
    da, db = digests(a / "shards"), digests(b / "shards")
    if da != db:
        problems.append(f"shards: {sum(da.get(k) != db.get(k) for k in set(da) | set(db))} files differ")
    print(f"shards: {len(da)} files compared")
    problems += stats_differences(a, b)
    for p in problems:
        print("DIFFERENT", p)
    print("identical" if not problems else f"{len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
