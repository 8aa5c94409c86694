"""The training half on CUDA, by the code paths the CPU tests cover (``pytest -m gpu``;
skipped without a GPU, so CI and CPU-only machines run none of it).

* the first steps of the same seed give the same losses on CPU and CUDA: fp32 within
  1e-4 (relative), bf16 autocast within 3e-2;
* a compiled step gives the losses of an eager one (fp32);
* RHO-1 (frozen reference on the fly and from the ``score-tokens`` sidecar) and DoReMi's
  Group DRO run on CUDA and agree with CPU;
* a checkpoint written on CUDA resumes to the losses of the uninterrupted run;
* ``export`` of a CUDA checkpoint loads in transformers and gives our logits;
* ``train.loss: fused`` on CUDA (Liger Kernel's head when installed, our chunked one) gives the
  plain head's losses and gradients, and its compiled bf16 curve is the plain one's.
"""

import json
import os
import shutil

import numpy as np
import orjson
import pyarrow as pa
import pytest
import torch
import yaml

from datacurate.stages.decompose import Decompose
from datacurate.stages.tokenize import Tokenize
from datacurate.train import checkpoint
from datacurate.train.doremi import run_doremi
from datacurate.train.export import export_model
from datacurate.train.fused_loss import token_losses
from datacurate.train.loop import train
from datacurate.train.rho1 import score_tokens
from datacurate.configs.train import DoremiRunConfig, load_train_config
from tests.conftest import REPO
from tests.train.synth import markov_set

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

BASE = {"seed": 5, "steps": 6, "eval_every": 0, "checkpoint_every": 0, "log_every": 1, "compile": False,
        "model": {"n_layer": 2, "n_head": 4, "n_embd": 128},
        "data": {"tokens_per_step": 2048, "curriculum": "uniform", "eval_fraction": 0.1}}


def quiet(msg):
    pass


def run(shards, out, cls=None, **over) -> list[float]:
    raw = json.loads(json.dumps(BASE))
    resume = over.pop("_resume", False)
    for k, v in over.items():
        if isinstance(v, dict):
            raw.setdefault(k, {}).update(v)
        else:
            raw[k] = v
    if cls is DoremiRunConfig:
        cfg = load_train_config(raw, cls=cls, shards=str(shards), output=str(out))
        return run_doremi(cfg, lambda c, r, o: train(c, resume=r, objective=o, log=quiet), log=quiet)
    train(load_train_config(raw, shards=str(shards), output=str(out)), resume=resume, log=quiet)
    return losses(out)


def losses(out) -> list[float]:
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [r["loss"] for r in map(json.loads, f) if "loss" in r]


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    return markov_set(tmp_path_factory.mktemp("gpu") / "shards", vocab=256)


def test_cpu_and_cuda_agree_fp32_then_bf16(shard_dir, tmp_path):
    cpu = run(shard_dir, tmp_path / "cpu", device="cpu", precision="fp32")
    cuda = run(shard_dir, tmp_path / "cuda", device="cuda", precision="fp32")
    np.testing.assert_allclose(cuda, cpu, rtol=1e-4)
    bf16 = run(shard_dir, tmp_path / "bf16", device="cuda", precision="bf16")
    np.testing.assert_allclose(bf16, cpu, rtol=3e-2)
    assert bf16 != cuda  # autocast really ran in bf16


def test_compiled_step_equals_eager(shard_dir, tmp_path):
    eager = run(shard_dir, tmp_path / "eager", device="cuda", precision="fp32")
    compiled = run(shard_dir, tmp_path / "compiled", device="cuda", precision="fp32", compile=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4)


def test_rho1_and_doremi_steps_on_cuda_agree_with_cpu(shard_dir, tmp_path):
    run(shard_dir, tmp_path / "ref", device="cpu", precision="fp32", steps=4)
    ref = str(tmp_path / "ref")
    rho1 = {"reference": ref, "ratio": 0.6, "sidecar": "off"}
    on_cpu = run(shard_dir, tmp_path / "rho1_cpu", device="cpu", precision="fp32", rho1=rho1)
    on_cuda = run(shard_dir, tmp_path / "rho1_cuda", device="cuda", precision="fp32", rho1=rho1)
    np.testing.assert_allclose(on_cuda, on_cpu, rtol=1e-3)
    # the sidecar scored on CUDA drives the same steps
    scored = tmp_path / "scored"
    shutil.copytree(shard_dir, scored)
    score_tokens(ref, str(scored), "cuda", log=quiet)
    side = run(scored, tmp_path / "rho1_side", device="cuda", precision="fp32", rho1={**rho1, "sidecar": "require"})
    np.testing.assert_allclose(side, on_cuda, rtol=1e-3)

    doremi = {"doremi": {"reference_steps": 4, "proxy_steps": 6}}
    w_cpu = run(shard_dir, tmp_path / "dro_cpu", cls=DoremiRunConfig, device="cpu", precision="fp32", **doremi)
    w_cuda = run(shard_dir, tmp_path / "dro_cuda", cls=DoremiRunConfig, device="cuda", precision="fp32", **doremi)
    assert set(w_cuda) == set(w_cpu) and abs(sum(w_cuda.values()) - 1) < 1e-9
    for d in w_cpu:
        assert w_cuda[d] == pytest.approx(w_cpu[d], abs=1e-3)
    assert len(open(tmp_path / "dro_cuda" / "weights.jsonl").readlines()) == 6


def test_checkpoint_on_cuda_resumes_to_the_same_losses(shard_dir, tmp_path):
    full = run(shard_dir, tmp_path / "full", device="cuda", precision="fp32", steps=8, checkpoint_every=4,
               keep_checkpoints=0)
    part = tmp_path / "part"
    shutil.copytree(tmp_path / "full", part, symlinks=True)
    ckpts = part / "checkpoints"
    shutil.rmtree(ckpts / "step-8")
    os.remove(ckpts / "latest")
    os.symlink("step-4", ckpts / "latest")
    resumed = run(shard_dir, part, device="cuda", precision="fp32", steps=8, checkpoint_every=4,
                  keep_checkpoints=0, _resume=True)
    assert len(resumed) == 8
    np.testing.assert_allclose(resumed, full, rtol=1e-5)


def test_export_of_a_cuda_checkpoint_loads_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    docs = [orjson.loads(x) for x in (REPO / "sample_data" / "corpus" / "news.jsonl").read_bytes().splitlines()[:16]]
    table = pa.table({"id": [d["id"] for d in docs], "domain": [d["domain"] for d in docs],
                      "text": [d["text"] for d in docs]})
    shards = str(tmp_path / "shards")
    Decompose(output=shards, min_log2=5, max_log2=8)(Tokenize()(table))
    run(shards, tmp_path / "train", device="cuda", steps=4, compile=True,
        model={"n_layer": 1, "n_head": 2, "n_embd": 32}, data={"tokens_per_step": 512, "eval_fraction": 0.0})
    target = str(tmp_path / "hf")
    export_model(str(tmp_path / "train"), target)
    hf = transformers.AutoModelForCausalLM.from_pretrained(target).eval()
    ours, _ = checkpoint.load_model(str(tmp_path / "train"))  # onto the CPU
    x = torch.from_numpy(np.arange(1, 33, dtype=np.int64)[None])  # (1, 32)
    with torch.no_grad():
        np.testing.assert_allclose(hf(input_ids=x).logits.numpy(), ours(x).numpy(), atol=1e-4)


@pytest.mark.parametrize("head", ["chunked", "liger"])
def test_fused_heads_match_the_plain_head_on_cuda(head):
    """train.loss fused on CUDA: Liger Kernel's head (when the [gpu] extra is installed) and our
    chunked one give the plain head's per-token losses and gradients under bf16 autocast."""
    if head == "liger":
        pytest.importorskip("liger_kernel")
    g = torch.Generator(device="cuda").manual_seed(0)
    h = torch.randn(4096, 256, device="cuda", generator=g).requires_grad_()
    w = (torch.randn(8192, 256, device="cuda", generator=g) * 0.05).requires_grad_()
    y = torch.randint(0, 8192, (4096,), device="cuda", generator=g)
    weights = (torch.rand(4096, device="cuda", generator=g) < 0.6).float() / 2458  # RHO-1-like: zero for unselected
    out = {}
    for kind in ("plain", head):
        h.grad = w.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            losses = token_losses(h, w, y, kind)
        (losses * weights).sum().backward()
        out[kind] = losses.detach(), h.grad.clone(), w.grad.clone()
    assert out[head][0].dtype == torch.float32
    torch.testing.assert_close(out[head][0], out["plain"][0], rtol=2e-2, atol=2e-2)
    for a, b in zip(out["plain"][1:], out[head][1:]):
        torch.testing.assert_close(b, a, rtol=5e-2, atol=5e-2 * float(a.abs().max()))


def test_fused_training_curve_matches_plain_compiled_bf16(shard_dir, tmp_path):
    """The loop with train.loss fused (Liger when installed, else chunked), compiled, bf16: the
    first steps' losses of the same seed are the plain head's within bf16 tolerance."""
    plain = run(shard_dir, tmp_path / "plain", device="cuda", compile=True, loss="plain")
    fused = run(shard_dir, tmp_path / "fused", device="cuda", compile=True, loss="fused")
    np.testing.assert_allclose(fused, plain, rtol=3e-2)
    cfg = yaml.safe_load(open(tmp_path / "fused" / "config.yaml"))
    assert cfg["loss"] == "fused"
