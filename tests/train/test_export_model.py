"""``datacurate export``: checkpoints of train, DoReMi (reference and proxy) and a RHO-1
run open in transformers as GPT2LMHeadModel + PreTrainedTokenizerFast, and transformers'
loss over every sequence of the shards equals ``datacurate eval``'s ``all`` (fp32, CPU);
``generate`` runs; bad input is one line with exit 2."""

import json
import os

import numpy as np
import orjson
import pyarrow as pa
import pytest
import torch

from datacurate.cli import main
from datacurate.stages.decompose import Decompose
from datacurate.stages.tokenize import Tokenize
from datacurate.train import checkpoint
from datacurate.train.data import ShardDataset
from datacurate.train.doremi import run_doremi
from datacurate.train.evaluate import eval_loss
from datacurate.train.loop import train
from datacurate.configs.train import DoremiRunConfig, load_train_config
from tests.conftest import REPO

transformers = pytest.importorskip("transformers")

BASE = {"seed": 0, "threads": 2, "eval_every": 0, "checkpoint_every": 0, "log_every": 1,
        "model": {"n_layer": 1, "n_head": 2, "n_embd": 32},
        "data": {"tokens_per_step": 512, "curriculum": "uniform", "eval_fraction": 0.0}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Shards of 16 sample documents (the shipped tokenizer); a model trained 4 steps on
    them, DoReMi's reference and proxy (2 steps each), a RHO-1 run on that reference."""
    root = tmp_path_factory.mktemp("export_model")
    docs = []
    for name in ("news.jsonl", "legal.jsonl"):
        lines = (REPO / "sample_data" / "corpus" / name).read_bytes().splitlines()
        docs += [orjson.loads(x) for x in lines[:8]]
    table = pa.table({"id": [d["id"] for d in docs], "domain": [d["domain"] for d in docs],
                      "text": [d["text"] for d in docs]})
    shards = str(root / "shards")
    Decompose(output=shards, min_log2=5, max_log2=8)(Tokenize()(table))
    out = {"shards": shards}
    out["train"] = train(load_train_config({**BASE, "steps": 4}, shards=shards, output=str(root / "train")),
                         log=lambda m: None)["checkpoint"]
    raw = {**BASE, "doremi": {"reference_steps": 2, "proxy_steps": 2}}
    run_doremi(load_train_config(raw, cls=DoremiRunConfig, shards=shards, output=str(root / "doremi")),
               lambda c, r, o: train(c, resume=r, objective=o, log=lambda m: None), log=lambda m: None)
    out["doremi_reference"] = str(root / "doremi" / "reference")
    out["doremi_proxy"] = str(root / "doremi" / "proxy")
    rho1 = {**BASE, "steps": 2, "rho1": {"reference": out["doremi_reference"], "ratio": 0.6}}
    train(load_train_config(rho1, shards=shards, output=str(root / "rho1")), log=lambda m: None)
    out["rho1"] = str(root / "rho1")
    return root, out


def hf_loss(model, ds: ShardDataset) -> float:
    """Token-weighted mean of transformers' loss over every sequence of the shards."""
    total, count = 0.0, 0
    with torch.no_grad():
        for L in ds.seq_lens:
            toks, _ = ds.sequences(L, np.arange(ds.num_sequences(L)))
            x = torch.from_numpy(toks.astype(np.int64))
            for i in range(0, len(x), 64):
                batch = x[i:i + 64]
                loss = model(input_ids=batch, labels=batch).loss.item()  # mean over B x (L - 1) tokens
                total += loss * batch.shape[0] * (L - 1)
                count += batch.shape[0] * (L - 1)
    return total / count


@pytest.mark.parametrize("which", ["train", "doremi_reference", "doremi_proxy", "rho1"])
def test_exported_model_gives_datacurate_eval_loss_and_generates(runs, which, tmp_path, capsys):
    root, out = runs
    target = str(tmp_path / "hf")
    assert main(["export", out[which], "--output", target]) == 0
    assert sorted(os.listdir(target)) == ["config.json", "model.safetensors", "special_tokens_map.json",
                                          "tokenizer.json", "tokenizer_config.json"]
    model = transformers.AutoModelForCausalLM.from_pretrained(target).eval()
    tok = transformers.AutoTokenizer.from_pretrained(target)
    assert type(model).__name__ == "GPT2LMHeadModel" and model.config.activation_function == "gelu"
    assert isinstance(tok, transformers.PreTrainedTokenizerFast)
    assert tok.eos_token == "<|endoftext|>" and tok.eos_token_id == 0 == model.config.eos_token_id

    ds = ShardDataset(out["shards"])
    ours, _ = checkpoint.load_model(out[which])
    expected = eval_loss(ours, ds, {}, "cpu")["all"]
    assert abs(hf_loss(model, ds) - expected) <= 1e-4 * expected
    # the CLI's eval prints the same number
    assert main(["eval", out[which], "--shards", out["shards"], "--output", str(tmp_path / "eval.json")]) == 0
    assert json.loads((tmp_path / "eval.json").read_text())["eval_loss"]["all"] == pytest.approx(expected, rel=1e-9)

    ids = tok("The jury said", return_tensors="pt")
    gen = model.generate(**ids, max_new_tokens=8, do_sample=False, pad_token_id=tok.eos_token_id)
    assert gen.shape[1] > ids["input_ids"].shape[1]
    assert tok.decode(gen[0]).startswith("The jury said")


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("datacurate: error: "), err
    return err[0]


def test_bad_input_is_one_line(runs, tmp_path, capsys):
    root, out = runs
    full = tmp_path / "full"
    full.mkdir()
    (full / "x.txt").write_text("x")
    assert "unknown format 'onnx'" in _error(capsys, ["export", out["train"], "--output", str(tmp_path / "a"),
                                                      "--format", "onnx"])
    assert "not empty" in _error(capsys, ["export", out["train"], "--output", str(full)])
    assert "not a complete checkpoint" in _error(capsys, ["export", str(full), "--output", str(tmp_path / "b")])
    other = tmp_path / "other.json"  # a tokenizer of another vocabulary
    from datacurate.formats.tokenizer import train_tokenizer

    train_tokenizer([["some text to learn from"] * 10], vocab_size=300).save(str(other))
    assert "273 tokens, the checkpoint's vocabulary has 8192" in _error(
        capsys, ["export", out["train"], "--output", str(tmp_path / "c"), "--tokenizer", str(other)])
    assert not (tmp_path / "c").exists()
    # with --overwrite a non-empty directory is replaced
    assert main(["export", out["train"], "--output", str(full), "--overwrite"]) == 0
    assert not (full / "x.txt").exists() and (full / "model.safetensors").is_file()


def test_train_and_export_print_one_parameter_count(runs, tmp_path, capsys):
    root, out = runs
    lines = []
    train(load_train_config({**BASE, "steps": 1}, shards=out["shards"], output=str(tmp_path / "t")), log=lines.append)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "t"), "--output", str(tmp_path / "hf")]) == 0
    printed = capsys.readouterr().out
    model, _ = checkpoint.load_model(str(tmp_path / "t"))
    count = f"{sum(p.numel() for p in model.parameters()):,} parameters (embeddings included"
    assert count in lines[0] and count in printed, (lines[0], printed)
