"""The step sampler: grow_p2 odds, domain weights, eval split, rank shares, purity."""

import json

import numpy as np
import pytest

from datacurate.train.data import ShardDataset, StepSampler, grow_p2_cycle, load_domain_weights
from datacurate.train.evaluate import eval_tokens
from datacurate.configs.train import DataConfig
from tests.train.synth import markov_set


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return ShardDataset(markov_set(tmp_path_factory.mktemp("synth"), vocab=32))


def test_grow_p2_first_pick_follows_the_odds():
    """Each cycle's first bucket is drawn with odds quota_i * 2^(n-1-i): a chi-square test
    over 3,000 cycles accepts those odds and rejects the plain quota odds (no length bias)."""
    p, n_steps = np.array([0.4, 0.3, 0.2, 0.1]), 20
    quota = p * n_steps  # 8, 6, 4, 2
    first = np.array([grow_p2_cycle(p, n_steps, seed, 0)[0] for seed in range(3000)])
    observed = np.bincount(first, minlength=4)

    def chi2(odds):
        expected = odds / odds.sum() * len(first)
        return float(((observed - expected) ** 2 / expected).sum())

    assert chi2(quota * 2.0 ** np.arange(3, -1, -1)) < 16.27  # df 3, p = 0.001
    assert chi2(quota) > 100 and chi2(quota * 2.0 ** np.arange(4)) > 100


def test_grow_p2_cycle_holds_each_quota_and_goes_short_to_long():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    positions = {i: [] for i in range(4)}
    for seed in range(200):
        sched = grow_p2_cycle(p, 30, seed, 1)
        assert np.bincount(sched, minlength=4).tolist() == [3, 6, 9, 12]
        for i in range(4):
            positions[i] += np.flatnonzero(sched == i).tolist()
    means = [np.mean(positions[i]) for i in range(4)]
    assert means == sorted(means) and means[-1] - means[0] > 5


def test_sampler_grow_p2_over_cycles(ds):
    cfg = DataConfig(tokens_per_step=1024, curriculum="grow_p2", cycles=4)
    s = StepSampler(ds, cfg, steps=80, seed=0)
    for c in range(4):
        cyc = s.buckets[c * 20:(c + 1) * 20]
        assert np.abs(np.bincount(cyc, minlength=3) - s.p_bucket * 20).max() < 1  # the cycle's quota
        assert np.mean(np.flatnonzero(cyc == 0)) < np.mean(np.flatnonzero(cyc == 2))  # short early, long late


def test_domain_shares_match_the_weights(ds, tmp_path):
    w = {"a": 0.6, "b": 0.3, "c": 0.1}
    path = tmp_path / "domain_weights.json"
    path.write_text(json.dumps(w))  # the flat file DoReMi writes
    shares = []
    for seed in range(8):
        s = StepSampler(ds, DataConfig(tokens_per_step=1024, curriculum="uniform", domain_weights=str(path)),
                        steps=300, seed=seed)
        tok = np.zeros(3)
        for step in range(300):
            b = s.batch(step)
            np.add.at(tok, b.domains, b.seq_len)
            assert len(b.index) * b.seq_len == 1024
        shares.append(tok / tok.sum())
    shares = np.array(shares)
    mean, se = shares.mean(0), shares.std(0, ddof=1) / np.sqrt(len(shares))
    assert np.all(np.abs(mean - [0.6, 0.3, 0.1]) < 4 * se + 1e-3), (mean, se)
    natural = StepSampler(ds, DataConfig(tokens_per_step=1024, curriculum="uniform"), steps=10, seed=0)
    assert abs(natural.weights.sum() - 1) < 1e-12 and np.all(natural.weights > 0.2)


def test_eval_split_never_trained_and_batches_are_pure(ds):
    cfg = DataConfig(tokens_per_step=1024, eval_fraction=0.1)
    s = StepSampler(ds, cfg, steps=200, seed=4)
    drawn = {L: set() for L in ds.seq_lens}
    for step in range(200):
        b = s.batch(step)
        drawn[b.seq_len] |= set(b.index.tolist())
        assert np.array_equal(ds.sequences(b.seq_len, b.index)[1], b.domains)
    for L in ds.seq_lens:
        assert not drawn[L] & set(s.eval_index[L].tolist())
    n_eval = sum(len(v) for v in s.eval_index.values())
    assert abs(n_eval - 0.1 * len(ds)) <= 3  # a seeded fraction per domain
    held = {d: 0 for d in ds.domains}  # the held-out size behind each eval loss: L - 1 tokens per sequence
    for L in ds.seq_lens:
        for d in ds.sequences(L, s.eval_index[L])[1]:
            held[ds.domains[d]] += L - 1
    assert eval_tokens(ds, s.eval_index) == {"all": sum(held.values()), **{d: n for d, n in held.items() if n}}
    again = StepSampler(ds, cfg, steps=200, seed=4)
    late = [again.batch(x) for x in (150, 3, 77)]  # any order, fresh object: same batches
    for x, b in zip((150, 3, 77), late):
        assert np.array_equal(b.index, s.batch(x).index)
    other = StepSampler(ds, cfg, steps=200, seed=5)
    assert not all(np.array_equal(other.batch(x).index, s.batch(x).index) for x in range(10))
    # the eval split depends on split_seed only: another training seed is evaluated alike
    assert all(np.array_equal(other.eval_index[L], s.eval_index[L]) for L in ds.seq_lens)
    moved = StepSampler(ds, DataConfig(tokens_per_step=1024, eval_fraction=0.1, split_seed=1), steps=10, seed=4)
    assert not all(np.array_equal(moved.eval_index[L], s.eval_index[L]) for L in ds.seq_lens)


def test_ranks_split_the_global_batch(ds):
    cfg = DataConfig(tokens_per_step=1024)
    whole = StepSampler(ds, cfg, steps=30, seed=1)
    r0, r1 = (StepSampler(ds, cfg, steps=30, seed=1, rank=r, world=2) for r in (0, 1))
    for step in range(30):
        assert np.array_equal(np.concatenate([r0.batch(step).index, r1.batch(step).index]), whole.batch(step).index)


@pytest.mark.parametrize("spec, message", [
    ({"z": 1.0}, "unknown domain 'z'"),
    ({"a": 0.0, "b": 0.0}, "all domain weights are zero"),
    ({"a": -1.0, "b": 2.0}, "non-negative"),
    ({}, "non-empty mapping"),
])
def test_bad_domain_weights(spec, message):
    from datacurate.train.data import ShardError

    with pytest.raises(ShardError, match=message):
        load_domain_weights(spec, ["a", "b", "c"])
