"""``datacurate train / eval / score-tokens``: the required --set keys, and one-line errors
before any step for bad shards, checkpoints, weights and settings."""

import json
import os
import shutil

import pytest

from datacurate.cli import main
from datacurate.configs.train import load_train_config
from tests.train.synth import markov_set, write_set

KEYS = ["model.preset=tiny", "steps=6", "seed=2", "device=cpu", "eval_every=3", "checkpoint_every=3",
        "data.tokens_per_step=512", "data.curriculum=uniform", "data.domain_weights={a: 1, b: 1}",
        "rho1.ratio=0.5", "threads=1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    shards = markov_set(root / "shards", vocab=24, per_bucket=((64, 60), (128, 30), (256, 12)))
    out = root / "run"
    assert main(["train", "--shards", shards, "--output", str(out), *sum((["--set", k] for k in KEYS), [])]) == 0
    return root, shards, out


def test_required_keys_work_with_set(trained, capsys):
    root, shards, out = trained
    cfg = load_train_config(str(out / "config.yaml"))  # the resolved config is saved and reloads
    assert (cfg.model.preset, cfg.steps, cfg.seed, cfg.device, cfg.eval_every, cfg.checkpoint_every) == \
        ("tiny", 6, 2, "cpu", 3, 3)
    assert (cfg.data.tokens_per_step, cfg.data.curriculum, cfg.data.domain_weights) == (512, "uniform", {"a": 1, "b": 1})
    lines = [json.loads(x) for x in open(out / "metrics.jsonl")]
    assert [x["step"] for x in lines if "loss" in x] == [1, 2, 3, 4, 5, 6]
    assert [x["step"] for x in lines if "eval_loss" in x] == [3, 6]
    assert {x["seq_len"] for x in lines if "loss" in x} <= {64, 128, 256}
    assert sorted(os.listdir(out / "checkpoints")) == ["latest", "step-3", "step-6"]
    final = json.load(open(out / "final.json"))
    assert set(final) >= {"steps", "tokens", "eval_loss"} and final["tokens"] == 6 * 512
    # rho1.reference takes checkpoints/latest; eval prints and writes per-domain loss on all sequences
    assert main(["train", "--shards", shards, "--output", str(root / "rho"), "--set", "steps=3", "--set",
                 "data.tokens_per_step=512", "--set", f"rho1.reference={out}/checkpoints/latest"]) == 0
    capsys.readouterr()
    assert main(["eval", str(out / "checkpoints" / "latest"), "--shards", shards, "--output", str(root / "e.json")]) == 0
    printed = capsys.readouterr().out
    res = json.load(open(root / "e.json"))
    assert set(res["eval_loss"]) == {"all", "a", "b", "c"} and res["step"] == 6 and "all" in printed


def _err(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("datacurate: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_bad_input_is_one_line_before_any_step(trained, tmp_path, capsys):
    root, shards, out = trained
    run = ["train", "--output", str(tmp_path / "o"), "--set", "data.tokens_per_step=512"]
    assert "no manifest.json" in _err(capsys, run + ["--shards", str(tmp_path)])
    # an incomplete set: a listed file is gone; a truncated file
    broken = tmp_path / "broken"
    shutil.copytree(shards, broken)
    man = json.load(open(broken / "manifest.json"))
    first = man["buckets"]["128"]["files"][0]["tokens"]
    with open(broken / first, "r+b") as f:
        f.truncate(100)
    assert "truncated" in _err(capsys, run + ["--shards", str(broken)])
    os.remove(broken / first)
    assert "missing" in _err(capsys, run + ["--shards", str(broken)])
    # settings that cannot work with these shards
    assert "smaller than the longest bucket" in _err(capsys, run + ["--shards", shards, "--set", "data.tokens_per_step=128"])
    assert "unknown domain 'zz'" in _err(capsys, run + ["--shards", shards, "--set", "data.domain_weights={zz: 1}"])
    assert "all domain weights are zero" in _err(capsys, run + ["--shards", shards, "--set", "data.domain_weights={a: 0}"])
    assert "non-negative" in _err(capsys, run + ["--shards", shards, "--set", "data.domain_weights={a: -1, b: 2}"])
    wfile = tmp_path / "w.json"
    wfile.write_text("{not json")
    assert "not JSON" in _err(capsys, run + ["--shards", shards, "--set", f"data.domain_weights={wfile}"])
    # an empty bucket set
    empty = write_set(tmp_path / "empty", {}, ["a"], 24)
    assert "no sequences" in _err(capsys, run + ["--shards", empty])
    # config keys: did-you-mean, types, ranges
    assert "did you mean 'steps'" in _err(capsys, run + ["--shards", shards, "--set", "stepz=3"])
    assert "did you mean 'tokens_per_step'" in _err(capsys, run + ["--shards", shards, "--set", "data.tokens_per_stp=3"])
    assert "'grow' is not one of" in _err(capsys, run + ["--shards", shards, "--set", "data.curriculum=grow"])
    assert "ratio" in _err(capsys, run + ["--shards", shards, "--set", "rho1.ratio=0"])
    assert "unknown preset" in _err(capsys, run + ["--shards", shards, "--set", "model.preset=7b"])
    assert not (tmp_path / "o" / "metrics.jsonl").exists()  # nothing ran


def test_mismatched_checkpoints_are_refused(trained, tmp_path, capsys):
    root, shards, out = trained
    # --resume into a run of another shape
    other = tmp_path / "other"
    shutil.copytree(out, other)
    argv = ["train", "--shards", shards, "--output", str(other), "--resume", "--set", "steps=8",
            "--set", "data.tokens_per_step=512"]
    assert "shape" in _err(capsys, argv + ["--set", "model.n_embd=64"])
    # a reference / eval checkpoint of another tokenizer
    foreign = markov_set(tmp_path / "foreign", vocab=24, per_bucket=((64, 40),))
    man = json.load(open(os.path.join(foreign, "manifest.json")))
    man["tokenizer"]["sha256"] = "some-other-tokenizer"
    json.dump(man, open(os.path.join(foreign, "manifest.json"), "w"))
    assert "tokenizer" in _err(capsys, ["eval", str(out), "--shards", foreign])
    assert "tokenizer" in _err(capsys, ["score-tokens", str(out), "--shards", foreign])
    assert "tokenizer" in _err(capsys, ["train", "--shards", foreign, "--output", str(tmp_path / "r"),
                                        "--set", f"rho1.reference={out}", "--set", "data.tokens_per_step=512"])
    assert "not a complete checkpoint" in _err(capsys, ["eval", str(tmp_path), "--shards", shards])
    assert "checkpoint not found" in _err(capsys, ["eval", str(tmp_path / "nope"), "--shards", shards])
    # a truncated model file
    bad = tmp_path / "bad"
    shutil.copytree(out / "checkpoints" / "step-6", bad)
    with open(bad / "model.pt", "r+b") as f:
        f.truncate(1000)
    assert "does not load" in _err(capsys, ["eval", str(bad), "--shards", shards])


def test_python_api_keeps_the_yaml_train_section():
    from pathlib import Path

    from datacurate import Pipeline

    sample = Path(__file__).resolve().parent.parent.parent / "pipelines" / "sample.yaml"
    pipe = Pipeline.from_yaml(str(sample), ["train.steps=7"])
    cfg = pipe.config(output="elsewhere/run")
    assert cfg.train.steps == 7 and cfg.train.output == "elsewhere/run/train"
    assert cfg.train.shards == "elsewhere/run/shards"
    assert cfg.train.data.domain_weights["news"] == 0.25  # a mapping, not a path: untouched
    assert pipe.config().train.output == "out/sample/train"


def test_pipeline_train_section_fails_before_curation(tmp_path, capsys):
    """A missing reference or weights file of the train: section is reported before any
    curation runs; with overwrite: false an earlier run's train/ is refused too."""
    from pathlib import Path

    sample = str(Path(__file__).resolve().parent.parent.parent / "pipelines" / "sample.yaml")
    out = tmp_path / "out"

    def run(*sets):
        argv = ["run", sample, "--output", str(out), "--quiet"]
        for s in sets:
            argv += ["--set", s]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("datacurate: error:") and "\n" not in err
        return err

    assert "checkpoint not found" in run(f"train.rho1.reference={tmp_path}/nope")
    assert "file not found" in run(f"train.data.domain_weights={tmp_path}/w.json")
    assert not (out / "kept").exists()  # nothing curated
    (out / "train").mkdir(parents=True)
    assert "already holds a run (train)" in run("output.overwrite=false")
