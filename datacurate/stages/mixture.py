"""Domain mixture of the token shards: how many tokens of each domain they hold.

Weights ``w_d`` (from the config, or from a JSON file such as DoReMi, Xie et al. 2023,
writes) and a token budget ``T`` (default: every token that reaches a bucket) give
each domain a target of ``T * w_d / sum(w)`` tokens and a rate
``r_d = target_d / N_d`` over its ``N_d`` bucketed tokens. Each sequence is then written
``floor(r_d)`` times plus once more with probability ``r_d - floor(r_d)``: up-sampling
repeats sequences, down-sampling drops them; the expected token count is exactly the
target, and the realised one is within a few sequence lengths times
``sqrt(sequences)`` of it. The coin of a sequence is a hash of (``seed``, document id,
position in the document), so in ``decompose`` mode the shards are the same whatever
the batching or the number of workers (``pack`` mode cuts sequences per work part).

A domain in the corpus without a weight gets rate 0 (it is listed in the manifest
with its dropped tokens); a weighted domain absent from the corpus is reported and its
weight is shared out over the others by the normalisation.
"""

from __future__ import annotations

import json
from typing import Optional

import numpy as np
import pandas as pd
import pyarrow as pa

from datacurate.formats import storage
from datacurate.core.coerce import ConfigError
from datacurate.text.textstats import mix

def load_weights(mixture: Optional[dict], mixture_file: Optional[str]) -> tuple[Optional[dict], str]:
    """(weights or None for the natural mixture, where they came from)."""
    if mixture and mixture_file:
        raise ConfigError("decompose: set mixture or mixture_file, not both")
    if mixture_file:
        if not storage.isfile(mixture_file):
            raise ConfigError(f"decompose: mixture_file not found: {mixture_file}")
        try:
            data = json.loads(storage.read_text(mixture_file))
        except (OSError, ValueError) as e:
            raise ConfigError(f"decompose: mixture_file {mixture_file} is not JSON ({e})") from None
        if isinstance(data, dict) and isinstance(data.get("domain_weights"), dict):
            data = data["domain_weights"]  # {"domain_weights": {...}, ...other fields}
        weights, source = data, mixture_file
    elif mixture:
        weights, source = mixture, "config"
    else:
        return None, "natural"
    if not isinstance(weights, dict) or not weights or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in weights.values()):
        raise ConfigError(f"decompose: mixture from {source} must map domains to non-negative numbers")
    if sum(weights.values()) <= 0:
        raise ConfigError(f"decompose: mixture from {source} has no positive weight")
    return {str(k): float(v) for k, v in weights.items()}, source


def plan(tokens_by_domain: dict[str, int], weights: Optional[dict], total_tokens: Optional[int]) -> dict:
    """Per domain of the corpus: weight (normalised), target tokens and sampling rate."""
    available = sum(tokens_by_domain.values())
    total = available if total_tokens is None else total_tokens
    if weights is None and total_tokens is None:  # the natural mixture: every sequence once, exactly
        return {"domains": {d: {"weight": n / available, "target_tokens": float(n), "rate": 1.0}
                            for d, n in sorted(tokens_by_domain.items())},
                "total_tokens": total, "missing_domains": []}
    if weights is None:
        weights = {d: n / available if available else 0.0 for d, n in tokens_by_domain.items()}
    present = {d: w for d, w in weights.items() if tokens_by_domain.get(d, 0) > 0}
    norm = sum(present.values())
    if norm == 0 and available > 0:
        raise ValueError(f"decompose: no domain with a positive mixture weight has tokens "
                         f"(weighted: {sorted(d for d, w in weights.items() if w > 0)}; "
                         f"present: {sorted(tokens_by_domain)})")
    out = {}
    for d, n in sorted(tokens_by_domain.items()):
        w = present.get(d, 0.0) / norm if norm else 0.0
        target = total * w
        out[d] = {"weight": w, "target_tokens": target, "rate": target / n if n else 0.0}
    return {"domains": out, "total_tokens": total,
            "missing_domains": sorted(d for d, w in weights.items() if w > 0 and d not in present)}


def sequence_keys(ids: pa.Array, doc: np.ndarray, position: np.ndarray, seed: int) -> np.ndarray:
    """64-bit keys of sequences from (document id, position in the document), seeded.
    String ids are hashed in C (pandas' SipHash with its fixed key), not per row in Python."""
    h_id = pd.util.hash_array(np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object), categorize=False)
    seeded = mix(h_id.astype(np.uint64), np.full(len(h_id), seed, dtype=np.uint64))
    return mix(seeded[doc], position.astype(np.uint64))


def repeats(keys: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """How many times each sequence is written: floor(rate) + Bernoulli(frac(rate))."""
    u = (keys >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))  # uniform in [0, 1)
    whole = np.floor(rates)
    return (whole + (u < rates - whole)).astype(np.int64)
