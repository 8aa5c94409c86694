"""The keys every calibrated classifier stage shares (``model_classifier``, ``score_rank``):
a top fraction, Nemotron-CC's buckets, and the bucket as a domain for ``decompose``'s
mixture and DoReMi. The passes behind them: :mod:`datacurate.phases.ranking`."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import DOMAIN, ORD


@dataclass
class CalibrationKeys:
    top_fraction: Optional[float] = opt(None, "keep this share of the scored documents, the top by score, over the "
                                        "whole corpus (DCLM: 0.1)")
    buckets: Optional[int] = opt(None, "write <name>_bucket: 0..buckets-1 by token-weighted percentile of the score "
                                 "(Nemotron-CC: 20)")
    min_bucket: Optional[int] = opt(None, "reject documents in lower buckets")
    weight: Literal["tokens", "documents"] = opt("tokens", "the percentiles' mass: tokens (n_tokens, else UTF-8 bytes) or "
                                                 "documents")
    domain: Optional[Literal["replace", "append"]] = opt(
        None, "write the bucket into domain (replace: '<name>-b07'; append: '<domain>/<name>-b07') for decompose's "
        "mixture and DoReMi")

    def validate(self) -> None:
        if self.top_fraction is not None and not 0 < self.top_fraction <= 1:
            raise ValueError("top_fraction must be within (0, 1]")
        if self.buckets is not None and not 2 <= self.buckets <= 1000:
            raise ValueError("buckets must be within 2..1000")
        if (self.min_bucket is not None or self.domain is not None) and self.buckets is None:
            raise ValueError("min_bucket and domain need buckets")
        if self.min_bucket is not None and not 0 <= self.min_bucket < self.buckets:
            raise ValueError("min_bucket must be within 0..buckets-1")


KEYS = ("top_fraction", "buckets", "min_bucket", "weight", "domain")


@dataclass(frozen=True)
class Calibrated:
    """What a per-document classifier stage declares (``Stage.calibrated``) so that the
    calibration keys given to it run as a ``score_rank`` stage right after it."""

    score: str  # its score column
    pass_all: dict  # its own threshold set to judge nothing, unless given, when the corpus-wide keys decide
    lower_is_better: bool = False  # toxicity: the top fraction is the least toxic


def split_calibration(cls: Any, params: Any) -> tuple[Any, Optional[dict]]:
    """(the stage's own params, a ``score_rank`` stage's params or None): ``quality:
    {top_fraction: 0.1}`` is ``quality: {min_score: 0}`` then ``score_rank: {scores:
    [quality_score], top_fraction: 0.1, name: quality}``."""
    declared = getattr(cls, "calibrated", None)
    if declared is None or not isinstance(params, dict) or not any(k in params for k in KEYS):
        return params, None
    own = {k: v for k, v in params.items() if k not in KEYS}
    if "top_fraction" in params or "min_bucket" in params:
        own = _with_defaults(own, declared.pass_all)
    calib = {"scores": [declared.score], "name": cls.name, **{k: params[k] for k in KEYS if k in params}}
    if declared.lower_is_better:
        calib["invert"] = [declared.score]
    return own, calib


def _with_defaults(given: dict, defaults: dict) -> dict:
    out = copy.deepcopy(given)
    for k, v in defaults.items():
        if isinstance(v, dict):
            out[k] = _with_defaults(out.get(k) or {}, v)
        else:
            out.setdefault(k, v)
    return out


def bucket_reason(c: CalibrationKeys, bucket: np.ndarray, stage: str) -> list:
    """The rule of ``min_bucket`` (unscored rows, bucket -1, are not judged)."""
    if c.min_bucket is None:
        return []
    return [(f"{stage}/low_bucket", (bucket >= 0) & (bucket < c.min_bucket))]


def bucket_domains(c: CalibrationKeys, name: str, bucket: np.ndarray, domain) -> pa.Array:
    """The new ``domain`` of each row (null where unscored: the engine keeps the old one)."""
    label = np.array([f"{name}-b{b:02d}" if b >= 0 else "" for b in range(-1, c.buckets)], object)[bucket + 1]
    if c.domain == "append":
        old = np.asarray(pc.fill_null(domain, "unknown").to_pylist(), object)
        label = np.where(bucket >= 0, old + "/" + label, label)
    return pa.array(np.where(bucket >= 0, label, None), pa.string())


def with_domain(table: pa.Table, decisions: pa.Table, cols: dict) -> dict:
    """``cols`` plus ``domain`` from the decisions where they set one."""
    if DOMAIN in decisions.column_names:
        new = pc.take(decisions.column(DOMAIN), pc.index_in(table.column(ORD), value_set=decisions.column(ORD)))
        cols[DOMAIN] = pc.if_else(pc.is_valid(new), new, table.column(DOMAIN).cast(pa.string()))
    return cols
