"""DSIR on Ray: fit -> weigh + partition top-k -> global k-th key -> decide each part.

1. **fit**: one task per intermediate part (and per target read task) returns its
   hashed n-gram counts as one row of bytes; the driver adds (num_buckets,) vectors.
2. **weigh**: one task per part computes log weights and sampling keys, writes them
   beside the part, and returns only its own top-k candidates (key, position).
3. **k-th key**: a Ray Data sort of the candidates (range-partitioned, distributed)
   cut at k; the driver streams it and keeps one row, the k-th.
4. **decide**: one task per part selects its units against that one threshold and
   writes its decisions; it returns the n-gram counts of its selected and randomly
   selected units for the KL report.

No process holds more than one part's weights plus the (num_buckets,) vectors; the
plain functions doing the work are those of :mod:`datacurate.stages.dsir`.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datacurate.config import PipelineConfig, StageSpec
from datacurate.engine.process import decisions_dir, work_dir
from datacurate.engine.ray_backend import map_items
from datacurate.io import plan_reads, read_texts, write_atomic
from datacurate.schema import DOMAIN, ORD, TEXT
from datacurate.stages import dsir as ds


def _part(path: str, c: ds.DsirConfig) -> tuple[pa.Table, ds.Units]:
    schema = pq.read_schema(path)
    table = pq.read_table(path, columns=[n for n in (ORD, TEXT, DOMAIN) if n in schema.names])
    return table, ds.units_of(table, c.chunk_words)


def _vec(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype=np.int64)


def _fit_part(batch: pa.Table, c: ds.DsirConfig) -> pa.Table:
    table, units = _part(batch["item"][0].as_py(), c)
    feats = ds.featurize(c, units, ds.raw_fit_mask(c, units))
    eligible = feats.n_tokens >= max(c.min_length, 1)
    tgt = np.zeros(c.num_buckets, np.int64)
    if c.target.domains:
        full = ds.featurize(c, units) if c.raw_fit_fraction < 1 else feats
        in_tgt = np.asarray(pc.is_in(table[DOMAIN], pa.array(c.target.domains)).fill_null(False))
        tgt = full.counts(c.num_buckets, in_tgt[units.parent])
    return pa.table({"raw": [feats.counts(c.num_buckets).tobytes()], "tgt": [tgt.tobytes()],
                     "units": [len(units.parent)], "eligible": [int(eligible.sum())],
                     "pool": [json.dumps(ds.domain_counts(table, units, eligible))]})


def _fit_target(batch: pa.Table, c: ds.DsirConfig) -> pa.Table:
    counters: dict = {}
    total, docs = np.zeros(c.num_buckets, np.int64), 0
    for texts in read_texts(ds.target_input(c.target), [json.loads(batch["item"][0].as_py())], counters):
        total += ds.wp.features(texts, c.num_buckets, c.ngrams).counts(c.num_buckets)
        docs += len(texts)
    return pa.table({"tgt": [total.tobytes()], "docs": [docs], "rejected": [counters.get("rejected", 0)]})


def _weights_path(wdir: str, part: str) -> str:
    return os.path.join(wdir, os.path.basename(part))


def _weigh_part(batch: pa.Table, c: ds.DsirConfig, lr: np.ndarray, k: int, wdir: str) -> pa.Table:
    path = batch["item"][0].as_py()
    table, units = _part(path, c)
    feats = ds.featurize(c, units)
    logw = feats.per_doc(lr)
    keys = ds.sample_keys(c, logw, feats.n_tokens >= max(c.min_length, 1), units)
    write_atomic(pa.table({"logw": logw, "key": keys}), _weights_path(wdir, path))
    top = ds.top_k(keys, units.ords, units.chunk, k)
    return pa.table({"key": pa.array(keys[top], pa.float64()), "ord": pa.array(units.ords[top], pa.int64()),
                     "chunk": pa.array(units.chunk[top], pa.int32())})


def _decide_part(batch: pa.Table, c: ds.DsirConfig, thr: tuple, rate: float, wdir: str, out_dir: str,
                 compression: str) -> pa.Table:
    path = batch["item"][0].as_py()
    table, units = _part(path, c)
    w = pq.read_table(_weights_path(wdir, path))
    keys, logw = w["key"].to_numpy(), w["logw"].to_numpy()
    eligible = np.isfinite(keys)
    chosen = ds.selected(keys, units.ords, units.chunk, thr)
    rand = eligible & (ds.uniform(c.seed, units.ords, units.chunk, salt=1) < rate)
    feats = ds.featurize(c, units, chosen | rand)
    write_atomic(ds.decisions(c, table, units, logw, eligible, chosen), os.path.join(out_dir, os.path.basename(path)),
                 compression)
    return pa.table({"sel": [feats.counts(c.num_buckets, chosen).tobytes()],
                     "rand": [feats.counts(c.num_buckets, rand).tobytes()], "n": [int(chosen.sum())],
                     "chosen": [json.dumps(ds.domain_counts(table, units, chosen))]})


def _kth(cands, k: int) -> tuple:
    """The k-th candidate in the global order, by a distributed sort streamed past the driver."""
    if k == 0:
        for _ in cands.iter_batches(batch_format="pyarrow"):  # still run the weigh phase
            pass
        return (np.inf, 0, 0)  # no unit comes before it: none is selected
    last, seen = None, 0
    ordered = cands.sort(["key", "ord", "chunk"], descending=[True, False, False]).limit(k)
    for b in ordered.iter_batches(batch_size=65_536, batch_format="pyarrow"):
        if b.num_rows:
            seen += b.num_rows
            last = (b["key"][-1].as_py(), b["ord"][-1].as_py(), b["chunk"][-1].as_py())
    assert seen == k, f"dsir: {seen} candidates for k = {k}"
    return last


def _sum(rows, col: str, size: int) -> np.ndarray:
    total = np.zeros(size, np.int64)
    for r in rows:
        total += _vec(r[col])
    return total


def _merge_counts(rows, col: str) -> dict:
    out: dict = {}
    for r in rows:
        for d, n in json.loads(r[col]).items():
            out[d] = out.get(d, 0) + n
    return out


def run_dsir(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    c: ds.DsirConfig = spec.config
    files = sorted(glob.glob(os.path.join(work_dir(cfg.output.path, seg_index - 1), "*.parquet")))
    if not files:
        return {"selected": 0}
    fit = list(map_items(files, _fit_part, {"c": c}).iter_rows())
    raw = _sum(fit, "raw", c.num_buckets)
    eligible = sum(r["eligible"] for r in fit)
    metrics = {"units": sum(r["units"] for r in fit), "eligible": eligible}
    if c.target.domains:
        tgt = _sum(fit, "tgt", c.num_buckets)
    else:
        tasks = [json.dumps(t.to_dict()) for t in plan_reads(ds.target_input(c.target))]
        rows = list(map_items(tasks, _fit_target, {"c": c}).iter_rows())
        tgt = _sum(rows, "tgt", c.num_buckets)
        metrics.update(target_docs=sum(r["docs"] for r in rows), target_rejected=sum(r["rejected"] for r in rows))
    lr = ds.log_ratio(tgt, raw, c.laplace)
    k = ds.how_many(c.num_to_sample, eligible)
    wdir = os.path.join(cfg.output.path, "_work", f"dsir{seg_index}")
    cands = map_items(files, _weigh_part, {"c": c, "lr": lr, "k": k, "wdir": wdir})
    thr = _kth(cands, k)
    rate = k / max(eligible, 1)
    dec = list(map_items(files, _decide_part, {"c": c, "thr": thr, "rate": rate, "wdir": wdir,
                                               "out_dir": decisions_dir(cfg.output.path, seg_index),
                                               "compression": cfg.output.compression}).iter_rows())
    metrics.update(num_to_sample=k, selected=sum(r["n"] for r in dec),
                   threshold_key=thr[0] if k else None)
    metrics.update(ds.report(c, tgt, raw, _sum(dec, "sel", c.num_buckets), _sum(dec, "rand", c.num_buckets),
                             _merge_counts(fit, "pool"), _merge_counts(dec, "chosen")))
    return metrics
