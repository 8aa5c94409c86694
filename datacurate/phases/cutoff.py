"""The global k-th unit over part files, by the distributed radix select of
:func:`datacurate.text.topk.kth_unit`: the cut-off of DSIR's resampling and of every
classifier's calibrated keep (DCLM's top 10 %).

Each part file has a *keys file* in a scratch directory (``<part>.weights.parquet``:
``key`` float64, ``ord`` int64, ``chunk`` int32; -inf = never selected). The driver adds
the parts' 65,536-bin histograms of the keys' next digit, one round at a time, until one
bin holds at most ``limit`` units; the parts hand over just those and the driver orders
them. No process holds more than one part's keys, one histogram and ``limit`` rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from datacurate.formats import storage
from datacurate.text import topk

CUTOFF_ROWS = 1 << 17


def base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def scratch_name(d: str, path: str, what: str) -> str:
    """``<d>/<part stem>.<what>.npy``: one part's scratch array of one phase."""
    return storage.join(d, base(path).removesuffix(".parquet") + f".{what}.npy")


def weights_path(d: str, path: str) -> str:
    """The keys file of the part ``path`` in the scratch directory ``d``."""
    return storage.join(d, base(path)).removesuffix(".parquet") + ".weights.parquet"


def rank_words(keys: np.ndarray, ords: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    ok = np.isfinite(keys)  # ineligible units (-inf) are never selected
    return topk.rank_words(keys[ok], ords[ok], chunk[ok])


def first_counts(keys: np.ndarray, ords: np.ndarray, chunk: np.ndarray, d: str, path: str) -> str:
    """The histogram of the first digit of one part's keys, saved (the radix select's round 0)."""
    return storage.save_npy(scratch_name(d, path, "cutoff0"), topk.histogram(rank_words(keys, ords, chunk), []))


def _part_words(d: str, path: str) -> tuple[np.ndarray, pa.Table]:
    w = storage.read_parquet(weights_path(d, path), columns=["key", "ord", "chunk"])
    return rank_words(w["key"].to_numpy(), w["ord"].to_numpy(), w["chunk"].to_numpy()), w


def phase_counts(path: str, d: str, prefix: list) -> str:
    """This part's histogram of the next digit of its units under ``prefix``, saved."""
    words, _ = _part_words(d, path)
    return storage.save_npy(scratch_name(d, path, f"cutoff{len(prefix)}"), topk.histogram(words, prefix))


def phase_rows(path: str, d: str, prefix: list) -> str:
    """This part's units under ``prefix`` (few: the cut-off's bin), saved."""
    from datacurate.formats.io import write_atomic

    words, w = _part_words(d, path)
    w = w.filter(pa.array(np.isfinite(w["key"].to_numpy())))
    out = storage.join(d, base(path)).removesuffix(".parquet") + ".cutoff.parquet"
    write_atomic(w.filter(pa.array(topk.matching(words, prefix))), out)
    return out


def total(paths, size: int) -> np.ndarray:
    """The sum of saved (size,) int64 arrays."""
    out = np.zeros(size, np.int64)
    for p in paths:
        out += storage.load_npy(p)
    return out


def kth(ctx, d: str, counts: list, k: int, limit: int = CUTOFF_ROWS) -> tuple:
    """(key, ord, chunk) of the k-th unit over the parts ``ctx.files`` (their keys files in
    ``d``; ``counts``: their saved round-0 histograms, :func:`first_counts`); (inf, 0, 0)
    when k is 0 (nothing selected)."""
    def next_counts(prefix):
        return total(ctx.map_files(f"cutoff{len(prefix)}", phase_counts, journal=False, d=d, prefix=prefix), topk.BINS)

    def fetch(prefix):
        tables = [storage.read_parquet(p) for p in ctx.map_files("cutoff_rows", phase_rows, journal=False, d=d,
                                                                   prefix=prefix)]
        rows = pa.concat_tables(tables)
        return rows["key"].to_numpy(), rows["ord"].to_numpy(), rows["chunk"].to_numpy()

    if k == 0:
        return (np.inf, 0, 0)
    return topk.kth_unit(k, total(counts, topk.BINS), next_counts, fetch, limit)
