"""All-to-all phases of the global stages, on Ray (shuffles, groupbys, actors).

Each global stage reads the kept rows of the segment before it (``OUT/_work/s<k-1>``)
and writes *decisions* (``OUT/_work/d<k>/<part file>``): one row per affected document
with ``_ord``, ``reject_reason`` and the stage's columns. The next segment applies them
part by part. The phases themselves are plain functions of the stage modules.
"""

from __future__ import annotations

import glob
import os
import time

import pyarrow as pa

from datacurate.config import PipelineConfig, StageSpec
from datacurate.engine.process import decisions_dir, work_dir
from datacurate.engine.ray_backend import quiet_data_context
from datacurate.io import write_atomic
from datacurate.schema import ORD, TEXT
from datacurate.stages import dedup_exact as ex

WPART = "_wpart"


class _ShardActor:
    """Holds one slice of the exact-dedup Bloom filter (plus a loaded earlier one)."""

    def __init__(self, bits: int, k: int, load: str | None, shard: int, n: int):
        self.filter = ex.ShardFilter(bits, k, ex.load_shard(load, shard, n))

    def check_add(self, hi, lo, chunk):
        return self.filter.check_add(hi, lo, chunk)

    def save(self, path: str) -> float:
        merged = self.filter.merged()
        merged.save(path)
        return merged.fill_ratio()


def _with_wpart(batch: pa.Table) -> pa.Table:
    names = [os.path.basename(p) for p in batch.column("path").to_pylist()]
    return batch.drop_columns(["path"]).append_column(WPART, pa.array(names, pa.string()))


def _exact_keys(batch: pa.Table, cfg: ex.ExactDedupConfig) -> pa.Table:
    batch = _with_wpart(batch)
    k = ex.keys(batch, cfg)
    import pyarrow.compute as pc

    pos = pc.index_in(k[ORD], value_set=batch[ORD])
    return k.append_column(WPART, pc.take(batch[WPART], pos))


def _exact_decide(group: pa.Table, actors, chunk: int) -> pa.Table:
    import ray

    shard = group["shard"][0].as_py()
    order = ex.survivor_order(group)
    group = group.take(order)
    status = ray.get(actors[shard].check_add.remote(group["hi"].to_numpy(), group["lo"].to_numpy(), chunk))
    return pa.table({ORD: group[ORD], "para": group["para"], "nchars": group["nchars"],
                     "status": pa.array(status, pa.int8()), WPART: group[WPART]})


def _exact_write(group: pa.Table, cfg: ex.ExactDedupConfig, out_dir: str, compression: str) -> pa.Table:
    name = group[WPART][0].as_py()
    dec = ex.decisions(group.drop_columns([WPART]), cfg)
    if dec.num_rows:
        write_atomic(dec, os.path.join(out_dir, name), compression)
    return pa.table({"n": [dec.num_rows]})


def run_exact_dedup(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    import ray
    import ray.data

    stage = ex.ExactDedup(spec.config)
    c: ex.ExactDedupConfig = stage.config
    files = sorted(glob.glob(os.path.join(work_dir(cfg.output.path, seg_index - 1), "*.parquet")))
    bits, k = stage.filter_size()
    metrics = {"filter_bits": bits * c.num_shards, "filter_mb": round(bits * c.num_shards / 8 / 2**20, 2),
               "hash_functions": k, "num_shards": c.num_shards, "expected_items": c.expected_items,
               "target_false_positive_rate": c.false_positive_rate}
    if not files:
        return metrics
    quiet_data_context()
    actor_cls = ray.remote(num_cpus=0)(_ShardActor)
    actors = [actor_cls.remote(bits, k, c.load_filter, s, c.num_shards) for s in range(c.num_shards)]
    cols = [ORD, TEXT] + ([c.priority_column] if c.priority_column else [])
    ds = ray.data.read_parquet(files, columns=cols, include_paths=True)
    keys = ds.map_batches(_exact_keys, batch_format="pyarrow", fn_kwargs={"cfg": c})
    status = keys.groupby("shard").map_groups(_exact_decide, batch_format="pyarrow",
                                              fn_kwargs={"actors": actors, "chunk": c.chunk})
    out_dir = decisions_dir(cfg.output.path, seg_index)
    written = status.groupby(WPART).map_groups(_exact_write, batch_format="pyarrow",
                                               fn_kwargs={"cfg": c, "out_dir": out_dir,
                                                          "compression": cfg.output.compression})
    metrics["documents_with_repeats"] = int(sum(r["n"] for r in written.iter_rows()))
    save = c.save_filter or os.path.join(cfg.output.path, "exact_dedup_filter")
    fills = ray.get([a.save.remote(os.path.join(save, f"shard-{s:04d}")) for s, a in enumerate(actors)])
    ex.save_meta(save, c, bits, k)
    fill = sum(fills) / len(fills)
    metrics.update({"filter_saved_to": save, "fill_ratio": round(fill, 6),
                    "estimated_false_positive_rate": fill ** k})
    for a in actors:
        ray.kill(a)
    return metrics


RUNNERS = {"exact_dedup": run_exact_dedup}


def run_global(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    t0 = time.perf_counter()
    metrics = RUNNERS[spec.name](spec, cfg, seg_index)
    return {"metrics": metrics, "phase_seconds": time.perf_counter() - t0}
