"""Calibrated keeps over the whole corpus: a top fraction, percentile ranks, buckets, and
ensembles of several classifiers' scores.

* **Top fraction** (DCLM, Li et al. 2024: the fastText classifier's top 10 % beat every
  rule set): the k-th document by score over all parts, exactly, by the radix select of
  :mod:`datacurate.phases.cutoff` (the one DSIR's cut-off uses); ties by input position.
* **Percentile ranks and buckets** (Nemotron-CC, Su et al. 2024: each classifier's score
  binned into 20 buckets by percentile, 5 % each; the ensemble a document's highest bucket
  over three classifiers; quality levels built from the buckets). A document's percentile
  is the share of the corpus's mass (tokens, by default, or documents) scored below it,
  plus half of its own bin. The mass per score comes from the same 16-bit radix digits
  the cut-off uses: a 65,536-bin histogram of each score's order bits, summed over parts;
  a bin holding more than 1/``REFINE`` of the mass is refined into its 32-bit bins
  (sparse: only the values that occur). A percentile is then exact to half a bin, at most
  1/8,192 of the mass, unless one score value alone holds more (ties stay ties).
* **Ensembles**: the max (Nemotron-CC) or the mean of the per-model percentile ranks;
  the bucket of the max is the highest per-model bucket, as Nemotron-CC takes it.

Every per-part step is a plain function of one part's *scores file*
(``<part>.scores.parquet`` in the stage's scratch directory: ``_ord``, the score columns,
``_weight``), run by ``ctx.map_files``; the driver holds the (m, 65,536) histograms and
the refined bins, never the scores.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.schema import N_TOKENS, ORD, TEXT
from datacurate.formats import storage
from datacurate.phases import cutoff
from datacurate.text import topk

REFINE = 4096
WEIGHT = "_weight"
_HI, _LO = np.uint64(48), np.uint64(32)  # shifts to a score's 16- and 32-bit order prefix


@dataclass
class Calibration:
    """What a classifier stage asks of the whole corpus (all None: nothing global)."""

    scores: list  # score columns of the scores files
    combine: str = "max"  # "max" (Nemotron-CC) or "mean" of the percentile ranks, with several scores
    top_fraction: Optional[float] = None  # keep this share of the scored documents (DCLM: 0.1)
    buckets: Optional[int] = None  # percentile buckets (Nemotron-CC: 20)
    weight: str = "tokens"  # the percentiles' mass: "tokens" or "documents"
    ranks: bool = False  # percentile ranks even for one score without buckets

    @property
    def needs_ranks(self) -> bool:
        return self.ranks or self.buckets is not None or len(self.scores) > 1


def weights(table: pa.Table, how: str) -> np.ndarray:
    """(N,) int64 mass of each row: 1, or its tokens (``n_tokens`` when the tokenize stage
    ran, else its UTF-8 bytes: proportional to BPE tokens within a factor of ~2 across
    scripts, where whitespace words count a Chinese page as one)."""
    if how == "documents":
        return np.ones(table.num_rows, np.int64)
    if N_TOKENS in table.column_names and table.schema.field(N_TOKENS).type != pa.null():
        return np.asarray(table.column(N_TOKENS).fill_null(0), np.int64)
    return np.asarray(pc.binary_length(pc.fill_null(table.column(TEXT), "")), np.int64)


def scores_path(d: str, part: str) -> str:
    return storage.join(d, cutoff.base(part)).removesuffix(".parquet") + ".scores.parquet"


def _scores(d: str, part: str, cal: Calibration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ords (N,), scores (m, N) float64, NaN = unscored, weights (N,)) of one part."""
    if not storage.exists(scores_path(d, part)):  # a part with no rows to score
        return np.zeros(0, np.int64), np.zeros((len(cal.scores), 0)), np.zeros(0)
    t = storage.read_parquet(scores_path(d, part), columns=[ORD, WEIGHT, *cal.scores])
    s = np.stack([t[c].cast(pa.float64()).fill_null(np.nan).to_numpy() for c in cal.scores]) if cal.scores else \
        np.zeros((0, t.num_rows))
    return t[ORD].to_numpy(), s, t[WEIGHT].to_numpy().astype(np.float64)


def phase_mass(part: str, d: str, cal: Calibration) -> str:
    """(m, 65,536) float64: each score's mass per 16-bit order prefix in this part, saved."""
    _, s, w = _scores(d, part, cal)
    out = np.zeros((len(cal.scores), topk.BINS))
    for i, row in enumerate(s):
        ok = ~np.isnan(row)
        out[i] = np.bincount((topk.ascending_bits(row[ok]) >> _HI).astype(np.int64), weights=w[ok], minlength=topk.BINS)
    return storage.save_npy(cutoff.scratch_name(d, part, "mass"), out)


def phase_fine(part: str, d: str, cal: Calibration, heavy: str) -> str:
    """Per score: the 32-bit order prefixes of this part's rows in heavy bins and their mass (sparse), saved."""
    _, s, w = _scores(d, part, cal)
    hv = storage.load_npy(heavy)  # (m, BINS) bool
    out = {}
    for i, row in enumerate(s):
        ok = ~np.isnan(row)
        bits = topk.ascending_bits(row[ok])
        sel = hv[i][(bits >> _HI).astype(np.int64)]
        keys, inv = np.unique(bits[sel] >> _LO, return_inverse=True)
        out[f"k{i}"], out[f"m{i}"] = keys, np.bincount(inv, weights=w[ok][sel], minlength=len(keys))
    return storage.save_npy(cutoff.scratch_name(d, part, "fine").removesuffix(".npy") + ".npz", out)


def cdf(mass: np.ndarray, fine_keys: np.ndarray, fine_mass: np.ndarray, heavy: np.ndarray) -> dict:
    """One score's bins in ascending order: ``start`` (32-bit order prefix where each bin
    begins), ``below`` (mass of all lower bins), ``mass``, and the total."""
    light = np.flatnonzero((mass > 0) & ~heavy)
    starts = np.concatenate([light.astype(np.uint64) << np.uint64(16), fine_keys.astype(np.uint64)])
    m = np.concatenate([mass[light], fine_mass])
    o = np.argsort(starts, kind="stable")
    starts, m = starts[o], m[o]
    return {"start": starts, "below": np.cumsum(m) - m, "mass": m, "total": np.array([m.sum()])}


def percentile(scores: np.ndarray, table: dict) -> np.ndarray:
    """(N,) float64 percentile rank in [0, 1] of each score (NaN stays NaN)."""
    out = np.full(len(scores), np.nan)
    ok = ~np.isnan(scores)
    if not ok.any() or table["total"][0] <= 0:
        return out
    p32 = topk.ascending_bits(scores[ok]) >> _LO
    # a value's bin starts at the largest start at or below its 32-bit prefix: its own refined
    # bin where its 16-bit bin was refined (every value scored is one), else its 16-bit bin
    j = np.clip(np.searchsorted(table["start"], p32, side="right") - 1, 0, len(table["start"]) - 1)
    out[ok] = (table["below"][j] + table["mass"][j] / 2) / table["total"][0]
    return out


def ranks(d: str, part: str, cal: Calibration, tables: list) -> tuple[np.ndarray, np.ndarray]:
    """(ords, combined rank (N,)) of one part: its percentile (one score) or the max / mean
    over the scores (a row some models did not score takes the others')."""
    ords, s, _ = _scores(d, part, cal)
    pct = np.stack([percentile(row, t) for row, t in zip(s, tables)])  # (m, N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: unscored, NaN
        return ords, (np.nanmax(pct, axis=0) if cal.combine == "max" else np.nanmean(pct, axis=0))


def keys_of(d: str, part: str, cal: Calibration, tables: Optional[list]) -> tuple[np.ndarray, np.ndarray]:
    """(ords, selection key) of one part: the combined rank for an ensemble, the raw score for one."""
    if tables is not None and len(cal.scores) > 1:
        return ranks(d, part, cal, tables)
    ords, s, _ = _scores(d, part, cal)
    return ords, s[0]


def phase_keys(part: str, d: str, cal: Calibration, cdf_path: Optional[str]) -> dict:
    """This part's selection keys (unscored: never counted) saved as its keys file; its round-0 histogram."""
    from datacurate.formats.io import write_atomic

    ords, key = keys_of(d, part, cal, load_tables(cdf_path, cal))
    key = np.where(np.isnan(key), -np.inf, key)
    chunk = np.zeros(len(ords), np.int32)
    write_atomic(pa.table({"key": key, "ord": pa.array(ords, pa.int64()), "chunk": chunk}), cutoff.weights_path(d, part))
    return {"counts": cutoff.first_counts(key, ords, chunk, d, part), "eligible": int(np.isfinite(key).sum())}


def load_tables(cdf_path: Optional[str], cal: Calibration) -> Optional[list]:
    if cdf_path is None:
        return None
    with storage.load_npy(cdf_path) as z:
        return [{k: z[f"{k}{i}"] for k in ("start", "below", "mass", "total")} for i in range(len(cal.scores))]


def run(ctx, d: str, cal: Calibration) -> tuple[Optional[str], Optional[list], dict]:
    """The global passes a calibration needs, over the parts ``ctx.files`` (their scores
    files written in ``d``): (path of the saved percentile tables or None, the cut-off
    (key, ord, chunk) or None, metrics)."""
    metrics: dict = {}
    cdf_path = None
    if cal.needs_ranks:
        mass = sum(storage.load_npy(p) for p in ctx.map_files("mass", phase_mass, d=d, cal=cal))
        heavy = mass > mass.sum(axis=1, keepdims=True) / REFINE  # (m, BINS)
        hpath = storage.save_npy(storage.join(d, "heavy.npy"), heavy)
        fine = ctx.map_files("fine", phase_fine, d=d, cal=cal, heavy=hpath)
        saved = {}
        for i in range(len(cal.scores)):
            keys, sums = _merge_fine(fine, i)
            for k, v in cdf(mass[i], keys, sums, heavy[i]).items():
                saved[f"{k}{i}"] = v
        cdf_path = storage.save_npy(storage.join(d, "cdf.npz"), saved)
        metrics["rank_bins"] = [int(len(saved[f"start{i}"])) for i in range(len(cal.scores))]
    thr = None
    if cal.top_fraction is not None:
        rows = ctx.map_files("keys", phase_keys, d=d, cal=cal, cdf_path=cdf_path)
        eligible = sum(r["eligible"] for r in rows)
        k = min(eligible, int(round(cal.top_fraction * eligible)))
        thr = list(cutoff.kth(ctx, d, [r["counts"] for r in rows], k))
        metrics.update(top_k=k, scored=eligible, cutoff_key=thr[0] if k else None)
    return cdf_path, thr, metrics


def _merge_fine(paths: list, i: int) -> tuple[np.ndarray, np.ndarray]:
    keys, sums = [], []
    for p in paths:
        with storage.load_npy(p) as z:
            keys.append(z[f"k{i}"])
            sums.append(z[f"m{i}"])
    k = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
    u, inv = np.unique(k, return_inverse=True)
    return u, np.bincount(inv, weights=np.concatenate(sums) if sums else np.zeros(0), minlength=len(u))


def decide(d: str, part: str, cal: Calibration, cdf_path: Optional[str], thr: Optional[list]) -> dict:
    """One part's calibrated columns: ``rank`` (combined percentile, NaN unscored),
    ``bucket`` (-1 unscored or no buckets), ``top`` (False: outside the top fraction), by ``_ord``."""
    tables = load_tables(cdf_path, cal)
    ords, s, _ = _scores(d, part, cal)
    n = len(ords)
    rank = ranks(d, part, cal, tables)[1] if tables is not None else np.full(n, np.nan)
    bucket = np.full(n, -1, np.int32)
    if cal.buckets is not None:
        ok = ~np.isnan(rank)
        bucket[ok] = np.minimum((rank[ok] * cal.buckets).astype(np.int32), cal.buckets - 1)
    top = np.ones(n, bool)
    if thr is not None:
        _, key = keys_of(d, part, cal, tables)
        scored = ~np.isnan(key)
        top = ~scored | topk.selected(np.where(scored, key, -np.inf), ords, np.zeros(n, np.int32), tuple(thr))
    return {"ord": ords, "rank": rank, "bucket": bucket, "top": top}
