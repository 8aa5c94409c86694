"""The ``decompose`` global stage on Ray: two passes over the work parts, one task per part.

Pass 1 (:func:`datacurate.stages.decompose.count_part`) reads only ``_ord``, ``domain``
and ``n_tokens`` of each part, writes the part's decisions (too-short documents) and
returns token counts per (domain, bucket). The driver sums them and sets each domain's
sampling rate (:func:`datacurate.stages.mixture.plan`). Pass 2
(:func:`~datacurate.stages.decompose.write_part`) reads the token ids and writes the
part's shard pieces; the driver then streams each bucket's pieces into files of
``target_file_bytes`` (:func:`datacurate.shards.compact`) and writes ``manifest.json`` last.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datacurate import shards
from datacurate.config import ConfigError, PipelineConfig, StageSpec, to_dict
from datacurate.engine.process import decisions_dir, work_dir
from datacurate.engine.ray_backend import map_items
from datacurate.engine.stats import merge
from datacurate.io import write_atomic
from datacurate.schema import DOMAIN, ID, ORD
from datacurate.stages import decompose as dc
from datacurate.stages import mixture
from datacurate.stages.tokenize import N_TOKENS, TOKENS


def _per_file(batch: pa.Table, fn: Callable, kwargs: dict) -> pa.Table:
    return pa.table({"out": [json.dumps(fn(path, **kwargs)) for path in batch.column("item").to_pylist()]})


def _map_files(files: list[str], fn: Callable, **kwargs) -> list[dict]:
    """``fn(path, **kwargs)`` for each file, one Ray task per file; the JSON results."""
    if not files:
        return []
    ds = map_items(files, _per_file, {"fn": fn, "kwargs": kwargs})
    return [json.loads(r["out"]) for r in ds.iter_rows()]


def _count_file(path: str, cfg: dc.DecomposeConfig, dec_dir: str, compression: str) -> dict:
    counts, decisions = dc.count_part(pq.read_table(path, columns=[ORD, DOMAIN, N_TOKENS]), cfg)
    if decisions.num_rows:
        write_atomic(decisions, os.path.join(dec_dir, os.path.basename(path)), compression)
    return counts


def _write_file(path: str, cfg: dc.DecomposeConfig, out_dir: str, rates: dict, domain_ids: dict, dtype: str) -> dict:
    part = os.path.basename(path).removeprefix("part-").removesuffix(".parquet")
    table = pq.read_table(path, columns=[ID, DOMAIN, N_TOKENS, TOKENS])
    pieces, written = dc.write_part(table, cfg, part, out_dir, rates, domain_ids, np.dtype(dtype))
    return {"pieces": pieces, "written": written}


def tokenizer_for(spec: StageSpec, cfg: PipelineConfig):
    """The tokenizer of ``decompose``: its own ``tokenizer`` key, else the tokenize stage's."""
    from datacurate.tokenizer import load_tokenizer

    tok_cfg = next((s.config for s in reversed(cfg.stages[:cfg.stages.index(spec)]) if s.name == "tokenize"), None)
    if tok_cfg is None:
        return load_tokenizer(spec.config.tokenizer)[1]
    info = load_tokenizer(tok_cfg.tokenizer, tok_cfg.eos_token, tok_cfg.bos_token)[1]
    if spec.config.tokenizer and load_tokenizer(spec.config.tokenizer)[1].sha256 != info.sha256:
        raise ConfigError(f"decompose.tokenizer ({spec.config.tokenizer}) is not the tokenizer the tokenize stage "
                          "uses; leave it null")
    return info


def _out_dir(spec: StageSpec, cfg: PipelineConfig) -> str:
    return os.path.abspath(spec.config.output or os.path.join(cfg.output.path, "shards"))


def check_decompose(spec: StageSpec, cfg: PipelineConfig) -> None:
    """Before any work: the tokenizer agrees with the tokenize stage's, the shard directory is usable."""
    tokenizer_for(spec, cfg)
    shards.check_dir(_out_dir(spec, cfg), cfg.output.overwrite)


def run_decompose(spec: StageSpec, cfg: PipelineConfig, seg_index: int) -> dict:
    stage = dc.Decompose(spec.config)
    c: dc.DecomposeConfig = stage.config
    info = tokenizer_for(spec, cfg)
    out_dir = _out_dir(spec, cfg)
    shards.prepare_dir(out_dir, cfg.output.overwrite)
    files = sorted(glob.glob(os.path.join(work_dir(cfg.output.path, seg_index - 1), "*.parquet")))
    counts: dict = {}
    for part_counts in _map_files(files, _count_file, cfg=c, dec_dir=decisions_dir(cfg.output.path, seg_index),
                                  compression=cfg.output.compression):
        merge(counts, part_counts)
    if len(counts) > np.iinfo(shards.DOMAIN_DTYPE).max + 1:
        raise ValueError(f"decompose: {len(counts)} domains do not fit uint16 domain ids")
    mix = mixture.plan({d: n["tokens_in_buckets"] for d, n in counts.items()}, stage.weights, c.total_tokens)
    rates = {d: m["rate"] for d, m in mix["domains"].items()}
    domain_ids = {d: i for i, d in enumerate(sorted(counts))}
    pieces, written = [], {}
    for res in _map_files(files, _write_file, cfg=c, out_dir=out_dir, rates=rates, domain_ids=domain_ids,
                          dtype=info.dtype.name):
        pieces += res["pieces"]
        merge(written, res["written"])
    run = {"output": os.path.abspath(cfg.output.path), "config": to_dict(cfg)}
    return dc.finish(out_dir, c, info, counts, mix, stage.source, pieces, written, run)
