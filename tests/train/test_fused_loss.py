"""The fused (chunked) linear + cross-entropy head: the per-token losses and both gradients of
``F.cross_entropy`` on the full logits, whatever the chunking and the per-token weights; and
the training loop's plain, RHO-1 and DoReMi runs give the same curves with it as without."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from datacurate.train import fused_loss
from datacurate.train.doremi import run_doremi
from datacurate.train.fused_loss import ChunkedLinearCrossEntropy, chunk_rows, resolve, token_losses
from datacurate.train.loop import train
from datacurate.train.model import GPT, GPTShape
from datacurate.configs.train import DoremiRunConfig, load_train_config
from tests.train.synth import markov_set


def _problem(n=300, c=32, v=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, c, generator=g).requires_grad_()
    w = (torch.randn(v, c, generator=g) * 0.3).requires_grad_()
    y = torch.randint(0, v, (n,), generator=g)
    return h, w, y


def _grads(fn, h, w, y, weights):
    h.grad = w.grad = None
    losses = fn(h, w, y)
    (losses * weights).sum().backward()
    return losses.detach(), h.grad.clone(), w.grad.clone()


def _plain(h, w, y):
    return F.cross_entropy(F.linear(h, w), y, reduction="none")  # the full (N, V) logits


@pytest.mark.parametrize("rows", [1, 7, 64, 300, 1024])
def test_chunked_equals_cross_entropy_on_full_logits(rows):
    """Losses, d/dh and d/dw of sum(weights * losses), with RHO-1-like weights (zero for
    unselected tokens) and DoReMi-like ones (a weight per domain); chunks that do not divide
    the tokens and one chunk larger than all of them."""
    h, w, y = _problem()
    sel = (torch.rand(300, generator=torch.Generator().manual_seed(1)) < 0.6).float() / 180  # RHO-1: 1/k on k tokens
    dom = torch.tensor([0.5, 2.0, 0.1])[torch.arange(300) % 3]  # DoReMi: alpha_d / count_d
    for weights in (sel, dom, torch.full((300,), 1 / 300)):
        want = _grads(_plain, h, w, y, weights)
        got = _grads(lambda a, b, c: ChunkedLinearCrossEntropy.apply(a, b, c, rows), h, w, y, weights)
        for a, b in zip(want, got):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert got[0].dtype == torch.float32 and float(got[1].abs().sum()) > 0


def test_bf16_autocast_matches_the_plain_head_within_bf16():
    """Under autocast the fused head multiplies bf16 operands as F.linear does, softmax in fp32."""
    h, w, y = _problem(n=256, c=64, v=2048)
    weights = torch.full((256,), 1 / 256)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = _grads(lambda a, b, c: token_losses(a, b, c, "plain"), h, w, y, weights)
        got = _grads(lambda a, b, c: token_losses(a, b, c, "chunked"), h, w, y, weights)
    torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)  # same bf16 logits, fp32 softmax
    for a, b in zip(want[1:], got[1:]):  # d/dw: chunks summed in fp32 vs one bf16 product
        torch.testing.assert_close(b, a, rtol=2e-2, atol=2e-2 * float(a.abs().max()))


def test_chunk_budget_and_kinds(monkeypatch):
    assert chunk_rows(65536, 50304, 768) == 1024  # logits of a chunk about the size of the hidden states
    assert chunk_rows(4096, 50304, 128) == 128  # ... but at least 4M logits
    assert chunk_rows(1000, 96, 128) == 1000 and chunk_rows(5, 50304, 768) == 5
    assert resolve("auto", "cpu") == "plain" and resolve("plain", "cuda") == "plain"
    assert resolve("fused", "cpu") == "chunked"
    monkeypatch.setattr(fused_loss, "liger_available", lambda: False)
    assert resolve("fused", "cuda") == "chunked"  # no [gpu] extra: our torch head
    monkeypatch.setattr(fused_loss, "liger_available", lambda: True)
    assert resolve("fused", "cuda") == "liger" and resolve("fused", "cpu") == "chunked"
    assert resolve("auto", "cuda") == ("liger" if "cuda" in fused_loss.FUSED_BY_DEFAULT else "plain")
    with pytest.raises(ValueError, match="loss must be one of"):
        resolve("fast", "cpu")


def test_the_model_gives_the_same_losses_and_gradients():
    shape = GPTShape(vocab_size=700, max_seq_len=64, n_layer=2, n_head=2, n_embd=32)
    torch.manual_seed(0)
    plain = GPT(shape)
    fused = GPT(shape, loss="chunked")
    fused.load_state_dict(plain.state_dict())
    x = torch.randint(0, 700, (4, 49))
    out = {}
    for name, m in (("plain", plain), ("fused", fused)):
        losses = m(x[:, :-1], x[:, 1:])  # (4, 48)
        (losses * torch.linspace(0, 1, 48)).mean().backward()
        out[name] = losses.detach(), {k: p.grad for k, p in m.named_parameters()}
    torch.testing.assert_close(out["fused"][0], out["plain"][0], rtol=1e-5, atol=1e-6)
    for k, g in out["plain"][1].items():
        torch.testing.assert_close(out["fused"][1][k], g, rtol=1e-4, atol=1e-6, msg=k)


BASE = {"seed": 2, "threads": 1, "eval_every": 0, "checkpoint_every": 0, "log_every": 1, "steps": 6,
        "data": {"tokens_per_step": 1024, "curriculum": "uniform", "eval_fraction": 0.05}}


def _run(shards, out, cls=None, **over):
    raw = {**json.loads(json.dumps(BASE)), **over}
    return load_train_config(raw, cls=cls, shards=str(shards), output=str(out)) if cls else \
        load_train_config(raw, shards=str(shards), output=str(out))


def _curve(out):
    return [r["loss"] for r in map(json.loads, open(out / "metrics.jsonl")) if "loss" in r]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A 700-token vocabulary over the tiny model's 128 wide: the head runs in 8 chunks (see _spy)."""
    root = tmp_path_factory.mktemp("fused")
    shards = markov_set(root / "shards", vocab=700)
    train(_run(shards, root / "ref", seed=7, steps=8), log=lambda m: None)
    return root, shards, str(root / "ref" / "checkpoints" / "latest")


def _spy(monkeypatch) -> dict:
    """Counts of the chunked head's calls, with and without autograd; chunks of the hidden
    states' size (no 4M-logit floor), so the 1,024-token steps run in 8 chunks."""
    monkeypatch.setattr(fused_loss, "MIN_CHUNK_ELEMENTS", 0)
    calls = {True: 0, False: 0}
    apply = ChunkedLinearCrossEntropy.apply

    def spy(*a):
        calls[torch.is_grad_enabled()] += 1
        return apply(*a)

    monkeypatch.setattr(ChunkedLinearCrossEntropy, "apply", spy)
    return calls


@pytest.mark.parametrize("objective", ["plain", "rho1"])
def test_the_loop_gives_the_same_curve_fused_or_not(runs, objective, monkeypatch):
    """Plain and RHO-1 (a frozen reference forward pass every step, through the same head):
    the fused head's losses, eval and weights are the plain head's within fp32 rounding."""
    root, shards, ref = runs
    extra = {"rho1": {"reference": ref, "ratio": 0.6, "sidecar": "off"}} if objective == "rho1" else {}
    calls = _spy(monkeypatch)
    final, logs = {}, []
    for loss in ("plain", "fused"):
        final[loss] = train(_run(shards, root / f"{objective}-{loss}", loss=loss, **extra), log=logs.append)
        if loss == "plain":
            assert calls == {True: 0, False: 0}
    heads = [m.rsplit("loss head ", 1)[1] for m in logs if "loss head" in m]
    assert heads == ["plain", "chunked"], logs
    # the trained model every step; the reference every step (RHO-1) and the eval without autograd
    assert calls[True] == 6 and calls[False] == (6 if objective == "rho1" else 0) + 4, calls  # 4 eval batches
    a, b = _curve(root / f"{objective}-plain"), _curve(root / f"{objective}-fused")
    assert len(a) == len(b) == 6 and a[-1] < a[0]
    np.testing.assert_allclose(b, a, rtol=2e-5)
    for k, v in final["plain"]["eval_loss"].items():
        np.testing.assert_allclose(final["fused"]["eval_loss"][k], v, rtol=2e-5)
    wa = torch.load(root / f"{objective}-plain" / "checkpoints" / "latest" / "model.pt")
    wb = torch.load(root / f"{objective}-fused" / "checkpoints" / "latest" / "model.pt")
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], rtol=1e-3, atol=1e-5, msg=k)


def test_doremi_weights_are_the_same_fused_or_not(runs, monkeypatch):
    """DoReMi's Group-DRO proxy: per-domain excess losses and weights step by step."""
    root, shards, ref = runs
    steps, calls = {}, _spy(monkeypatch)
    for loss in ("plain", "fused"):
        assert calls == {True: 0, False: 0}
        cfg = _run(shards, root / f"doremi-{loss}", cls=DoremiRunConfig, loss=loss,
                   doremi={"reference": ref, "proxy_steps": 6, "sidecar": "off"})
        run_doremi(cfg, lambda c, r, o: train(c, resume=r, objective=o, log=lambda m: None), log=lambda m: None)
        steps[loss] = [json.loads(x) for x in open(root / f"doremi-{loss}" / "weights.jsonl")]
    assert calls == {True: 6, False: 6 + 4}  # the proxy's steps; the reference's forward passes and the eval
    assert len(steps["plain"]) == len(steps["fused"]) == 6
    for a, b in zip(steps["plain"], steps["fused"]):
        for key in ("alpha", "excess"):
            np.testing.assert_allclose([b[key][d] for d in sorted(b[key])], [a[key][d] for d in sorted(a[key])],
                                       rtol=1e-4, atol=1e-7)
    assert steps["plain"][-1]["alpha"] != steps["plain"][0]["alpha"]  # the weights move
    np.testing.assert_allclose(_curve(root / "doremi-fused" / "proxy"), _curve(root / "doremi-plain" / "proxy"),
                               rtol=2e-5)
