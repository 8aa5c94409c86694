"""A tokenizer's training text balanced over languages by temperature sampling.

Trained on a multilingual run's kept text as it is, a BPE spends its merges on the large
languages: their words become single tokens while a small language's stay bytes. XLM
(Conneau and Lample 2019) learned its BPE codes on sentences sampled with alpha = 0.5;
here each language keeps the share ``(N_l / N)^alpha`` (normalised) of the training bytes,
:mod:`datacurate.core.temperature`, by dropping documents of the languages above their
share: the language with the most share per byte keeps every document, language l a
fraction ``f_l = (q_l / p_l) / max_k (q_k / p_k)`` of its documents (``p`` the natural
shares, ``q`` the sampled ones). A document is kept when a hash of its text (pandas'
SipHash with its fixed key, and the seed) falls under ``f_l``: the same documents whatever
the order of the files. Two passes over Parquet files with the language column (a run's
``kept/``): bytes per language, then the sampled texts.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import ConfigError
from datacurate.core.schema import TEXT
from datacurate.core.temperature import shares
from datacurate.formats import storage


def parquet_parts(paths: list[str]) -> list[str]:
    """The Parquet files of ``paths``: a run directory's ``kept/``, directories, files."""
    out = []
    for p in paths:
        kept = storage.join(p, "kept")
        root = kept if storage.isdir(kept) else p
        out += storage.list_files(root, ".parquet") if storage.isdir(root) else [root]
    if not out or not all(f.endswith(".parquet") for f in out):
        raise ConfigError(f"balancing by language reads Parquet with a language column (a run's kept/); got {paths}")
    return sorted(out)


def _read(path: str, column: str) -> tuple[pa.Array, pa.Array]:
    names = storage.parquet_file(path).schema_arrow.names
    if column not in names:
        raise ConfigError(f"{path}: no column {column!r} to balance languages by")
    t = storage.read_parquet(path, columns=[TEXT, column])
    return t.column(TEXT).combine_chunks(), pc.fill_null(t.column(column).cast(pa.string()), "und").combine_chunks()


def bytes_by_language(files: list[str], column: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in files:
        text, lang = _read(f, column)
        size = pc.fill_null(pc.binary_length(text.cast(pa.large_binary())), 0)
        agg = pa.table({"l": lang, "b": size}).group_by("l").aggregate([("b", "sum")])
        for lang_, n in zip(agg.column("l").to_pylist(), agg.column("b_sum").to_pylist()):
            out[lang_] = out.get(lang_, 0) + int(n)
    return out


def keep_fractions(sizes: dict[str, int], alpha: float) -> dict[str, float]:
    """Each language's fraction of documents kept so that the sample's shares follow alpha."""
    total = sum(sizes.values())
    q = shares(sizes, alpha)
    ratio = {d: q[d] / (n / total) for d, n in sizes.items() if n > 0}
    top = max(ratio.values(), default=1.0)
    return {d: r / top for d, r in ratio.items()}


def _uniform(text: pa.Array, seed: int) -> np.ndarray:
    h = pd.util.hash_array(np.asarray(text.to_numpy(zero_copy_only=False), dtype=object), categorize=False,
                           hash_key=f"{seed:016d}"[:16])
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def balanced_texts(paths: list[str], alpha: float, column: str = "lang", seed: int = 0,
                   report: dict | None = None) -> Iterator[list[str]]:
    """Text batches of ``paths`` sampled so that languages take temperature shares
    (``report`` gets each language's bytes and kept fraction)."""
    if not 0.0 < alpha <= 1.0:
        raise ConfigError(f"alpha must be within (0, 1], got {alpha}")
    files = parquet_parts(paths)
    sizes = bytes_by_language(files, column)
    frac = keep_fractions(sizes, alpha)
    if report is not None:
        report.update({d: {"bytes": sizes[d], "kept_fraction": round(f, 6)} for d, f in frac.items()})
    for f in files:
        text, lang = _read(f, column)
        langs = list(frac)
        where = pc.fill_null(pc.index_in(lang, value_set=pa.array(langs, pa.string())), len(langs))
        limit = np.array([frac[x] for x in langs] + [0.0])[np.asarray(where)]
        keep = (_uniform(text, seed) < limit) & np.asarray(pc.is_valid(text))
        if keep.any():
            yield text.filter(pa.array(keep)).to_pylist()
