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
from datacurate.engine.dsir_ops import run_dsir
from datacurate.engine.ray_backend import quiet_data_context
from datacurate.engine.token_ops import run_decompose
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


def _read_work(files: list):
    """The intermediate parts as a Ray Data dataset. The file system is given explicitly:
    left to guess, Ray probes fsspec's HTTP file system, which needs aiohttp."""
    import pyarrow.fs
    import ray.data

    return ray.data.read_parquet(files, include_paths=True, filesystem=pyarrow.fs.LocalFileSystem())


def _parts_for(files: list) -> int:
    """Shuffle partitions for a groupby over part files: enough to spread, few enough to be cheap."""
    return max(1, min(len(files), 32))


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
    ds = _read_work(files).select_columns(cols + ["path"])
    keys = ds.map_batches(_exact_keys, batch_format="pyarrow", fn_kwargs={"cfg": c})
    # one task per shard, each feeding its shard's actor in survivor order
    status = keys.groupby("shard", num_partitions=c.num_shards).map_groups(
        _exact_decide, batch_format="pyarrow", fn_kwargs={"actors": actors, "chunk": c.chunk},
        concurrency=c.num_shards)
    out_dir = decisions_dir(cfg.output.path, seg_index)
    written = status.groupby(WPART, num_partitions=_parts_for(files)).map_groups(_exact_write, batch_format="pyarrow",
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


RUNNERS = {"exact_dedup": run_exact_dedup, "dsir": run_dsir, "decompose": run_decompose}


def run_global(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    t0 = time.perf_counter()
    metrics = RUNNERS[spec.name](spec, cfg, seg_index)
    return {"metrics": metrics, "phase_seconds": time.perf_counter() - t0}


# ----------------------------------------------------------------------------- near dedup
# signatures -> band rows -> buckets (groupby) -> candidate pairs -> verify (join with
# signatures) -> connected components (large-star / small-star rounds, groupby) ->
# survivors (groupby cluster) -> decisions (groupby part file)

def _near_signatures(batch: pa.Table, cfg) -> pa.Table:
    import numpy as np
    import pyarrow.compute as pc

    from datacurate.stages import dedup_near as dn

    batch = _with_wpart(batch)
    texts = batch[TEXT].combine_chunks()
    sigs = dn.signatures(texts, cfg.num_perm, cfg.ngram, cfg.seed)
    if cfg.priority == "longest":
        prio = np.asarray(pc.utf8_length(texts), dtype=np.float64)
    elif cfg.priority == "column":
        prio = np.asarray(pc.fill_null(batch[cfg.priority_column].cast(pa.float64()), -np.inf))
    else:
        prio = np.zeros(batch.num_rows)
    empty = (sigs == 0xFFFFFFFF).all(axis=1)  # no words: never a near duplicate
    return pa.table({
        ORD: batch[ORD], "id": batch["id"], "prio": prio, WPART: batch[WPART], "empty": empty,
        "sig": pa.FixedSizeListArray.from_arrays(pa.array(sigs.ravel(), pa.uint32()), cfg.num_perm),
    })


def _sig_matrix(col):
    import numpy as np

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = arr.type.list_size
    return np.asarray(arr.flatten(), dtype=np.uint32).reshape(-1, width)


def _near_bands(batch: pa.Table, bands: int, rows: int, parts: int) -> pa.Table:
    import numpy as np

    from datacurate.stages import dedup_near as dn

    keep = ~batch["empty"].to_numpy(zero_copy_only=False)
    sigs = _sig_matrix(batch["sig"])[keep]
    ords = batch[ORD].to_numpy()[keep]
    keys = dn.band_keys(sigs, bands, rows)  # (N, bands)
    flat = keys.ravel()
    return pa.table({"key": flat, "node": np.repeat(ords, bands),
                     "p": (flat % np.uint64(parts)).astype(np.int32)})


def _near_edges(group: pa.Table) -> pa.Table:
    from datacurate.stages import dedup_near as dn

    u, v = dn.bucket_edges(group["key"].to_numpy(), group["node"].to_numpy())
    return pa.table({"u": pa.array(u, pa.int64()), "v": pa.array(v, pa.int64())})


def _near_verify(batch: pa.Table, threshold: float) -> pa.Table:
    from datacurate.stages import dedup_near as dn

    est = dn.estimated_jaccard(_sig_matrix(batch["sig_u"]), _sig_matrix(batch["sig_v"]))
    keep = est >= threshold
    return pa.table({"u": batch["u"].filter(pa.array(keep)), "v": batch["v"].filter(pa.array(keep))})


def _star_map(batch: pa.Table, kind: str, parts: int) -> pa.Table:
    import numpy as np

    from datacurate.stages import dedup_near as dn

    a, b = dn.star_map(batch["u"].to_numpy(), batch["v"].to_numpy(), kind)
    return pa.table({"a": a, "b": b, "p": (a % parts).astype(np.int32)})


def _star(group: pa.Table, kind: str) -> pa.Table:
    import numpy as np

    from datacurate.stages import dedup_near as dn

    # (a = key node, b = neighbour): every pair of each key node of this partition
    a, b = group["a"].to_numpy(), group["b"].to_numpy()
    u, v = dn.star_step(a, b, kind)
    u, v = np.asarray(u, np.int64), np.asarray(v, np.int64)
    return pa.table({"u": u, "v": v})


def _checksum(batch: pa.Table) -> pa.Table:
    import numpy as np

    from datacurate.stages.textstats import mix

    u = np.minimum(batch["u"].to_numpy(), batch["v"].to_numpy()).astype(np.uint64)
    v = np.maximum(batch["u"].to_numpy(), batch["v"].to_numpy()).astype(np.uint64)
    h = mix(u, v)
    with np.errstate(over="ignore"):
        s = int(np.sum(h, dtype=np.uint64))
    return pa.table({"s": pa.array([s], pa.uint64()), "n": [len(h)]})


def _fold(ds) -> tuple[int, int]:
    total, n = 0, 0
    for r in ds.map_batches(_checksum, batch_format="pyarrow", batch_size=None).iter_rows():
        total = (total + r["s"]) % (1 << 64)
        n += r["n"]
    return total, n


def _local_components(batch: pa.Table) -> pa.Table:
    from datacurate.stages import dedup_near as dn

    nodes, roots = dn.components(batch["u"].to_numpy(), batch["v"].to_numpy())
    star = nodes != roots
    return pa.table({"u": pa.array(roots[star], pa.int64()), "v": pa.array(nodes[star], pa.int64())})


def _members(batch: pa.Table) -> pa.Table:
    import numpy as np

    u, v = batch["u"].to_numpy(), batch["v"].to_numpy()
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return pa.table({"node": np.concatenate([hi, lo]), "root": np.concatenate([lo, lo])})


def _root_partition(batch: pa.Table, parts: int) -> pa.Table:
    import numpy as np

    return batch.append_column("p", pa.array((batch["root"].to_numpy() % parts).astype(np.int32)))


def _survivors(group: pa.Table) -> pa.Table:
    import numpy as np

    # rows: node, root, prio, id, wpart of the cluster members in this partition (roots repeat)
    _, first = np.unique(group["node"].to_numpy(), return_index=True)
    group = group.take(pa.array(np.sort(first)))
    root = group["root"].to_numpy()
    node = group["node"].to_numpy()
    prio = group["prio"].to_numpy()
    order = np.lexsort((node, -prio, root))  # per cluster: highest priority, then first in input
    root, node = root[order], node[order]
    ids = group["id"].take(pa.array(order))
    wpart = group[WPART].take(pa.array(order))
    head = np.concatenate([[True], root[1:] != root[:-1]])
    first = np.flatnonzero(head)
    seg = np.cumsum(head) - 1
    surv_idx = first[seg]
    surv_id = ids.take(pa.array(surv_idx))
    reason = pa.compute.binary_join_element_wise(pa.scalar("near_dedup/dup_of:"), surv_id.cast(pa.string()), "")
    reason = pa.compute.if_else(pa.array(head), pa.scalar(None, pa.string()), reason)
    return pa.table({ORD: pa.array(node, pa.int64()), "reject_reason": reason,
                     "cluster_id": surv_id.cast(pa.string()), "cluster_size": pa.array(np.bincount(seg)[seg], pa.int32()),
                     WPART: wpart})


def _near_write(group: pa.Table, out_dir: str, compression: str) -> pa.Table:
    name = group[WPART][0].as_py()
    write_atomic(group.drop_columns([WPART]), os.path.join(out_dir, name), compression)
    return pa.table({"n": [group.num_rows], "rejected": [group["reject_reason"].null_count]})


def run_near_dedup(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    import pyarrow.compute  # noqa: F401 - used by _survivors through pa.compute

    from datacurate.stages import dedup_near as dn

    c = spec.config
    bands, rows = c.banding()
    parts = c.num_partitions
    verify_thr = c.verify_cutoff()
    metrics = {"bands": bands, "rows": rows, "num_perm": c.num_perm, "ngram": c.ngram, "threshold": c.threshold,
               "verify": c.verify, "verify_cutoff": round(verify_thr, 4),
               "candidate_prob_at_threshold": round(float(dn.s_curve(c.threshold, bands, rows)), 4)}
    files = sorted(glob.glob(os.path.join(work_dir(cfg.output.path, seg_index - 1), "*.parquet")))
    if not files:
        return metrics
    quiet_data_context()
    cols = [ORD, TEXT, "id"] + ([c.priority_column] if c.priority == "column" else [])
    sigs = (_read_work(files).select_columns(cols + ["path"])
            .map_batches(_near_signatures, batch_format="pyarrow", fn_kwargs={"cfg": c})
            .materialize())
    band_rows = sigs.map_batches(_near_bands, batch_format="pyarrow",
                                 fn_kwargs={"bands": bands, "rows": rows, "parts": parts})
    edges = band_rows.groupby("p", num_partitions=parts).map_groups(_near_edges, batch_format="pyarrow").materialize()
    metrics["candidate_pairs"] = edges.count()
    if metrics["candidate_pairs"] and c.verify == "signature":
        sig_only = sigs.select_columns([ORD, "sig"])
        joined = (edges.join(sig_only.rename_columns({ORD: "u", "sig": "sig_u"}), "inner", parts, on=("u",))
                  .join(sig_only.rename_columns({ORD: "v", "sig": "sig_v"}), "inner", parts, on=("v",)))
        edges = joined.map_batches(_near_verify, batch_format="pyarrow", fn_kwargs={"threshold": verify_thr}).materialize()
    metrics["verified_pairs"] = edges.count()
    rounds = 0
    if metrics["verified_pairs"] and metrics["verified_pairs"] <= c.max_local_edges:
        # small graph: one task (not the driver) runs union-find and emits (root, member) stars
        edges = edges.repartition(1).map_batches(_local_components, batch_format="pyarrow",
                                                 batch_size=None).materialize()
    elif metrics["verified_pairs"]:
        prev = _fold(edges)
        while True:
            rounds += 1
            for kind in ("large", "small"):
                edges = (edges.map_batches(_star_map, batch_format="pyarrow", fn_kwargs={"kind": kind, "parts": parts})
                         .groupby("p", num_partitions=parts)
                         .map_groups(_star, batch_format="pyarrow", fn_kwargs={"kind": kind})
                         .materialize())
            cur = _fold(edges)
            if cur == prev or rounds >= 64:
                break
            prev = cur
    if metrics["verified_pairs"]:
        # stars: each edge joins a member to its component's minimum (the root)
        members = edges.map_batches(_members, batch_format="pyarrow")
        attrs = sigs.select_columns([ORD, "prio", "id", WPART]).rename_columns({ORD: "node"})
        clustered = members.join(attrs, "inner", parts, on=("node",)).map_batches(
            _root_partition, batch_format="pyarrow", fn_kwargs={"parts": parts})
        decisions = clustered.groupby("p", num_partitions=parts).map_groups(_survivors, batch_format="pyarrow")
        out_dir = decisions_dir(cfg.output.path, seg_index)
        written = decisions.groupby(WPART, num_partitions=_parts_for(files)).map_groups(
            _near_write, batch_format="pyarrow", fn_kwargs={"out_dir": out_dir, "compression": cfg.output.compression})
        res = list(written.iter_rows())
        metrics["clustered_documents"] = int(sum(r["n"] for r in res))
        metrics["duplicates"] = int(sum(r["n"] - r["rejected"] for r in res))
    metrics["component_rounds"] = rounds  # 0: components found in one task
    return metrics


RUNNERS["near_dedup"] = run_near_dedup
