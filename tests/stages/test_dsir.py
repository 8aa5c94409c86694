"""DSIR: features, importance weights, seeded Gumbel top-k, length handling, report."""

import json
import re
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.core.schema import ORD
from datacurate.stages import dsir as ds
from datacurate.text import topk
from datacurate.text import wordpunct as wp
from datacurate.text import words as wordseg
from datacurate.stages.dsir import Dsir

REPO = Path(__file__).resolve().parents[2]


def _corpus() -> list[dict]:
    rows = []
    for name in ("news", "learned", "conversational", "legal", "technical_multilingual", "web_noise"):
        with open(REPO / "sample_data" / "corpus" / f"{name}.jsonl", "rb") as f:
            rows += [orjson.loads(line) for line in f if line.strip()]
    return rows


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """Pool: six domains; target: held-out 'learned' documents (every third one)."""
    rows = _corpus()
    learned = [r for r in rows if r.get("domain") == "learned"]
    target = learned[::3]
    held = {id(r) for r in target}
    pool = [r for r in rows if id(r) not in held]
    d = tmp_path_factory.mktemp("dsir")
    with open(d / "target.jsonl", "wb") as f:
        f.writelines(orjson.dumps({"text": r["text"]}) + b"\n" for r in target)
    table = pa.table({"id": [str(r.get("id", i)) for i, r in enumerate(pool)], "text": [r["text"] for r in pool],
                      "domain": [r.get("domain", "unknown") for r in pool], ORD: np.arange(len(pool), dtype=np.int64)})
    return table, d / "target.jsonl"


def test_wordpunct_tokens_match_the_reference_regex():
    texts = ["Hello, world!! It's 3.14 -- ok_1?", "héllo—wörld 日本語のテキスト 😀😀 x", "", "   ", "a\tb\nc",
             "don't stop", "e-mail: a@b.c (x)"]
    rx = re.compile(r"\w+|[^\w\s]+")
    h, off = wp.tokenize(pa.array(texts))
    texts = wordseg.spaced(pa.array(texts)).to_pylist()  # Japanese cut into words (SudachiPy, mode A)
    assert texts[1] == "héllo—wörld 日本 語 の テキスト 😀😀 x"
    assert list(np.diff(off)) == [len(rx.findall(t.lower())) for t in texts]
    # equal tokens hash equal, different tokens differently, whatever the document
    toks = [tok for t in texts for tok in rx.findall(t.lower())]
    by_tok = {}
    for tok, x in zip(toks, h):
        by_tok.setdefault(tok, set()).add(int(x))
    assert all(len(v) == 1 for v in by_tok.values())
    assert len({next(iter(v)) for v in by_tok.values()}) == len(by_tok)


def test_features_count_unigrams_and_bigrams_within_documents():
    f = wp.features(pa.array(["a b c", "d", ""]), 1000, ngrams=2)
    assert list(f.n_tokens) == [3, 1, 0]
    assert list(np.bincount(f.doc, minlength=3)) == [3 + 2, 1, 0]  # no bigram across documents


def test_selects_the_target_domain_and_beats_random_kl(mixture):
    table, target = mixture
    st = Dsir(target={"path": [str(target)]}, num_to_sample=150, seed=1)
    out, rep = st.run_table(table)
    kept = out.filter(pc.is_null(out["reject_reason"]))
    assert kept.num_rows == 150
    share_pool = np.mean(np.asarray(table["domain"]) == "learned")
    share_sel = np.mean(np.asarray(kept["domain"]) == "learned")
    assert share_sel > 2.5 * share_pool, (share_sel, share_pool)
    assert rep["kl_reduction"] > rep["kl_reduction_random"]
    assert rep["domains"]["learned"]["fraction"] == max(d["fraction"] for d in rep["domains"].values())
    # an independent random selection of the same size (numpy's RNG, not the stage's)
    feats = wp.features(table["text"].combine_chunks(), 10_000, 2)
    tgt = wp.features(pa.array([json.loads(x)["text"] for x in open(target)]), 10_000, 2).counts(10_000)
    raw = feats.counts(10_000)
    sel = np.zeros(table.num_rows, bool)
    sel[np.flatnonzero(np.asarray(pc.is_null(out["reject_reason"])))] = True
    rnd = np.zeros(table.num_rows, bool)
    rnd[np.random.default_rng(0).choice(table.num_rows, 150, replace=False)] = True
    red_dsir = ds.kl(tgt, raw, 0) - ds.kl(tgt, feats.counts(10_000, sel), 0)
    red_rand = ds.kl(tgt, raw, 0) - ds.kl(tgt, feats.counts(10_000, rnd), 0)
    assert red_dsir > red_rand + 0.01


def test_log_weight_is_the_sum_of_bucket_log_ratios(mixture):
    table, target = mixture
    small = table.slice(0, 50)
    st = Dsir(target={"path": [str(target)]}, num_to_sample=10, laplace=1.0)
    out = st(small)
    feats = wp.features(small["text"].combine_chunks(), 10_000, 2)
    tgt = st.target_counts_from_files()
    lr = np.log((tgt + 1.0) / (tgt.sum() + 10_000)) - np.log((feats.counts(10_000) + 1.0) / (feats.counts(10_000).sum() + 10_000))
    expect = [sum(lr[b] for b in feats.bucket[feats.doc == i]) for i in range(50)]
    assert np.allclose(out["dsir_log_weight"].to_numpy(), expect)


def _k1_setup(tmp_path):
    docs = ["the cat sat on the mat today", "a dog ran in the park today", "the cat and the dog played",
            "stocks fell sharply on monday", "the cat slept while rain fell"]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"text": s}) + "\n" for s in
                         ["the cat sat", "my cat is on the mat", "cats and a cat", "the dog and the cat"]))
    return pa.table({"text": docs}), p


def test_k1_inclusion_frequencies_follow_the_weights(tmp_path):
    """Gumbel-max: with k = 1, P(select i) = w_i / sum w. Chi-square over 1,000 seeds."""
    table, target = _k1_setup(tmp_path)
    counts = np.zeros(table.num_rows)
    n = 1000
    for seed in range(n):
        out = Dsir(target={"path": [str(target)]}, num_to_sample=1, laplace=5.0, num_buckets=1000, seed=seed)(table)
        counts[np.flatnonzero(np.asarray(pc.is_null(out["reject_reason"])))] += 1
    logw = out["dsir_log_weight"].to_numpy()
    p = np.exp(logw - logw.max())
    p /= p.sum()
    assert p.min() > 0.05 and p.max() < 0.5  # weights far enough apart for the test to have power
    chi2 = float(np.sum((counts - n * p) ** 2 / (n * p)))
    assert counts.sum() == n
    assert chi2 < 18.47, (counts, n * p)  # df = 4, alpha = 0.001
    chi2_uniform = float(np.sum((counts - n / 5) ** 2 / (n / 5)))
    assert chi2_uniform > 100  # the same counts clearly reject "uniform": the test can fail


def _emulate_partitions(st: Dsir, table: pa.Table, parts: int) -> set:
    """The engine's phases over ``parts`` partitions: fit sums, partition top-k, global k-th key."""
    c = st.config
    tgt = st.target_counts_from_files()
    pieces = [table.slice(i, len(table) // parts + 1) for i in range(0, len(table), len(table) // parts + 1)]
    units = [ds.units_of(p, c.chunk_words) for p in pieces]
    feats = [ds.featurize(c, u) for u in units]
    lr = ds.log_ratio(tgt, sum(f.counts(c.num_buckets) for f in feats), c.laplace)
    eligible = sum(int((f.n_tokens >= max(c.min_length, 1)).sum()) for f in feats)
    k = ds.how_many(c.num_to_sample, eligible)
    keys = [ds.sample_keys(c, f.per_doc(lr), f.n_tokens >= max(c.min_length, 1), u.ords, u.chunk)
            for f, u in zip(feats, units)]
    cand = [(kk[i], u.ords[i], u.chunk[i]) for kk, u in zip(keys, units) for i in topk.top_k(kk, u.ords, u.chunk, k)]
    cand.sort(key=lambda x: (-x[0], x[1], x[2]))
    thr = cand[k - 1]
    chosen = set()
    for kk, u in zip(keys, units):
        chosen |= set(u.ords[ds.selected(kk, u.ords, u.chunk, thr)].tolist())
    return chosen


def test_same_seed_same_selection_whatever_the_partitioning(mixture):
    table, target = mixture
    sets = {}
    for seed in (1, 2):
        st = Dsir(target={"path": [str(target)]}, num_to_sample=0.2, seed=seed, min_length=30)
        out = st(table)
        local = set(np.asarray(table[ORD])[np.asarray(pc.is_null(out["reject_reason"]))].tolist())
        for parts in (1, 3, 8):
            assert _emulate_partitions(st, table, parts) == local
        sets[seed] = local
    assert sets[1] != sets[2]
    assert len(sets[1]) == len(sets[2])
    assert len(sets[1] & sets[2]) < len(sets[1])


def test_topk_method_keeps_the_largest_weights(mixture):
    table, target = mixture
    out = Dsir(target={"path": [str(target)]}, num_to_sample=40, method="topk")(table)
    w = out["dsir_log_weight"].to_numpy()
    kept = np.asarray(pc.is_null(out["reject_reason"]))
    assert kept.sum() == 40 and w[kept].min() >= w[~kept].max()


def test_random_method_selects_as_many_units_blind_to_the_target(mixture):
    """``method: random`` (the ablation's baseline): the same number of documents as DSIR,
    the domains about as the pool has them, whatever the target."""
    table, target = mixture
    out = Dsir(target={"path": [str(target)]}, num_to_sample=150, method="random", seed=1)(table)
    kept = np.asarray(pc.is_null(out["reject_reason"]))
    assert kept.sum() == 150
    share_pool = np.mean(np.asarray(table["domain"]) == "learned")
    assert abs(np.mean(np.asarray(table["domain"])[kept] == "learned") - share_pool) < 0.1
    other = Dsir(target={"domains": ["news"]}, num_to_sample=150, method="random", seed=1)(table)
    assert np.array_equal(kept, np.asarray(pc.is_null(other["reject_reason"])))  # the target plays no part


def test_short_documents_are_rejected_and_counted(tmp_path, mixture):
    _, target = mixture
    texts = ["", "too short here", "a " * 60, None]
    out = Dsir(target={"path": [str(target)]}, num_to_sample=1.0, min_length=50)(pa.table({"text": texts}))
    assert out["reject_reason"].to_pylist() == ["dsir/too_short", "dsir/too_short", None, "dsir/too_short"]


def test_fraction_and_domain_target(mixture):
    table, _ = mixture
    st = Dsir(target={"domains": ["legal"]}, num_to_sample=0.1, min_length=1)
    out, rep = st.run_table(table)
    n_ok = int(pc.sum(pc.greater_equal(pc.utf8_length(table["text"]), 1)).as_py())
    assert int(pc.sum(pc.is_null(out["reject_reason"]).cast(pa.int64())).as_py()) == round(0.1 * n_ok)
    assert rep["domains"]["legal"]["fraction"] > 0.9


def test_chunks_are_selected_and_documents_keep_their_selected_chunks(mixture):
    table, target = mixture
    small = table.slice(0, 200)
    st = Dsir(target={"path": [str(target)]}, num_to_sample=100, chunk_words=64, min_length=20)
    out = st(small)
    assert int(pc.sum(out["dsir_chunks"]).as_py()) == 100
    units = ds.units_of(small, 64)
    pieces = {}
    for p, c, t in zip(units.parent, units.chunk, units.texts.to_pylist()):
        pieces.setdefault(int(p), []).append(t)
    assert all("".join(pieces[i]) == small["text"][i].as_py() for i in range(small.num_rows))
    for i in range(small.num_rows):
        text, n = out["text"][i].as_py(), out["dsir_chunks"][i].as_py()
        if out["reject_reason"][i].as_py() is None:
            # the kept text is n of the document's chunks, in order, concatenated
            pos, used = 0, 0
            for piece in pieces[i]:
                if text.startswith(piece, pos):
                    pos, used = pos + len(piece), used + 1
            assert pos == len(text) and used == n >= 1
        else:
            assert n == 0 and text == small["text"][i].as_py()


@pytest.mark.parametrize("stage, err", [
    ({"num_to_sample": 10}, "exactly one of path"),
    ({"target": {"path": "x", "domains": ["a"]}}, "exactly one of path"),
    ({"target": {"domains": ["a"]}, "num_to_sample": 1.5}, "within (0, 1]"),
    ({"target": {"domains": ["a"]}, "num_bucket": 10}, "did you mean 'num_buckets'"),
])
def test_config_errors(stage, err):
    with pytest.raises(ConfigError, match=re.escape(err)):
        load_config({"input": {"path": str(REPO / "sample_data" / "corpus")}, "stages": [{"dsir": stage}]})


def test_missing_target_fails_before_any_work(tmp_path):
    from datacurate.formats.io import InputError

    with pytest.raises(InputError, match="dsir.target: input not found"):
        Dsir(target={"path": [str(tmp_path / "missing.jsonl")]})


def test_raw_fit_on_a_seeded_sample(mixture):
    table, target = mixture
    full = Dsir(target={"path": [str(target)]}, num_to_sample=150, seed=1)
    _, full_report = full.run_table(table)
    part = Dsir(target={"path": [str(target)]}, num_to_sample=150, seed=1, raw_fit_fraction=0.3)
    out, part_report = part.run_table(table)
    ratio = part_report["raw_ngrams_fitted"] / full_report["raw_ngrams_fitted"]
    assert 0.2 < ratio < 0.4
    kept = out.filter(pc.is_null(out["reject_reason"]))
    assert np.mean(np.asarray(kept["domain"]) == "learned") > 2.5 * np.mean(np.asarray(table["domain"]) == "learned")


def test_top_k_edges():
    from datacurate.text.topk import selected, top_k

    keys = np.array([1.0, 3.0, -np.inf, 3.0, 2.0])
    ords, chunks = np.arange(5), np.zeros(5, np.int32)
    assert list(top_k(keys, ords, chunks, 0)) == []
    assert list(top_k(keys, ords, chunks, 2)) == [1, 3]  # a tie is broken by input position
    assert list(top_k(keys, ords, chunks, 10)) == [1, 3, 4, 0]  # never the ineligible one
    thr = (keys[1], ords[1], chunks[1])
    assert list(np.flatnonzero(selected(keys, ords, chunks, thr))) == [1]


def test_review_edges(tmp_path):
    from datacurate import Pipeline
    from datacurate.stages.tokenize import Tokenize

    # a document holding the chunk marker is chunked in Python, the same way
    t = pa.table({"text": ["x y z w q", "a b c \ufdd0"], ORD: pa.array([0, 1], pa.int64())})
    u = ds.units_of(t, 2)
    assert [x for x in u.texts.to_pylist()] == ["x y ", "z w ", "q", "a b ", "c \ufdd0"]
    # an empty target is an error, not a selection by rarity alone
    with pytest.raises(ValueError, match="target holds no text"):
        Dsir(target={"domains": ["absent"]}, num_to_sample=1)(pa.table({"text": ["a b c"], "domain": ["x"]}))
    # a stage that rewrites text may not follow tokenize: its tokens would be stale
    with pytest.raises(ConfigError, match="must run before tokenize"):
        Pipeline([Tokenize(), Dsir(target={"domains": ["a"]}, chunk_words=2)])


@pytest.mark.parametrize("chunk_words,ngrams", [(None, 2), (128, 2), (32, 3)])
def test_phases_featurise_once_and_match_featurising_each_phase(tmp_path, mixture, chunk_words, ngrams):
    """fit saves each part's features; weigh and decide load them instead of featurising the
    part again (issue 18). Their results must be those of featurising in every phase (the
    code before): the same n-grams in the same order, so weights agree to the last bit."""
    import pyarrow.parquet as pq

    table, target = mixture
    part = table.slice(0, 400)
    part = part.set_column(part.schema.get_field_index("text"), "text",  # an empty and a null text too
                           pa.array(["", None] + part.column("text").to_pylist()[2:], pa.large_string()))
    path = str(tmp_path / "part-000.parquet")
    pq.write_table(part, path)
    c = Dsir(target={"path": [str(target)]}, chunk_words=chunk_words, ngrams=ngrams, min_length=20).config
    d = tmp_path / "scratch"
    d.mkdir()
    # the reference: featurise the part in each phase, as the phases did before
    units = ds.units_of(part, c.chunk_words)
    ref = ds.featurize(c, units)
    loaded, ords, chunk = ds._load_features(ds._save_features(ref, units, str(tmp_path / "f.npz")), ngrams)
    assert np.array_equal(loaded.doc, ref.doc) and np.array_equal(loaded.bucket, ref.bucket)
    assert np.array_equal(loaded.n_tokens, ref.n_tokens) and np.array_equal(ords, units.ords)

    fit = ds._phase_fit(path, c, str(d))
    assert np.array_equal(np.load(fit["raw"]), ref.counts(c.num_buckets))
    lr = ds.log_ratio(Dsir(c).target_counts_from_files(), np.load(fit["raw"]), c.laplace)
    lr_path = ds._save(lr, str(d / "lr.npy"))
    k = fit["eligible"] // 2
    weighed = ds._phase_weigh(path, c, lr_path, str(d))
    w = pq.read_table(str(d / "part-000.weights.parquet"))
    eligible = ref.n_tokens >= c.min_length
    ref_logw = ref.per_doc(lr)
    ref_keys = ds.sample_keys(c, ref_logw, eligible, units.ords, units.chunk)
    assert np.array_equal(w["logw"].to_numpy(), ref_logw) and np.array_equal(w["key"].to_numpy(), ref_keys)
    ok = np.isfinite(ref_keys)
    assert np.array_equal(np.load(weighed["counts"]),
                          topk.histogram(topk.rank_words(ref_keys[ok], units.ords[ok], units.chunk[ok]), []))

    top = topk.top_k(ref_keys, units.ords, units.chunk, k)
    thr = [ref_keys[top[-1]], int(units.ords[top[-1]]), int(units.chunk[top[-1]])]
    out = tmp_path / "decisions"
    out.mkdir()
    res = ds._phase_decide(path, c, thr, 0.3, str(d), str(out), "zstd")
    chosen = ds.selected(ref_keys, units.ords, units.chunk, tuple(thr))
    rand = eligible & (ds.uniform(c.seed, units.ords, units.chunk, salt=1) < 0.3)
    old = ds.featurize(c, units, chosen | rand)  # what decide featurised before
    assert res["n"] == int(chosen.sum()) == k
    assert np.array_equal(np.load(res["sel"]), old.counts(c.num_buckets, chosen))
    assert np.array_equal(np.load(res["rand"]), old.counts(c.num_buckets, rand))
    assert pq.read_table(str(out / "part-000.parquet")).equals(
        ds.decisions(c, part, units, ref_logw, eligible, chosen))


# ----------------------------------------------------------------------------- distributed cut-off
def _brute_kth(keys, ords, chunks, k):
    ok = np.isfinite(keys)
    i = np.flatnonzero(ok)[topk.order(keys[ok], ords[ok], chunks[ok])[k - 1]]
    return (float(keys[i]), int(ords[i]), int(chunks[i]))


def _old_kth(parts, k):
    """What the cut-off did before: each part's top-k candidates, sorted together, the k-th."""
    cand = [(kk[i], o[i], c[i]) for kk, o, c in parts for i in topk.top_k(kk, o, c, k)]
    cand.sort(key=lambda x: (-x[0], x[1], x[2]))
    key, o, c = cand[k - 1]
    return (float(key), int(o), int(c))


def _radix_kth(parts, k, limit):
    words = [topk.rank_words(kk[np.isfinite(kk)], o[np.isfinite(kk)], c[np.isfinite(kk)]) for kk, o, c in parts]
    fetched = []

    def fetch(prefix):
        fetched.append(sum(int(topk.matching(w, prefix).sum()) for w in words))
        rows = [(kk[np.isfinite(kk)][m], o[np.isfinite(kk)][m], c[np.isfinite(kk)][m])
                for (kk, o, c), m in ((p, topk.matching(w, prefix)) for p, w in zip(parts, words))]
        return tuple(np.concatenate(x) for x in zip(*rows))

    got = topk.kth_unit(k, sum(topk.histogram(w, []) for w in words),
                        lambda prefix: sum(topk.histogram(w, prefix) for w in words), fetch, limit)
    assert len(fetched) == 1 and fetched[0] <= max(limit, 1)  # never more than `limit` rows in one place
    return got


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_distributed_cutoff_equals_a_full_sort_with_ties(seed):
    """The radix select finds the same k-th unit as a full sort and as the old candidate
    sort, with heavy key ties (broken by position, then chunk), -0.0 beside 0.0, negative
    and huge keys, ineligible (-inf) units, whatever the partitioning and the fetch limit."""
    rng = np.random.default_rng(seed)
    n = 5000
    pool = np.array([0.0, -0.0, -1.5, 2.25, 1e300, -1e-300, 7.0, -np.inf])
    keys = np.where(rng.random(n) < 0.5, rng.choice(pool, n), rng.normal(0, 50, n))
    ords = rng.permutation(n // 2).repeat(2)[:n].astype(np.int64)  # two chunks per document
    chunks = (np.arange(n) % 2).astype(np.int32)
    eligible = int(np.isfinite(keys).sum())
    cuts = np.sort(rng.choice(np.arange(1, n), rng.integers(1, 9), replace=False))
    parts = [(keys[a:b], ords[a:b], chunks[a:b]) for a, b in zip([0, *cuts], [*cuts, n])]
    for k in (1, 2, eligible // 3, eligible // 2, eligible - 1, eligible):
        want = _brute_kth(keys, ords, chunks, k)
        assert _old_kth(parts, k) == want
        for limit in (1, 7, 1 << 17):
            assert _radix_kth(parts, k, limit) == want, (k, limit)
    with pytest.raises(RuntimeError, match="eligible units"):
        _radix_kth(parts, eligible + 1, 10)


def test_stage_selection_is_the_same_with_the_smallest_cutoff_bins(mixture, monkeypatch):
    """Through the stage's phases: one cut-off row per fetch (many refinement rounds) selects
    exactly what the brute-force selection does."""
    table, target = mixture
    st = Dsir(target={"path": [str(target)]}, num_to_sample=0.3, seed=4, min_length=30, chunk_words=64)
    want = _emulate_partitions(st, table, 1)
    monkeypatch.setattr(ds, "CUTOFF_ROWS", 1)
    out = st(table)
    assert set(np.asarray(table[ORD])[np.asarray(pc.is_null(out["reject_reason"]))].tolist()) == want
