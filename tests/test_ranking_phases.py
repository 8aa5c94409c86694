"""The calibration passes over several part files (:mod:`datacurate.phases.ranking`, run
by the in-process context as the engine runs them): percentile ranks within half a bin of
the exact ones, heavy ties and refined bins included; the top fraction exact, ties by
position, the same as one sort of everything."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from datacurate.core.schema import ORD
from datacurate.formats import storage
from datacurate.phases import ranking as rk
from datacurate.phases.journal import Journal
from datacurate.phases.local import LocalContext


def exact_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    o = np.argsort(x, kind="stable")
    xs, ws = x[o], w[o]
    first = np.searchsorted(xs, xs, side="left")  # the mass below a value: before its first copy
    last = np.searchsorted(xs, xs, side="right")
    cum = np.concatenate([[0.0], np.cumsum(ws)])
    out = np.empty(len(x))
    out[o] = (cum[first] + (cum[last] - cum[first]) / 2) / ws.sum()
    return out


@pytest.fixture
def parts(tmp_path):
    rng = np.random.default_rng(0)
    n = 60_000
    a = rng.beta(5, 1, n)  # piled up near 1, as a fastText probability: heavy bins refined
    a[rng.random(n) < 0.2] = 1.0  # a fifth tied at exactly one value
    b = rng.normal(0, 3, n).astype(np.float32).astype(np.float64)  # logits; float32 precision
    b[rng.random(n) < 0.05] = np.nan  # unscored (another language)
    w = rng.integers(1, 2000, n)
    d = str(tmp_path / "scratch")
    files = []
    for i, rows in enumerate(np.array_split(np.arange(n), 3)):
        part = str(tmp_path / f"part-{i}.parquet")
        storage.write_parquet(pa.table({ORD: rows}), part)
        files.append(part)
        storage.write_parquet(pa.table({ORD: rows, "a": a[rows], "b": b[rows], rk.WEIGHT: w[rows]}),
                              rk.scores_path(d, part))
    ctx = LocalContext(str(tmp_path / "out"), "score_rank", Journal(str(tmp_path / "journal")), files,
                       str(tmp_path / "out"), None)
    return ctx, d, files, a, b, w


def test_percentiles_and_ensembles_over_parts(parts):
    ctx, d, files, a, b, w = parts
    c = rk.Calibration(["a", "b"], "max", buckets=20, weight="tokens")
    cdf_path, thr, metrics = rk.run(ctx, d, c)
    got = [rk.decide(d, f, c, cdf_path, thr) for f in files]
    rank = np.concatenate([g["rank"] for g in got])
    ok = ~np.isnan(b)
    ra, rb = exact_ranks(a, w), np.full(len(b), np.nan)
    rb[ok] = exact_ranks(b[ok], w[ok])
    want = np.fmax(ra, rb)
    assert np.abs(rank - want).max() <= 1 / 8192  # half a bin at most
    assert np.abs(rank - want).mean() < 1e-5  # and most far closer
    bucket = np.concatenate([g["bucket"] for g in got])
    share = np.bincount(bucket, weights=w) / w.sum()
    assert len(share) == 20 and metrics["rank_bins"][0] > 1000  # heavy bins were refined


@pytest.mark.parametrize("fraction", [0.1, 0.3])  # 0.1: the cut falls inside the fifth tied at 1.0
def test_top_fraction_is_exact_over_parts(parts, fraction):
    ctx, d, files, a, _, _ = parts
    c = rk.Calibration(["a"], top_fraction=fraction)
    cdf_path, thr, metrics = rk.run(ctx, d, c)
    top = np.concatenate([rk.decide(d, f, c, cdf_path, thr)["top"] for f in files])
    k = round(fraction * len(a))
    want = np.zeros(len(a), bool)
    want[np.lexsort((np.arange(len(a)), -a))[:k]] = True  # one sort of everything, ties by position
    assert metrics["top_k"] == k and (top == want).all()
