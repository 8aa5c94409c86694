"""RHO-1: exactly ceil(ratio x tokens) tokens get gradient; the score-tokens sidecar
equals an on-the-fly reference forward pass; a sidecar of another reference is refused."""

import json
import math
import os

import numpy as np
import pytest
import torch

from datacurate.train import checkpoint
from datacurate.train.data import ShardDataset, ShardError
from datacurate.train.loop import train
from datacurate.train.model import GPT, GPTShape
from datacurate.train.rho1 import SIDE_DTYPE, score_tokens, select_loss
from datacurate.configs.train import load_train_config
from tests.train.synth import markov_set


@pytest.mark.parametrize("ratio", [0.6, 0.25, 1.0, 0.013])
def test_only_the_selected_tokens_get_gradient(ratio):
    torch.manual_seed(0)
    model = GPT(GPTShape(vocab_size=50, max_seq_len=32, n_layer=1, n_head=2, n_embd=16))
    x = torch.randint(0, 50, (3, 17))
    losses = model(x[:, :-1], x[:, 1:])  # (3, 16)
    losses.retain_grad()
    ref = torch.rand(3, 16) * 4
    loss, k = select_loss(losses, ref, ratio)
    loss.backward()
    assert k == math.ceil(ratio * 48)
    got = losses.grad != 0
    assert int(got.sum()) == k  # exactly k tokens back-propagate ...
    excess = (losses.detach() - ref).reshape(-1)
    top = torch.zeros(48, dtype=torch.bool)
    top[torch.topk(excess, k).indices] = True
    assert torch.equal(got.reshape(-1), top)  # ... and they are the top-k by excess loss
    assert torch.allclose(losses.grad[got], torch.full((k,), 1.0 / k))
    assert torch.isclose(loss, losses.detach().reshape(-1)[top].mean())


def _base(**kw):
    raw = {"seed": 1, "threads": 1, "eval_every": 0, "checkpoint_every": 0, "steps": 12,
           "data": {"tokens_per_step": 1024, "curriculum": "uniform", "eval_fraction": 0.0}}
    raw.update(kw)
    return raw


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("rho1")
    shards = markov_set(root / "shards", vocab=40)
    train(load_train_config(_base(), shards=shards, output=str(root / "ref")))
    train(load_train_config(_base(seed=9), shards=shards, output=str(root / "ref2")))
    return root, shards


def test_sidecar_equals_the_reference_forward_pass(setup):
    root, shards = setup
    ref = str(root / "ref" / "checkpoints" / "latest")
    entry = score_tokens(ref, shards, "cpu", log=lambda m: None)
    ds = ShardDataset(shards)
    assert ds.manifest["rho1_reference"]["weights_sha256"] == entry["weights_sha256"]
    model, _ = checkpoint.load_model(ref, "cpu", ds.tokenizer["sha256"])
    n = 0
    for b in ds.manifest["buckets"].values():
        L = b["seq_len"]
        for f in b["files"]:
            side = np.fromfile(os.path.join(shards, entry["files"][f["tokens"]]), dtype=SIDE_DTYPE).reshape(f["n"], L - 1)
            toks = torch.from_numpy(np.fromfile(os.path.join(shards, f["tokens"]), dtype="<u2")
                                    .reshape(f["n"], L).astype(np.int64))
            with torch.no_grad():
                live = model(toks[:, :-1], toks[:, 1:]).numpy()
            np.testing.assert_allclose(side.astype(np.float32), live, rtol=2e-3, atol=2e-3)  # float16 rounding
            n += side.size
    assert n == sum(b["sequences"] * (b["seq_len"] - 1) for b in ds.manifest["buckets"].values())
    # training reads the sidecar and follows the on-the-fly run
    rho = {"reference": ref, "ratio": 0.6}
    a = train(load_train_config(_base(rho1={**rho, "sidecar": "require"}), shards=shards, output=str(root / "a")))
    b = train(load_train_config(_base(rho1={**rho, "sidecar": "off"}), shards=shards, output=str(root / "b")))
    la = [json.loads(x)["loss"] for x in open(root / "a" / "metrics.jsonl") if '"loss"' in x]
    lb = [json.loads(x)["loss"] for x in open(root / "b" / "metrics.jsonl") if '"loss"' in x]
    np.testing.assert_allclose(la, lb, rtol=2e-3)
    assert a["eval_loss"] is None  # eval_fraction 0: nothing held out, no eval
    # a sidecar scored by another reference is refused
    other = str(root / "ref2" / "checkpoints" / "latest")
    with pytest.raises(ShardError, match="another reference"):
        train(load_train_config(_base(rho1={"reference": other, "sidecar": "require"}), shards=shards,
                                output=str(root / "c")))


def test_reference_of_another_tokenizer_is_refused(setup, tmp_path):
    root, _ = setup
    other = markov_set(tmp_path / "other", vocab=40)
    man = json.load(open(os.path.join(other, "manifest.json")))
    man["tokenizer"]["sha256"] = "another-tokenizer"
    json.dump(man, open(os.path.join(other, "manifest.json"), "w"))
    with pytest.raises(checkpoint.CheckpointError, match="another tokenizer"):
        train(load_train_config(_base(rho1={"reference": str(root / "ref")}), shards=other, output=str(tmp_path / "o")))
    with pytest.raises(checkpoint.CheckpointError, match="tokenizer"):
        score_tokens(str(root / "ref"), other, "cpu")
