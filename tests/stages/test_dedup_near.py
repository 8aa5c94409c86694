"""Near-dedup core (``datacurate.stages.dedup_near``): each phase alone, then all of
them in one process on a corpus with planted copies at known word-edit rates.

Real text comes from sample_data (news, learned, fiction, conversational; documents
involved in sample_data's own planted or natural duplicates are left out).
"""

import gzip
import json
import math

import numpy as np
import pyarrow as pa
import pytest

from datacurate.dedup_eval import _edit, make_dup_corpus, pair_report, shingle_sets
from datacurate.stages import dedup_near as dn
from datacurate.text import minhash as mh
from datacurate.text import words as wordseg
from tests.conftest import REPO

M64 = 2**64


@pytest.fixture(scope="module")
def real_texts() -> list[str]:
    corpus = REPO / "sample_data" / "corpus"
    planted = set()
    for line in open(REPO / "sample_data" / "duplicates.jsonl"):
        rec = json.loads(line)
        planted |= {rec["id"], rec["orig"]}
    texts = []
    for name in ("news.jsonl", "learned.jsonl", "fiction.jsonl.gz", "conversational.jsonl"):
        with (gzip.open if name.endswith(".gz") else open)(corpus / name, "rt") as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("id") not in planted:
                    texts.append(rec["text"])
    return texts


# --- (1) banding parameters ---------------------------------------------------------

def test_optimal_params_is_sensible():
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        b, r = dn.optimal_params(t, 128)
        assert b * r <= 128
        assert abs((1 / b) ** (1 / r) - t) < 0.1  # the S-curve's steepest point is near t
        assert dn.s_curve(min(t + 0.15, 0.99), b, r) > 0.9  # pairs well above t collide
        assert dn.s_curve(t - 0.3, b, r) < 0.02  # pairs well below t do not
    assert dn.optimal_params(0.8, 128) == (9, 13)
    # more weight on false negatives -> more bands, a curve further left
    assert dn.optimal_params(0.8, 128, 0.1, 0.9)[0] > 9


def test_default_banding_is_high_recall_with_verification():
    cfg = dn.NearDedupConfig()
    b, r = cfg.banding()
    assert (b, r) == (16, 8) and b * r <= cfg.num_perm
    assert dn.s_curve(0.85, b, r) > 0.99
    assert dn.s_curve(0.5, b, r) < 0.07
    assert dn.NearDedupConfig(verify="none").banding() == (9, 13)
    assert dn.NearDedupConfig(bands=14, rows=8).banding() == (14, 8)
    assert cfg.verify_cutoff() == pytest.approx(0.8 - 2 * math.sqrt(0.8 * 0.2 / 128))
    assert dn.NearDedupConfig(verify_threshold=0.8).verify_cutoff() == 0.8


def test_optimal_params_matches_datasketch():
    lsh = pytest.importorskip("datasketch.lsh")
    for t in (0.5, 0.7, 0.8, 0.9):
        for w in (0.5, 0.2):
            assert dn.optimal_params(t, 128, w, 1 - w) == lsh._optimal_param(t, 128, w, 1 - w)


@pytest.mark.parametrize("bad", [
    {"bands": 20, "rows": 8}, {"bands": 16}, {"threshold": 1.0}, {"priority": "column"},
    {"priority_column": "score"}, {"verify": "exact"}, {"ngram": 0}, {"verify_threshold": 0},
])
def test_config_validate_rejects(bad):
    with pytest.raises(ValueError):
        dn.NearDedupConfig(**bad).validate()


def test_config_validate_accepts_defaults():
    dn.NearDedupConfig().validate()
    dn.NearDedupConfig(priority="column", priority_column="quality", bands=16, rows=8).validate()


# --- (2) signatures -------------------------------------------------------------------

def test_normalize():
    texts = pa.array(["Hello, World!  It's\tTIME\u2014now\u00a0ok\u2026", None, "  --  ", "naïve café 日本語"])
    assert dn.normalize(texts).to_pylist() == ["hello world it s time now ok", "", "", "naïve café 日本語"]


def _mix(a: int, b: int) -> int:  # textstats.mix on Python ints
    m1, m2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
    x = ((a * m1) % M64) ^ ((b + m2 + ((a << 6) % M64) + (a >> 2)) % M64)
    x ^= x >> 31
    x = (x * m2) % M64
    return x ^ (x >> 29)


def reference_signature(text: str, num_perm: int, ngram: int, seed: int) -> list[int]:
    """The definition, one document at a time, in plain Python integers: the words of
    the text with its unspaced-script runs segmented (``words.spaced``), normalised."""
    words = [w for w in dn.normalize(wordseg.spaced(pa.array([text])))[0].as_py().split(" ") if w]
    hashes = []
    for word in words:
        raw = word.encode()
        h = sum(byte * pow(int(mh._K), i, M64) for i, byte in enumerate(raw)) % M64
        hashes.append(_mix(h, len(raw)))
    grams = [hashes[i : i + ngram] for i in range(len(hashes) - ngram + 1)] if len(hashes) >= ngram else [hashes]
    shingles = [(sum(int(c) * h for c, h in zip(mh.COEF, g)) % M64) >> 32 for g in grams if g]
    a, b = mh.permutations(num_perm, seed)
    if not shingles:
        return [0xFFFFFFFF] * num_perm
    return [min((int(ak) * x + int(bk)) % 2**32 for x in shingles) for ak, bk in zip(a, b)]


def test_signatures_equal_reference(real_texts, monkeypatch):
    # tiny chunks and blocks, so documents straddle both boundaries
    monkeypatch.setattr(mh, "CHUNK_BYTES", 700)
    monkeypatch.setattr(mh, "_BLOCK", 37)
    texts = [
        real_texts[0][:1500], "", "one", "two words", "exactly five words right here", "Six, six; six: six! six? six.",
        "Unicode: naïve café\u2014“quoted” text\u2026 emoji😀here 日本語のテキスト ÄÖÜ ß\u00a0nbsp\u3000wide",
        "  leading and trailing  ", real_texts[5][:3000], "\x00\x01 control\x1fchars ok", "--- ... !!!", real_texts[9][:400],
    ]
    sigs = dn.signatures(pa.array(texts, pa.large_string()), 16, 5, seed=3)
    assert sigs.shape == (len(texts), 16) and sigs.dtype == np.uint32
    for i, text in enumerate(texts):
        assert sigs[i].tolist() == reference_signature(text, 16, 5, 3), f"document {i}: {text[:40]!r}"
    assert (sigs[1] == 0xFFFFFFFF).all() and (sigs[10] == 0xFFFFFFFF).all()  # no words


def test_signatures_identical_texts_and_seed(real_texts):
    texts = pa.array([real_texts[3], real_texts[4], real_texts[3], real_texts[3].upper()])
    s1 = dn.signatures(texts, 128, 5, seed=1)
    assert (s1[0] == s1[2]).all() and (s1[0] == s1[3]).all()  # normalisation: case does not matter
    assert (dn.signatures(texts, 128, 5, seed=1) == s1).all()
    s2 = dn.signatures(texts, 128, 5, seed=2)
    assert (s2[0] != s1[0]).mean() > 0.9
    chunked = pa.chunked_array([texts[:1], texts[1:]])
    assert (dn.signatures(chunked, 128, 5, seed=1) == s1).all()


def test_estimated_jaccard_tracks_true_jaccard(real_texts):
    rng = np.random.default_rng(7)
    pool = " ".join(real_texts).split()
    a_docs, b_docs = [], []
    for i in range(400):
        start = int(rng.integers(len(pool) - 400))
        words = pool[start : start + 300]
        a_docs.append(" ".join(words))
        b_docs.append(" ".join(_edit(words, [0.0, 0.01, 0.02, 0.04, 0.08, 0.15][i % 6], pool, rng)))
    true = np.array([len(x & y) / len(x | y) for x, y in zip(shingle_sets(a_docs), shingle_sets(b_docs))])
    est = dn.estimated_jaccard(dn.signatures(pa.array(a_docs), 128, 5, 1), dn.signatures(pa.array(b_docs), 128, 5, 1))
    err = est - true
    assert (true > 0.2).all() and (true[::6] == 1).all() and (est[::6] == 1).all()
    assert abs(err.mean()) < 0.01  # unbiased
    assert np.mean(np.abs(err) <= 0.1) >= 0.98  # 0.1 is ~2.5 standard errors at J = 0.5
    assert err.std() < 1.2 * np.sqrt(true * (1 - true) / 128).mean() + 0.005  # binomial spread


# --- (3) band keys and bucket edges -----------------------------------------------------

def test_band_keys():
    sigs = np.array([[1, 2, 3, 4, 5, 6], [1, 2, 3, 9, 9, 9], [7, 7, 7, 7, 7, 7], [7, 7, 7, 7, 7, 7]], np.uint32)
    keys = dn.band_keys(sigs, 2, 3)
    assert keys.shape == (4, 2) and keys.dtype == np.uint64
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1]
    assert keys[2, 0] != keys[2, 1]  # equal rows in different bands: different keys
    assert (keys[2] == keys[3]).all()
    assert len(np.intersect1d(keys[:, 0], keys[:, 1])) == 0
    with pytest.raises(ValueError):
        dn.band_keys(sigs, 3, 3)


def test_bucket_edges_hand_made():
    keys = np.array([10, 10, 10, 20, 20, 30, 40, 40, 40, 50, 50], np.uint64)
    nodes = np.array([5, 3, 8, 3, 5, 9, 7, 2, 7, 4, 4], np.int64)
    u, v = dn.bucket_edges(keys, nodes)
    # bucket 10 -> (3,5), (3,8); 20 -> (3,5) again; 30 alone; 40 -> (2,7) once; 50 one node twice
    assert list(zip(u.tolist(), v.tolist())) == [(2, 7), (3, 5), (3, 8)]
    u, v = dn.bucket_edges(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    assert len(u) == len(v) == 0


# --- (4) connected components -----------------------------------------------------------

def union_find(u, v) -> dict:
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(u.tolist(), v.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in list(parent)}


def star_fixpoint(u, v, n_partitions=1):
    """Alternate large- and small-star until the edge set stops changing, each step
    run as the engine does: map, partition by key node, reduce per partition."""
    def step(u, v, kind):
        k, nb = dn.star_map(u, v, kind)
        parts = [dn.star_step(k[k % n_partitions == p], nb[k % n_partitions == p], kind) for p in range(n_partitions)]
        return dn.unique_edges(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    edges = dn.unique_edges(np.minimum(u, v), np.maximum(u, v))
    for rounds in range(1, 200):
        new = step(*step(*edges, "large"), "small")
        if len(new[0]) == len(edges[0]) and (new[0] == edges[0]).all() and (new[1] == edges[1]).all():
            return edges, rounds
        edges = new
    raise AssertionError("no fixpoint")


@pytest.mark.parametrize("seed", range(6))
def test_star_steps_components_union_find_agree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 3000))
    m = int(rng.integers(1, 2 * n))
    u, v = rng.integers(0, n, m) * 7 + 3, rng.integers(0, n, m) * 7 + 3  # sparse ids, self-loops included
    expected = union_find(u, v)
    nodes, roots = dn.components(u, v)
    assert dict(zip(nodes.tolist(), roots.tolist())) == expected
    for n_partitions in (1, 4):
        (ru, rv), rounds = star_fixpoint(u, v, n_partitions)
        assert len(np.unique(rv)) == len(rv) and not np.isin(ru, rv).any()  # a forest of stars
        star = {**{x: x for x in ru.tolist()}, **dict(zip(rv.tolist(), ru.tolist()))}
        assert star == {x: r for x, r in expected.items() if x != r or x in star}
        assert all(x in star for x, r in expected.items() if x != r)


def test_survivors():
    nodes = np.array([0, 1, 2, 3, 4, 5])
    roots = np.array([0, 0, 0, 3, 3, 5])
    assert dn.survivors(nodes, roots).tolist() == [0, 0, 0, 3, 3, 5]
    score = np.array([1.0, 5.0, 5.0, 2.0, 1.0, 0.0])  # tie -> smallest node
    assert dn.survivors(nodes, roots, score).tolist() == [1, 1, 1, 3, 3, 5]


# --- (5) all phases in one process ------------------------------------------------------

def test_near_dedup_in_process_recall_and_false_merges(real_texts):
    rates = [0.0, 0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3]
    docs, pairs = make_dup_corpus(real_texts, 2000, rates, seed=0)
    cfg = dn.NearDedupConfig()
    bands, rows = cfg.banding()
    sigs = dn.signatures(docs.column("text").combine_chunks(), cfg.num_perm, cfg.ngram, cfg.seed)
    nodes = np.arange(len(sigs), dtype=np.int64)
    keys = dn.band_keys(sigs, bands, rows)
    u, v = dn.bucket_edges(keys.ravel(), np.repeat(nodes, bands))
    # partitioned by key, the union of the partitions' edges is the same
    flat, owner = keys.ravel(), np.repeat(nodes, bands)
    parts = [dn.bucket_edges(flat[flat % 5 == p], owner[flat % 5 == p]) for p in range(5)]
    pu, pv = dn.unique_edges(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    assert (pu == u).all() and (pv == v).all()
    keep = dn.estimated_jaccard(sigs[u], sigs[v]) >= cfg.verify_cutoff()
    comp_nodes, comp_roots = dn.components(u[keep], v[keep])
    root = nodes.copy()
    root[comp_nodes] = comp_roots
    assert (root == dn.clusters(sigs, cfg)).all()
    (su, sv), _ = star_fixpoint(u[keep], v[keep], 3)
    star_root = nodes.copy()
    star_root[sv] = su
    assert (star_root == root).all()

    report = pair_report(pairs, dict(zip(docs.column("id").to_pylist(), root.tolist())))
    hi, lo = report["bands"]["[0.85,1.00]"], report["bands"]["[0.00,0.50)"]
    assert hi["pairs"] > 300 and lo["pairs"] > 1000
    assert report["recall"] >= 0.99
    assert report["merged_le_0.5"] <= 0.005
    # datasketch's parameter choice, no verification: fewer pairs caught
    plain = dn.clusters(sigs, dn.NearDedupConfig(verify="none"))
    plain_report = pair_report(pairs, dict(zip(docs.column("id").to_pylist(), plain.tolist())))
    assert plain_report["recall"] < report["recall"]


def test_pair_report_by_band():
    pairs = pa.table({"id_a": ["a", "a", "c", "e", "g"], "id_b": ["b", "x", "d", "f", "h"],
                      "kind": ["copy"] * 5, "edit_rate": [0.0] * 5, "jaccard": [1.0, 0.9, 0.6, 0.3, 0.86]})
    report = pair_report(pairs, {"a": 0, "b": 0, "c": 1, "d": 1, "e": 2, "f": 3, "g": 4, "h": 5})
    assert report["bands"]["[0.85,1.00]"] == {"pairs": 3, "merged": 1, "merged_frac": 1 / 3}  # "x" unknown: singleton
    assert report["bands"]["[0.50,0.70)"]["merged"] == 1 and report["bands"]["[0.70,0.85)"]["pairs"] == 0
    assert report["recall"] == 1 / 3 and report["precision"] == 1 / 2 and report["merged_le_0.5"] == 0.0


def test_stage_bad_input_has_defined_outcomes():
    """Empty, whitespace-only, punctuation-only and one-word texts are never near
    duplicates of each other; two copies of a huge text cluster, the first survives."""
    from datacurate.stages.dedup_near import NearDedup

    huge = " ".join(f"word{i % 5000} item{i % 7919}" for i in range(400_000))  # ~5 MB
    texts = ["", "   ", "!!! ???", "!!! ???", "one", "one", huge, huge + " tail"]
    out = NearDedup()(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}))
    reasons = out["reject_reason"].to_pylist()
    assert reasons[:4] == [None] * 4  # no words: never duplicates
    assert reasons[4:6] == [None, "near_dedup/dup_of:d4"]  # one word = one shingle: an exact match
    assert reasons[6:] == [None, "near_dedup/dup_of:d6"]
    assert out["cluster_id"].to_pylist()[6:] == ["d6", "d6"]
