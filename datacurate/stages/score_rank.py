"""Stage ``score_rank``: classifier scores made corpus-relative (top fraction, buckets, ensembles).

The scores of earlier classifier stages as a percentile rank, Nemotron-CC's buckets, a top
fraction, and ensembles.

* ``scores: [quality_score]`` after the fastText ``quality`` stage (run with
  ``min_score: 0``) keeps DCLM's top 10 % with ``top_fraction: 0.1`` (Li et al. 2024: the
  top 10 % by their fastText classifier beat every rule set they compared);
* ``scores: [quality_score, fineweb_edu_score, ...]`` is an ensemble, fastText and encoder
  mixed: each score becomes its token-weighted percentile rank over the corpus, and the
  document's rank is their ``max`` (Nemotron-CC, Su et al. 2024: the max of three
  classifiers' integer buckets) or ``mean``;
* ``buckets: 20`` writes ``<name>_bucket`` (Nemotron-CC's 20 by token-weighted percentile),
  and ``domain: replace`` / ``append`` makes it the document's ``domain``, which
  ``decompose``'s mixture and DoReMi weigh.

Writes ``<name>_rank`` (the combined percentile rank, 0-1) and ``<name>_bucket``; rows a
classifier did not score (another language) take the other scores' ranks, or none, and
are kept. The passes: :mod:`datacurate.phases.ranking` (distributed; the top fraction
by the radix select DSIR's cut-off uses).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from datacurate.core.coerce import opt
from datacurate.core.schema import DOMAIN, ORD, REJECT_REASON
from datacurate.formats import storage
from datacurate.phases import ranking as rk
from datacurate.stages.base import GlobalStage, first_reason
from datacurate.stages.classifier_keys import CalibrationKeys, bucket_domains, bucket_reason, with_domain


@dataclass
class ScoreRankConfig(CalibrationKeys):
    scores: list[str] = opt(list, "score columns of earlier stages (quality_score, toxicity_score, <name>_score ...)")
    combine: Literal["max", "mean"] = opt("max", "several scores: the max (Nemotron-CC) or mean of their percentile "
                                          "ranks")
    name: str = opt("ensemble", "column prefix: <name>_rank, <name>_bucket")
    invert: list[str] = opt(list, "scores where lower is better (toxicity_score): ranked from the top down")

    def validate(self) -> None:
        super().validate()
        if not self.scores:
            raise ValueError("scores: name at least one score column")
        if not self.name.isidentifier():
            raise ValueError(f"name {self.name!r}: must be a plain identifier (it prefixes column names)")
        if set(self.invert) - set(self.scores):
            raise ValueError("invert: only columns listed in scores")


@functools.lru_cache(maxsize=None)
def _columns(name: str, buckets: bool) -> type:
    cols = {f"{name}_rank": pa.float32(), **({f"{name}_bucket": pa.int32()} if buckets else {})}
    return type(f"ScoreRank_{name}", (ScoreRank,), {"columns": cols, "__module__": __name__})


class ScoreRank(GlobalStage):
    name = "score_rank"
    Config = ScoreRankConfig
    columns: dict = {}  # per configuration: :meth:`for_config`

    @classmethod
    def for_config(cls, config: ScoreRankConfig) -> type:
        return _columns(config.name, config.buckets is not None)

    @classmethod
    def stats_key(cls, config) -> str:
        return f"{cls.name}:{config.name}"

    @classmethod
    def needs_columns(cls, config) -> dict[str, str]:
        return {s: "score_rank.scores" for s in config.scores}

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        self.columns = self.for_config(self.config).columns

    def calibration(self) -> rk.Calibration:
        c = self.config
        return rk.Calibration(list(c.scores), c.combine, c.top_fraction, c.buckets, c.weight, ranks=True)

    def run_global(self, ctx) -> dict:
        c = self.config
        if not ctx.files:
            return {"scored": 0}
        d = ctx.scratch(f"score_rank_{c.name}")
        scored = sum(ctx.map_files("gather", _phase_gather, c=c, d=d))
        cdf_path, thr, metrics = rk.run(ctx, d, self.calibration())
        kept = ctx.map_files("decide", _phase_decide, c=c, cal=self.calibration(), d=d, cdf_path=cdf_path, thr=thr,
                             out_dir=ctx.decisions_dir, compression=ctx.compression)
        buckets: dict = {}
        for r in kept:
            for b, n in r.items():
                buckets[b] = buckets.get(b, 0) + n
        metrics.update(scored=scored)
        if c.buckets is not None:
            metrics["bucket_documents"] = dict(sorted(buckets.items()))
        return metrics

    def apply(self, table: pa.Table, decisions: pa.Table):
        cols, reasons = super().apply(table, decisions)
        return with_domain(table, decisions, cols), reasons


def _phase_gather(part: str, c: ScoreRankConfig, d: str) -> int:
    """One part's scores (inverted where lower is better), ``_ord`` and mass, as its scores file."""
    from datacurate.formats.io import write_atomic
    from datacurate.phases.context import read_part

    t = read_part(part, [ORD, "text", "n_tokens", *c.scores])
    t = t.take(pa.array(np.argsort(t[ORD].to_numpy(), kind="stable")))  # scores files go by _ord
    cols = {ORD: t[ORD], rk.WEIGHT: pa.array(rk.weights(t, c.weight), pa.int64())}
    for s in c.scores:
        v = t[s].cast(pa.float64()).fill_null(np.nan).to_numpy() if t.schema.field(s).type != pa.null() else \
            np.full(t.num_rows, np.nan)
        cols[s] = -v if s in c.invert else v
    write_atomic(pa.table(cols), rk.scores_path(d, part))
    return t.num_rows


def _phase_decide(part: str, c: ScoreRankConfig, cal: rk.Calibration, d: str, cdf_path, thr, out_dir: str,
                  compression: str) -> dict:
    from datacurate.formats.io import write_atomic

    got = rk.decide(d, part, cal, cdf_path, thr)
    n, rank, bucket = len(got["ord"]), got["rank"], got["bucket"]
    cols = {ORD: pa.array(got["ord"], pa.int64()), f"{c.name}_rank": pa.array(rank, pa.float32(), mask=np.isnan(rank))}
    rules = [("score_rank/not_top_fraction", ~got["top"])]
    if c.buckets is not None:
        cols[f"{c.name}_bucket"] = pa.array(bucket, pa.int32(), mask=bucket < 0)
        rules += bucket_reason(c, bucket, "score_rank")
        if c.domain is not None:
            dom = storage.read_parquet(part, columns=[ORD, DOMAIN])
            pos = np.argsort(dom[ORD].to_numpy())  # the scores file's rows are the part's, by _ord
            cols[DOMAIN] = bucket_domains(c, c.name, bucket, dom[DOMAIN].take(pa.array(pos)))
    cols[REJECT_REASON] = first_reason(n, rules)
    write_atomic(pa.table(cols), storage.join(out_dir, part.rsplit("/", 1)[-1]), compression)
    b, k = np.unique(bucket[bucket >= 0], return_counts=True)
    return {str(int(x)): int(y) for x, y in zip(b, k)}
