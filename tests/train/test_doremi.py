"""DoReMi: the structured domain wins, the update rule by hand, 2 Ray Train workers give
the 1-worker trajectory, the weights file drives train and decompose, bad input."""

import json
import os

import numpy as np
import pytest
import torch

from datacurate.cli import main
from datacurate.train.data import ShardDataset, StepSampler
from datacurate.train.doremi import domain_excess, run_doremi, update_weights
from datacurate.train.loop import train
from datacurate.configs.train import DataConfig, DoremiRunConfig, load_train_config
from tests.train.synth import markov, markov_set, write_set

V = 64


def three_domains(root) -> str:
    """random: uniform tokens of the upper half of the vocabulary (nothing to learn);
    pattern: one 4-token pattern repeated (learned at once); structured: a Markov chain
    over the lower half (learned over many steps)."""
    rng = np.random.default_rng(0)
    buckets = {}
    for L, n in ((64, 800), (128, 400)):
        rand = rng.integers(V // 2, V, size=(n, L))
        pattern = np.tile(np.array([5, 9, 2, 7]), L // 4)[None].repeat(n, 0)
        structured = markov(n, L, V // 2, rng, branch=2)
        buckets[L] = (np.concatenate([rand, pattern, structured]), np.repeat([0, 1, 2], n))
    return write_set(root, buckets, ["random", "pattern", "structured"], V)


def cfg_of(shards, out, **doremi):
    raw = {"seed": 0, "threads": 1, "eval_every": 0, "checkpoint_every": 0,
           "data": {"tokens_per_step": 1024, "curriculum": "uniform", "eval_fraction": 0.0},
           "doremi": {"reference_steps": 40, "proxy_steps": 80, **doremi}}
    return load_train_config(raw, cls=DoremiRunConfig, shards=str(shards), output=str(out))


def local(c, resume, objective):
    return train(c, resume=resume, objective=objective, log=lambda m: None)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("doremi")
    shards = three_domains(root / "shards")
    weights = run_doremi(cfg_of(shards, root / "out"), local, log=lambda m: None)
    return root, shards, weights


def test_the_structured_domain_gets_the_weight(synthetic):
    root, _, w = synthetic
    assert abs(sum(w.values()) - 1) < 1e-9 and set(w) == {"random", "pattern", "structured"}
    assert w["structured"] > 1 / 3 and w["structured"] > w["random"] and w["structured"] > w["pattern"], w
    steps = [json.loads(x) for x in open(root / "out" / "weights.jsonl")]
    assert [s["step"] for s in steps] == list(range(1, 81))
    avg = {d: np.mean([s["alpha"][d] for s in steps]) for d in w}
    assert all(abs(avg[d] - w[d]) < 1e-9 for d in w)  # the output is the average over all proxy steps
    assert json.load(open(root / "out" / "domain_weights.json")) == w
    assert (root / "out" / "reference" / "checkpoints" / "latest").exists()
    assert (root / "out" / "proxy" / "metrics.jsonl").exists()


def test_update_rule_by_hand():
    """Per-token clip, per-domain mean, exponentiated step, smoothing: a flipped sign or a
    missing clip gives other numbers."""
    losses = torch.tensor([[3.0, 1.0], [2.0, 2.0], [1.0, 1.0]])  # 3 sequences of 2 tokens
    ref = torch.tensor([[2.0, 2.0], [1.5, 2.5], [0.0, 0.0]])
    dom = torch.tensor([0, 0, 1])
    sums, count = domain_excess(losses, ref, dom, 3)
    assert sums.tolist() == [1.5, 2.0, 0.0] and count.tolist() == [4.0, 2.0, 0.0]  # clipped: 1 + 0 + 0.5 + 0
    alpha = torch.full((3,), 1 / 3, dtype=torch.float64)
    last = torch.tensor([0.0, 0.0, 0.7], dtype=torch.float64)
    active = torch.tensor([True, True, True])
    new, excess = update_weights(alpha, last, sums, count, active, eta=2.0, c=0.1)
    assert excess.tolist() == [0.375, 1.0, 0.7]  # domain 2 is absent: keeps its last value
    raw = np.exp(2.0 * np.array([0.375, 1.0, 0.7]))
    expect = 0.9 * raw / raw.sum() + 0.1 / 3
    np.testing.assert_allclose(new.numpy(), expect, rtol=1e-12)
    # an inactive domain (no tokens in the shards) stays at 0
    new2, _ = update_weights(alpha, last, sums, count, torch.tensor([True, True, False]), eta=2.0, c=0.1)
    assert new2[2] == 0 and abs(float(new2.sum()) - 1) < 1e-12


def test_two_ray_train_workers_give_the_same_trajectory(ray_session, synthetic, tmp_path):
    from datacurate.engine.ray.train import run_train

    root, shards, _ = synthetic
    ref = str(root / "out" / "reference" / "checkpoints" / "latest")
    kw = dict(reference=ref, proxy_steps=10)
    one = run_doremi(cfg_of(shards, tmp_path / "one", **kw), local, log=lambda m: None)
    cfg2 = cfg_of(shards, tmp_path / "two", **kw)
    cfg2.workers = 2
    two = run_doremi(cfg2, lambda c, r, o: run_train(c, resume=r, objective=o), log=lambda m: None)
    a = [json.loads(x)["alpha"] for x in open(tmp_path / "one" / "weights.jsonl")]
    b = [json.loads(x)["alpha"] for x in open(tmp_path / "two" / "weights.jsonl")]
    assert len(a) == len(b) == 10
    for x, y in zip(a, b):
        np.testing.assert_allclose([x[d] for d in sorted(x)], [y[d] for d in sorted(y)], rtol=1e-4)
    np.testing.assert_allclose([one[d] for d in sorted(one)], [two[d] for d in sorted(two)], rtol=1e-4)


def test_grad_accum_2_gives_the_same_trajectory(synthetic, tmp_path):
    """Group DRO weighs a step by the excess losses of its whole batch, micro-batches or not:
    grad_accum 2 (same tokens per step) gives grad_accum 1's weights and losses, step by step."""
    root, shards, _ = synthetic
    ref = str(root / "out" / "reference" / "checkpoints" / "latest")
    runs = {}
    for accum in (1, 2):
        cfg = cfg_of(shards, tmp_path / f"accum{accum}", reference=ref, proxy_steps=12)
        cfg.optim.grad_accum = accum
        w = run_doremi(cfg, local, log=lambda m: None)
        steps = [json.loads(x) for x in open(tmp_path / f"accum{accum}" / "weights.jsonl")]
        metrics = [json.loads(x) for x in open(tmp_path / f"accum{accum}" / "proxy" / "metrics.jsonl")]
        runs[accum] = w, steps, [m["loss"] for m in metrics if "loss" in m]
    (w1, s1, l1), (w2, s2, l2) = runs[1], runs[2]
    assert [s["step"] for s in s1] == [s["step"] for s in s2] == list(range(1, 13))
    for a, b in zip(s1, s2):
        for key in ("alpha", "excess"):
            np.testing.assert_allclose([a[key][d] for d in sorted(a[key])], [b[key][d] for d in sorted(b[key])],
                                       rtol=1e-5, atol=1e-9)
    assert max(abs(a["alpha"]["structured"] - s1[0]["alpha"]["structured"]) for a in s1) > 1e-3  # the weights move
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    np.testing.assert_allclose([w1[d] for d in sorted(w1)], [w2[d] for d in sorted(w2)], rtol=1e-5)


def test_weights_file_drives_train_and_decompose(synthetic):
    from datacurate.stages.mixture import load_weights

    root, shards, w = synthetic
    path = str(root / "out" / "domain_weights.json")
    s = StepSampler(ShardDataset(shards), DataConfig(tokens_per_step=1024, curriculum="uniform",
                                                     domain_weights=path), steps=400, seed=0)
    tok = np.zeros(3)
    for step in range(400):
        b = s.batch(step)
        np.add.at(tok, b.domains, b.seq_len)
    share = tok / tok.sum()
    want = np.array([w["random"], w["pattern"], w["structured"]])
    assert np.all(np.abs(share - want) < 0.03), (share, want)
    weights, source = load_weights(None, path)
    assert source == path and weights == pytest.approx(w)


def test_bad_input(synthetic, tmp_path, capsys):
    root, shards, _ = synthetic

    def err(*argv):
        assert main(["doremi", "--shards", shards, "--output", str(tmp_path / "o"), *argv]) == 2
        e = capsys.readouterr().err.strip()
        assert e.startswith("datacurate: error:") and "\n" not in e
        return e

    one = markov_set(tmp_path / "one", vocab=16, per_bucket=((64, 20),), domains=("only",))
    assert main(["doremi", "--shards", one, "--output", str(tmp_path / "o")]) == 2
    assert "two or more" in capsys.readouterr().err
    assert "unknown domain 'nope'" in err("--set", "doremi.reference_weights={nope: 1}")
    assert "eta must be positive" in err("--set", "doremi.eta=0")
    assert "smoothing" in err("--set", "doremi.smoothing=1")
    ref = str(root / "out" / "reference" / "checkpoints" / "latest")
    assert "shape" in err("--set", f"doremi.reference={ref}", "--set", "model.n_layer=3")
    assert "did you mean 'proxy_steps'" in err("--set", "doremi.proxy_step=3")
    assert not (tmp_path / "o" / "proxy").exists()


def test_pipeline_goes_raw_to_shards_to_weights_to_model(ray_session, tmp_path):
    """A pipeline with doremi: and train: sections: the model trains on DoReMi's weights."""
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    corpus = os.path.join(os.path.dirname(__file__), "..", "..", "sample_data", "corpus")
    cfg = load_config({
        "input": [os.path.join(corpus, "news.jsonl"), os.path.join(corpus, "learned.jsonl")],
        "output": str(tmp_path / "out"), "ray": {"progress": False},
        "stages": [{"tokenize": {}}, {"decompose": {"max_log2": 9}}],
        "doremi": {"reference_steps": 4, "proxy_steps": 4, "data": {"tokens_per_step": 1024}},
        "train": {"steps": 3, "data": {"tokens_per_step": 1024}}})
    assert cfg.train.data.domain_weights == str(tmp_path / "out" / "doremi" / "domain_weights.json")
    report = run_pipeline(cfg)
    w = json.load(open(tmp_path / "out" / "doremi" / "domain_weights.json"))
    assert set(w) == {"news", "learned"} and report["doremi"] == w
    assert report["train"]["steps"] == 3
    assert json.load(open(tmp_path / "out" / "stats.json"))["doremi"] == w
    assert load_config(str(tmp_path / "out" / "config.yaml")) == cfg  # the resolved config reloads


def test_reference_losses_from_the_sidecar(synthetic, tmp_path):
    """doremi.sidecar: require reads score-tokens' losses; the weights follow the
    on-the-fly run (float16 rounding apart)."""
    import shutil

    from datacurate.train.rho1 import score_tokens

    root, shards, _ = synthetic
    ref = str(root / "out" / "reference" / "checkpoints" / "latest")
    scored = tmp_path / "shards"
    shutil.copytree(shards, scored)
    score_tokens(ref, str(scored), "cpu", log=lambda m: None)
    live = run_doremi(cfg_of(scored, tmp_path / "live", reference=ref, proxy_steps=10, sidecar="off"), local,
                      log=lambda m: None)
    side = run_doremi(cfg_of(scored, tmp_path / "side", reference=ref, proxy_steps=10, sidecar="require"), local,
                      log=lambda m: None)
    np.testing.assert_allclose([live[d] for d in sorted(live)], [side[d] for d in sorted(side)], rtol=2e-2)
    with pytest.raises(Exception, match="no reference-loss sidecar"):
        run_doremi(cfg_of(shards, tmp_path / "none", reference=ref, proxy_steps=2, sidecar="require"), local,
                   log=lambda m: None)
