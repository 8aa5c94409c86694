"""Near-duplicate detection core: MinHash signatures, LSH banding, connected components.

Plain functions over NumPy / Arrow batches (no Ray, no Python loop per document or
shingle); the engine runs them as the phases
``signatures -> band_keys -> bucket_edges -> verify -> star steps -> survivors``.

* **MinHash** signatures (Broder 1997) of word ``ngram``-shingles: ``minhash.py``
  (re-exported here as ``normalize`` and ``signatures``); the estimate of Jaccard has
  standard error sqrt(J(1-J)/num_perm), 0.035 at J = 0.8 with 128 permutations.
* **Banding** (Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3.4):
  b bands of r rows; two documents become candidates if any band is equal, with
  probability S(s) = 1 - (1 - s^r)^b. ``optimal_params`` minimises the weighted
  false-positive and false-negative areas under S, as datasketch's ``_optimal_param``
  (same results). At threshold 0.8, 128 permutations that is (9, 13): S(0.8) = 0.40,
  S(0.85) = 0.69, too few candidates for high recall. With signature verification
  (default) LSH is only a pre-filter, so banding is optimised for threshold - 0.15:
  (16, 8), S(0.5) = 0.061, S(0.7) = 0.61, S(0.85) = 0.9938, S(0.9) = 0.9999.
* **Verification** keeps a candidate pair when its estimated Jaccard >= threshold - 2
  standard errors (0.729 at 0.8 / 128): a pair passes with probability 0.972 at J = 0.8,
  0.9998 at 0.85, 0.23 at 0.7 and 5e-8 at 0.5. A cut-off at the threshold itself would
  lose 6 % of the pairs at J = 0.85. On the test corpus (2,000 documents, copies at
  0-30 % word edits) this catches 99.8-100 % of pairs with J >= 0.85 and merges none
  <= 0.5; datasketch-style (9, 13) without verification catches 95-97 %.
* **Clusters**: connected components of the verified edges by alternating large- and
  small-star operations (Kiveris et al. 2014, "Connected Components in MapReduce and
  Beyond"), each a reduce per node that the engine runs partitioned by node; they
  converge in O(log^2 n) rounds to stars around the smallest node of each component.

Trade-off: signatures and bands are a few hundred bytes per document and every step
is a sort or a reduce, so nothing needs the whole corpus in one process; the price is
that bucket edges are stars around each bucket's smallest node, so a candidate pair
whose only common bucket is led by a false positive is found only through another band.

Empty documents (no words after normalisation) get an all-0xFFFFFFFF signature; they
would collide with each other in every band, so they are never duplicates here
(``clusters`` skips them; exact dedup handles them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import ID, LANG, ORD, REJECT_REASON, TEXT, WPART
from datacurate.stages.base import GlobalStage
from datacurate.text.minhash import MAX_NGRAM, normalize, signatures
from datacurate.text.textstats import mix

__all__ = [
    "NearDedupConfig", "normalize", "signatures", "optimal_params", "s_curve", "band_keys", "bucket_edges",
    "unique_edges", "estimated_jaccard", "star_map", "star_step", "components", "survivors", "clusters",
    "group_salt", "upsampling_weight", "FINEWEB2_UPSAMPLING",
]


# FineWeb-2 (Penedo et al. 2025, huggingface/fineweb-2 README, "re-hydration"): a cluster
# of N = 2, 3 keeps its survivor N times, 4 -> 3, 5..99 -> 5, 100..999 -> 8, >= 1000 -> 1
# (very large clusters are taken to be boilerplate); documents without duplicates 1.
FINEWEB2_UPSAMPLING = {1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}


def upsampling_weight(cluster_size, table: dict[int, int] = FINEWEB2_UPSAMPLING) -> np.ndarray:
    """Rehydration weight per document from its cluster size (null / 0: no duplicates, size 1):
    the weight of the largest size in ``table`` not above it."""
    if not isinstance(cluster_size, (pa.Array, pa.ChunkedArray)):
        cluster_size = pa.array(cluster_size, pa.int64())
    size = np.asarray(pc.fill_null(cluster_size.cast(pa.int64()), 1), dtype=np.int64)
    keys = np.array(sorted(table), dtype=np.int64)
    vals = np.array([table[k] for k in sorted(table)], dtype=np.int32)
    return vals[np.maximum(np.searchsorted(keys, np.maximum(size, 1), side="right") - 1, 0)]


def group_salt(values) -> np.ndarray:
    """(N,) uint64 per row: equal for equal values of the ``by`` column (null its own value),
    stable across processes; mixed into every band key, so rows of different groups never
    share a bucket."""
    import xxhash

    col = pa.array(values) if not isinstance(values, (pa.Array, pa.ChunkedArray)) else values
    col = pc.fill_null(col.cast(pa.string()), "\x00null")
    enc = pc.dictionary_encode(col)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    salts = np.array([xxhash.xxh3_64_intdigest(v.encode()) for v in enc.dictionary.to_pylist()], dtype=np.uint64)
    return salts[np.asarray(enc.indices, dtype=np.int64)] if len(salts) else np.zeros(0, np.uint64)


@dataclass
class NearDedupConfig:
    num_perm: int = opt(128, "MinHash permutations")
    ngram: int = opt(5, "word n-gram shingles")
    threshold: float = opt(0.8, "target Jaccard: pairs at or above it are merged (>= 97 % at 128 perms)")
    bands: Optional[int] = opt(None, "None: chosen from threshold (optimal_params, see banding())")
    rows: Optional[int] = None
    false_positive_weight: float = 0.5
    false_negative_weight: float = 0.5
    seed: int = 1
    verify: Literal["none", "signature"] = opt("signature", "drop candidate pairs whose estimated Jaccard < cut-off")
    verify_threshold: Optional[float] = opt(None, "None: threshold - 2 standard errors of the estimate (verify_cutoff)")
    by: Optional[str] = opt(None, 'deduplicate within groups of this column: "lang" dedups within each language, '
                            "as FineWeb-2 does (a text under two language labels keeps a copy in each); None: "
                            "across the whole corpus")
    # FineWeb-2's rehydration table (README of huggingface/fineweb-2): cluster size -> copies
    upsampling_weights: dict[int, int] = opt(lambda: dict(FINEWEB2_UPSAMPLING),
                                             "rehydration: the survivor of a cluster of size N gets the weight of the "
                                             "largest key <= N (FineWeb-2: 1->1, 2->2, 3->3, 5->5, 100->8, 1000->1)")
    priority: Literal["first", "longest", "column"] = opt("first", "survivor per cluster")
    priority_column: Optional[str] = opt(None, 'priority "column": highest value survives')
    # a reduce task holds a bounded slice of the signatures however large the corpus (issue 18)
    num_partitions: Optional[int] = opt(None, "shuffle partitions of the groupby/join steps; None: by corpus size")
    partition_documents: int = opt(50_000, "num_partitions None: one partition per this many documents (>= 2)")
    max_local_edges: int = opt(20_000_000, "connected components of at most this many verified pairs run in one Ray "
                               "task (vectorised union-find); larger graphs: distributed large/small-star rounds")

    def validate(self) -> None:
        for key in ("num_perm", "num_partitions", "partition_documents"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise ValueError(f"{key} must be positive")
        if not 1 <= self.ngram <= MAX_NGRAM:
            raise ValueError(f"ngram must be within 1..{MAX_NGRAM}")
        if not 0 < self.threshold < 1:
            raise ValueError("threshold must be within (0, 1)")
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if self.bands is not None and (self.bands < 1 or self.rows < 1 or self.bands * self.rows > self.num_perm):
            raise ValueError(f"bands * rows must be within 1..num_perm ({self.num_perm})")
        if self.false_positive_weight < 0 or self.false_negative_weight < 0 or \
                self.false_positive_weight + self.false_negative_weight <= 0:
            raise ValueError("false_positive_weight and false_negative_weight must be >= 0, not both 0")
        if self.verify not in ("none", "signature"):
            raise ValueError("verify must be 'none' or 'signature'")
        if self.verify_threshold is not None and not 0 < self.verify_threshold <= 1:
            raise ValueError("verify_threshold must be within (0, 1]")
        if self.priority not in ("first", "longest", "column"):
            raise ValueError("priority must be 'first', 'longest' or 'column'")
        if not self.upsampling_weights or 1 not in self.upsampling_weights or \
                any(k < 1 or v < 0 for k, v in self.upsampling_weights.items()):
            raise ValueError("upsampling_weights: cluster sizes (>= 1, 1 included) -> weights (>= 0)")
        if (self.priority == "column") != (self.priority_column is not None):
            raise ValueError("priority 'column' needs priority_column, and priority_column needs priority 'column'")

    def banding(self) -> tuple[int, int]:
        """(bands, rows): as given, else optimal_params at threshold (without verification)
        or at threshold - 0.15 (with verification: a high-recall pre-filter)."""
        if self.bands is not None:
            return self.bands, self.rows
        t = self.threshold if self.verify == "none" else max(self.threshold - 0.15, 0.05)
        return optimal_params(t, self.num_perm, self.false_positive_weight, self.false_negative_weight)

    def partitions(self, documents: int) -> int:
        """Shuffle partitions for a corpus of ``documents``: as given, else one per
        ``partition_documents`` (at least 2, at most 1024)."""
        if self.num_partitions is not None:
            return self.num_partitions
        return int(min(1024, max(2, math.ceil(documents / self.partition_documents))))

    def verify_cutoff(self) -> float:
        """Estimated Jaccard below which a candidate pair is dropped."""
        if self.verify_threshold is not None:
            return self.verify_threshold
        t = self.threshold
        return t - 2 * math.sqrt(t * (1 - t) / self.num_perm)


def band_keys(sigs: np.ndarray, bands: int, rows: int, salt: Optional[np.ndarray] = None) -> np.ndarray:
    """(N, bands) uint64 bucket keys: a hash of each band's rows in the low bits and the
    band index in the top bits, so keys of different bands never collide. ``salt`` (N,):
    rows whose salts differ (:func:`group_salt`) get unrelated keys in every band."""
    if bands * rows > sigs.shape[1]:
        raise ValueError(f"bands * rows = {bands * rows} > num_perm = {sigs.shape[1]}")
    band_bits = max(1, int(math.ceil(math.log2(bands))))
    v = sigs[:, : bands * rows].reshape(len(sigs), bands, rows).astype(np.uint64)  # (N, b, r)
    h = np.broadcast_to(np.arange(bands, dtype=np.uint64), (len(sigs), bands)).copy()
    if salt is not None:  # ``by``: each group its own buckets
        h = mix(h, np.asarray(salt, dtype=np.uint64)[:, None])
    for j in range(rows):
        h = mix(h, v[:, :, j])
    return (h >> np.uint64(band_bits)) | (np.arange(bands, dtype=np.uint64) << np.uint64(64 - band_bits))


def bucket_edges(keys: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Star edges (u = smallest node of a bucket, v = each other node), u < v, unique.

    ``keys`` and ``nodes`` are flat and parallel and hold every row of each key they
    contain (the engine partitions by key).
    """
    keys, nodes = np.asarray(keys, dtype=np.uint64), np.asarray(nodes, dtype=np.int64)
    order = np.lexsort((nodes, keys))
    k, n = keys[order], nodes[order]
    first = np.concatenate([[True], k[1:] != k[:-1]]) if len(k) else np.zeros(0, bool)
    root = n[first][np.cumsum(first) - 1]  # smallest node of each row's bucket
    keep = n != root
    return unique_edges(root[keep], n[keep])


def unique_edges(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (u, v) pairs, sorted by u then v (e.g. to merge partitions' outputs)."""
    if len(u) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    new = np.concatenate([[True], (u[1:] != u[:-1]) | (v[1:] != v[:-1])])
    return u[new], v[new]


def estimated_jaccard(sig_u: np.ndarray, sig_v: np.ndarray) -> np.ndarray:
    """Row-wise fraction of equal MinHash values (an unbiased Jaccard estimate)."""
    return np.mean(sig_u == sig_v, axis=1)


def star_map(u: np.ndarray, v: np.ndarray, kind: Literal["large", "small"]) -> tuple[np.ndarray, np.ndarray]:
    """Map side of a star operation: (key node, neighbour) pairs to partition by key.

    Large-star sends each edge both ways; small-star sends it to its larger end.
    """
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    if kind == "large":
        return np.concatenate([u, v]), np.concatenate([v, u])
    if kind == "small":
        return np.maximum(u, v), np.minimum(u, v)
    raise ValueError(f"kind must be 'large' or 'small', not {kind!r}")


def star_step(u: np.ndarray, v: np.ndarray, kind: Literal["large", "small"]) -> tuple[np.ndarray, np.ndarray]:
    """Reduce side of one large- or small-star operation (Kiveris et al. 2014).

    Input: (key node u, neighbour v) pairs from ``star_map``, with every pair of each
    key present. For each key u with m = min(u, neighbours):
    * large-star links every neighbour v > u to m;
    * small-star links u and every neighbour v < u to m.
    Output: unique undirected edges (min, max) without self-loops. Iterating
    large, small, large, ... until the edge set stops changing leaves every edge as
    (root, node) with root the smallest node of its component.
    """
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    if kind == "small":
        keep = v <= u
        u, v = u[keep], v[keep]
    elif kind != "large":
        raise ValueError(f"kind must be 'large' or 'small', not {kind!r}")
    if len(u) == 0:
        return unique_edges(u, v)
    order = np.argsort(u, kind="stable")
    u, v = u[order], v[order]
    start = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    m = np.minimum(np.minimum.reduceat(v, start), u[start])  # (keys,)
    m_row = np.repeat(m, np.diff(np.append(start, len(u))))
    if kind == "large":
        sel = v > u
        a, b = v[sel], m_row[sel]
    else:
        a, b = np.concatenate([v, u[start]]), np.concatenate([m_row, m])
    keep = a != b
    return unique_edges(np.minimum(a, b)[keep], np.maximum(a, b)[keep])


def components(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, root = smallest node of its component) for every node of the edges.

    Single-process reference: vectorised union-find (hook each edge's larger root onto
    the smaller with np.minimum.at, then pointer-jump until flat).
    """
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    nodes, inv = np.unique(np.concatenate([u, v]), return_inverse=True)
    iu, iv = inv[: len(u)], inv[len(u) :]
    parent = np.arange(len(nodes))  # indices follow node order, so min index = min node
    while True:
        pu, pv = parent[iu], parent[iv]
        diff = pu != pv
        if not diff.any():
            break
        np.minimum.at(parent, np.maximum(pu, pv)[diff], np.minimum(pu, pv)[diff])
        while True:  # pointer jumping
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
    return nodes, nodes[parent]


def optimal_params(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising
    fp_weight * int_0^t S(s) ds + fn_weight * int_t^1 (1 - S(s)) ds, S = 1 - (1 - s^r)^b,
    as datasketch's ``_optimal_param`` (Simpson's rule on 2001 points instead of quad).
    """
    b, r = [], []
    for bb in range(1, num_perm + 1):
        rr = np.arange(1, num_perm // bb + 1)
        b.append(np.full(len(rr), bb))
        r.append(rr)
    b = np.concatenate(b)[:, None].astype(np.float64)
    r = np.concatenate(r)[:, None].astype(np.float64)

    def simpson(lo: float, hi: float, f) -> np.ndarray:
        s = np.linspace(lo, hi, 2001)
        w = np.ones(len(s))
        w[1:-1:2], w[2:-1:2] = 4, 2
        return f(s[None, :]) @ w * (hi - lo) / (3 * (len(s) - 1))

    fp = simpson(0.0, threshold, lambda s: 1 - (1 - s**r) ** b)
    fn = simpson(threshold, 1.0, lambda s: (1 - s**r) ** b)
    best = int(np.argmin(fp * fp_weight + fn * fn_weight))
    return int(b[best, 0]), int(r[best, 0])


def s_curve(s, bands: int, rows: int):
    """Probability that a pair of Jaccard ``s`` shares at least one band."""
    return 1 - (1 - np.asarray(s, dtype=np.float64) ** rows) ** bands


def survivors(nodes: np.ndarray, roots: np.ndarray, score: Optional[np.ndarray] = None) -> np.ndarray:
    """Survivor node of each node's cluster: highest ``score`` (ties: smallest node), or
    the smallest node (= first in input order when node ids follow it) without a score."""
    nodes, roots = np.asarray(nodes, dtype=np.int64), np.asarray(roots, dtype=np.int64)
    if score is None:
        return roots
    order = np.lexsort((nodes, -np.asarray(score, dtype=np.float64), roots))
    r = roots[order]
    first = np.concatenate([[True], r[1:] != r[:-1]]) if len(r) else np.zeros(0, bool)
    best = nodes[order][first]  # (clusters,) in root order
    return best[np.searchsorted(r[first], roots)]


def clusters(sigs: np.ndarray, cfg: NearDedupConfig, salt: Optional[np.ndarray] = None) -> np.ndarray:
    """Single-process near dedup of one signature matrix: for every document, the root
    (smallest row index) of its cluster; itself when it has no duplicate. Empty
    documents are never duplicates. The engine's distributed result must equal this."""
    bands, rows = cfg.banding()
    live = np.flatnonzero(~(sigs == 0xFFFFFFFF).all(axis=1))
    keys = band_keys(sigs[live], bands, rows, None if salt is None else salt[live])  # (M, bands)
    u, v = bucket_edges(keys.ravel(), np.repeat(live, bands))
    if cfg.verify == "signature":
        keep = estimated_jaccard(sigs[u], sigs[v]) >= cfg.verify_cutoff()
        u, v = u[keep], v[keep]
    root = np.arange(len(sigs))
    nodes, roots = components(u, v)
    root[nodes] = roots
    return root


class NearDedup(GlobalStage):
    """Stage ``near_dedup``: MinHash-LSH clusters; one survivor per cluster.

    Rejected documents get ``near_dedup/dup_of:<survivor id>``; every clustered document
    gets ``cluster_id`` (the survivor's id) and ``cluster_size``, and every document its
    ``upsampling_weight`` (FineWeb-2's rehydration, from ``cluster_size``; 1 without
    duplicates). Shingles are words in every script (``lang`` picks the segmenter where
    the rows carry it); ``by: lang`` keeps each language's clusters apart. The phases
    (:func:`run_distributed`) run on Ray, or in-process (small inputs, ``stage(table)``);
    :func:`clusters` is the single-process reference they must equal.
    """

    name = "near_dedup"
    Config = NearDedupConfig
    uses_words = True
    columns = {"cluster_id": pa.string(), "cluster_size": pa.int32(), "upsampling_weight": pa.int32()}
    counted = {"cluster_size": None}

    @classmethod
    def needs_columns(cls, config: NearDedupConfig) -> dict[str, str]:
        return {config.by: f"by: {config.by}"} if config.by else {}

    def apply(self, table: pa.Table, decisions: pa.Table) -> tuple[dict[str, pa.Array], pa.Array]:
        cols, reason = super().apply(table, decisions)
        cols["upsampling_weight"] = pa.array(upsampling_weight(cols["cluster_size"], self.config.upsampling_weights))
        return cols, reason

    @classmethod
    def report_section(cls, view) -> str:
        rows = view.scan.counts["cluster_size"]["before"]  # cluster size -> documents
        if not rows:
            return ""
        keys = ["threshold", "bands", "rows", "candidate_pairs", "verified_pairs", "clustered_documents", "duplicates"]
        bars = [(f"size {s}", [r // s]) for s, r in sorted(rows.items())]
        m, draw = view.metrics, view.draw
        return draw.section("Near-dedup clusters", draw.hbars("near-dedup clusters by size", bars, ["clusters"]),
                            draw.table(["metric", "value"], [[k, m[k]] for k in keys if k in m]))

    def run_global(self, ctx) -> dict:
        return run_distributed(self.config, ctx)


# ----------------------------------------------------------------------------- distributed
# signatures (per part file, saved) -> band rows -> buckets (groupby) -> candidate pairs ->
# verify (join with signatures) -> connected components (one task, or large-star /
# small-star rounds as groupbys) -> survivors (groupby cluster) -> decisions (groupby part)

def _sig_matrix(col) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return np.asarray(arr.flatten(), dtype=np.uint32).reshape(-1, arr.type.list_size)


def _phase_signatures(path: str, cfg: NearDedupConfig, out_dir: str) -> dict:
    """One part file -> its signatures, saved under the part's name (``_ord``, ``id``,
    ``prio``, ``empty``, ``sig``)."""
    import posixpath

    from datacurate.formats import storage
    from datacurate.formats.io import write_atomic

    have = set(storage.parquet_file(path).schema_arrow.names)
    cols = [ORD, TEXT, ID] + ([cfg.priority_column] if cfg.priority == "column" else [])
    cols += [c for c in dict.fromkeys([LANG, cfg.by]) if c and c in have and c not in cols]
    table = storage.read_parquet(path, columns=cols)
    texts = table[TEXT].combine_chunks()
    langs = table[LANG] if LANG in table.column_names else None  # picks the word segmenter per row
    sigs = signatures(texts, cfg.num_perm, cfg.ngram, cfg.seed, langs)
    if cfg.priority == "longest":
        prio = np.asarray(pc.utf8_length(texts), dtype=np.float64)
    elif cfg.priority == "column":
        prio = np.asarray(pc.fill_null(table[cfg.priority_column].cast(pa.float64()), -np.inf))
    else:
        prio = np.zeros(table.num_rows)
    empty = (sigs == 0xFFFFFFFF).all(axis=1)  # no words: never a near duplicate
    salt = group_salt(table[cfg.by]) if cfg.by else np.zeros(table.num_rows, np.uint64)
    write_atomic(pa.table({
        ORD: table[ORD], "id": table[ID], "prio": prio, "empty": empty, "salt": salt,
        "sig": pa.FixedSizeListArray.from_arrays(pa.array(sigs.ravel(), pa.uint32()), cfg.num_perm),
    }), storage.join(out_dir, posixpath.basename(path)))
    return {"rows": table.num_rows}


def _phase_bands(batch: pa.Table, bands: int, rows: int, parts: int, by: Optional[str]) -> pa.Table:
    keep = ~batch["empty"].to_numpy(zero_copy_only=False)
    salt = batch["salt"].to_numpy()[keep] if by else None
    keys = band_keys(_sig_matrix(batch["sig"])[keep], bands, rows, salt).ravel()  # (N * bands,)
    return pa.table({"key": keys, "node": np.repeat(batch[ORD].to_numpy()[keep], bands),
                     "p": (keys % np.uint64(parts)).astype(np.int32)})


def _phase_edges(group: pa.Table) -> pa.Table:
    u, v = bucket_edges(group["key"].to_numpy(), group["node"].to_numpy())
    return pa.table({"u": pa.array(u, pa.int64()), "v": pa.array(v, pa.int64())})


def _phase_verify(batch: pa.Table, threshold: float) -> pa.Table:
    keep = pa.array(estimated_jaccard(_sig_matrix(batch["sig_u"]), _sig_matrix(batch["sig_v"])) >= threshold)
    return pa.table({"u": batch["u"].filter(keep), "v": batch["v"].filter(keep)})


def _phase_star_map(batch: pa.Table, kind: str, parts: int) -> pa.Table:
    a, b = star_map(batch["u"].to_numpy(), batch["v"].to_numpy(), kind)
    return pa.table({"a": a, "b": b, "p": (a % parts).astype(np.int32)})


def _phase_star(group: pa.Table, kind: str) -> pa.Table:
    # (a = key node, b = neighbour): every pair of each key node of this partition
    u, v = star_step(group["a"].to_numpy(), group["b"].to_numpy(), kind)
    return pa.table({"u": np.asarray(u, np.int64), "v": np.asarray(v, np.int64)})


def _phase_checksum(batch: pa.Table) -> pa.Table:
    u = np.minimum(batch["u"].to_numpy(), batch["v"].to_numpy()).astype(np.uint64)
    v = np.maximum(batch["u"].to_numpy(), batch["v"].to_numpy()).astype(np.uint64)
    with np.errstate(over="ignore"):
        s = int(np.sum(mix(u, v), dtype=np.uint64))
    return pa.table({"s": pa.array([s], pa.uint64()), "n": [len(u)]})


def _fold(edges) -> tuple[int, int]:
    """An order-free checksum of an edge set: the star rounds stop when it repeats."""
    total, n = 0, 0
    for r in edges.map("checksum", _phase_checksum, whole=True).rows():
        total = (total + r["s"]) % (1 << 64)
        n += r["n"]
    return total, n


def _phase_local_components(batch: pa.Table) -> pa.Table:
    nodes, roots = components(batch["u"].to_numpy(), batch["v"].to_numpy())
    star = nodes != roots
    return pa.table({"u": pa.array(roots[star], pa.int64()), "v": pa.array(nodes[star], pa.int64())})


def _phase_members(batch: pa.Table) -> pa.Table:
    u, v = batch["u"].to_numpy(), batch["v"].to_numpy()
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return pa.table({"node": np.concatenate([hi, lo]), "root": np.concatenate([lo, lo])})


def _phase_root_partition(batch: pa.Table, parts: int) -> pa.Table:
    return batch.append_column("p", pa.array((batch["root"].to_numpy() % parts).astype(np.int32)))


def _phase_survivors(group: pa.Table) -> pa.Table:
    # rows: node, root, prio, id, wpart of the cluster members in this partition (roots repeat)
    _, first = np.unique(group["node"].to_numpy(), return_index=True)
    group = group.take(pa.array(np.sort(first)))
    root, node, prio = group["root"].to_numpy(), group["node"].to_numpy(), group["prio"].to_numpy()
    order = np.lexsort((node, -prio, root))  # per cluster: highest priority, then first in input
    root, node = root[order], node[order]
    ids = group["id"].take(pa.array(order))
    wpart = group[WPART].take(pa.array(order))
    head = np.concatenate([[True], root[1:] != root[:-1]])
    seg = np.cumsum(head) - 1
    surv_id = ids.take(pa.array(np.flatnonzero(head)[seg]))
    reason = pc.binary_join_element_wise(pa.scalar("near_dedup/dup_of:"), surv_id.cast(pa.string()), "")
    reason = pc.if_else(pa.array(head), pa.scalar(None, pa.string()), reason)
    return pa.table({ORD: pa.array(node, pa.int64()), REJECT_REASON: reason,
                     "cluster_id": surv_id.cast(pa.string()), "cluster_size": pa.array(np.bincount(seg)[seg], pa.int32()),
                     WPART: wpart})


def _phase_write(group: pa.Table, out_dir: str, compression: str) -> pa.Table:
    from datacurate.formats import storage
    from datacurate.formats.io import write_atomic

    name = group[WPART][0].as_py()
    write_atomic(group.drop_columns([WPART]), storage.join(out_dir, name), compression)
    return pa.table({"n": [group.num_rows], "rejected": [group[REJECT_REASON].null_count]})


def run_distributed(c: NearDedupConfig, ctx) -> dict:
    """The phases above through the engine's primitives (``ctx``, see
    :mod:`datacurate.phases.context`); decisions per part file; returns the metrics."""
    import posixpath

    from datacurate.formats import storage
    bands, rows = c.banding()
    verify_thr = c.verify_cutoff()
    metrics = {"bands": bands, "rows": rows, "num_perm": c.num_perm, "ngram": c.ngram, "threshold": c.threshold,
               "by": c.by,
               "verify": c.verify, "verify_cutoff": round(verify_thr, 4),
               "candidate_prob_at_threshold": round(float(s_curve(c.threshold, bands, rows)), 4)}
    if not ctx.files:
        return metrics
    sig_dir = ctx.scratch("near")
    done = ctx.map_files("signatures", _phase_signatures, cfg=c, out_dir=sig_dir)
    parts = c.partitions(sum(r["rows"] for r in done))
    metrics["num_partitions"] = parts
    sigs = ctx.read([storage.join(sig_dir, posixpath.basename(f)) for f in ctx.files],
                    [ORD, "id", "prio", "empty", "salt", "sig"])
    edges = (sigs.map("bands", _phase_bands, bands=bands, rows=rows, parts=parts, by=c.by)
             .groupby("edges", "p", parts, _phase_edges).materialize())
    metrics["candidate_pairs"] = edges.count()
    if metrics["candidate_pairs"] and c.verify == "signature":
        sig_only = sigs.select([ORD, "sig"])
        edges = (edges.join(sig_only.rename({ORD: "u", "sig": "sig_u"}), "u", parts)
                 .join(sig_only.rename({ORD: "v", "sig": "sig_v"}), "v", parts)
                 .map("verify", _phase_verify, threshold=verify_thr).materialize())
    metrics["verified_pairs"] = edges.count()
    rounds = 0
    if metrics["verified_pairs"] and metrics["verified_pairs"] <= c.max_local_edges:
        # small graph: one task (not the driver) runs union-find and emits (root, member) stars
        edges = edges.single("components", _phase_local_components).materialize()
    elif metrics["verified_pairs"]:
        prev = _fold(edges)
        while True:
            rounds += 1
            for kind in ("large", "small"):
                edges = (edges.map("star_map", _phase_star_map, kind=kind, parts=parts)
                         .groupby("star", "p", parts, _phase_star, kind=kind).materialize())
            cur = _fold(edges)
            if cur == prev or rounds >= 64:
                break
            prev = cur
    if metrics["verified_pairs"]:
        # stars: each edge joins a member to its component's minimum (the root)
        attrs = sigs.select([ORD, "prio", "id", WPART]).rename({ORD: "node"})
        clustered = (edges.map("members", _phase_members).join(attrs, "node", parts)
                     .map("root_partition", _phase_root_partition, parts=parts))
        res = (clustered.groupby("survivors", "p", parts, _phase_survivors)
               .groupby("write", WPART, max(1, min(len(ctx.files), 32)), _phase_write,
                        out_dir=ctx.decisions_dir, compression=ctx.compression).rows())
        metrics["clustered_documents"] = int(sum(r["n"] for r in res))
        metrics["duplicates"] = int(sum(r["n"] - r["rejected"] for r in res))
    metrics["component_rounds"] = rounds  # 0: components found in one task
    return metrics
