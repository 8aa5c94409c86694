"""Training against the S3 test server: shards streamed from the bucket into a local
cache, checkpoints uploaded, and --resume from the checkpoint stored there gives the
curve of the uninterrupted local run."""

import json
import shutil
from pathlib import Path

import yaml

from datacurate.formats import storage
from datacurate.engine import run_pipeline
from datacurate.train.loop import train
from tests import s3
from tests.train.synth import markov_set
from tests.train.test_loop import cfg_of, losses

REPO = Path(__file__).resolve().parent.parent


def test_tiny_training_reads_s3_shards_and_resumes_from_an_s3_checkpoint(s3_server, tmp_path):
    shards = Path(markov_set(tmp_path / "synth"))
    s3.make_bucket("train")
    s3.upload_dir(shards, "s3://train/shards")
    over = dict(steps=12, checkpoint_every=6, keep_checkpoints=0, model={"preset": "tiny"})
    train(cfg_of(shards, tmp_path / "local", **over))

    out = "s3://train/run"
    cache = tmp_path / "cache"
    cfg = cfg_of("s3://train/shards", out, cache_dir=str(cache), **over)
    final = train(cfg)
    assert final["checkpoint"] == f"{out}/checkpoints/latest"
    cached = next((cache / "shards").iterdir())
    for f in sorted(p for p in shards.rglob("*.bin")):
        assert (cached / f.relative_to(shards)).read_bytes() == f.read_bytes()
    assert s3.get(f"{out}/checkpoints/latest") == b"step-12"
    assert {k.split("/")[2] for k in s3.keys(f"{out}/checkpoints/step-")} == {"step-6", "step-12"}
    assert {k.rsplit("/", 1)[1] for k in s3.keys(f"{out}/checkpoints/step-6")} == {"model.pt", "optim.pt", "state.json"}

    # a run killed after its step-6 checkpoint, resumed on another machine (empty cache)
    s3.client().delete_object(Bucket="train", Key="run/final.json")
    storage.delete(f"{out}/checkpoints/step-12")
    storage.write_text(f"{out}/checkpoints/latest", "step-6")
    shutil.rmtree(cache)
    again = train(cfg, resume=True)
    assert again["steps"] == 12 and again["eval_loss"] == final["eval_loss"]
    metrics = [json.loads(x) for x in s3.get(f"{out}/metrics.jsonl").decode().splitlines()]
    got = [(r["step"], r["loss"]) for r in metrics if "loss" in r]
    assert got == losses(tmp_path / "local")  # bit-identical to the uninterrupted local run
    assert json.loads(s3.get(f"{out}/final.json"))["steps"] == 12
    assert yaml.safe_load(s3.get(f"{out}/config.yaml"))["shards"] == "s3://train/shards"
    assert s3.get(f"{out}/checkpoints/latest") == b"step-12"


def test_doremi_cli_with_s3_shards_and_output_matches_local(s3_server, tmp_path, capsys):
    from datacurate.cli import main

    shards = markov_set(tmp_path / "synth")
    s3.make_bucket("doremi")
    s3.upload_dir(Path(shards), "s3://doremi/shards")
    common = ["--set", "threads=1", "--set", "model.preset=tiny", "--set", "data.tokens_per_step=1024",
              "--set", "doremi.reference_steps=4", "--set", "doremi.proxy_steps=4", "--set", "eval_every=0",
              "--set", f"cache_dir={tmp_path / 'cache'}"]
    assert main(["doremi", "--shards", shards, "--output", str(tmp_path / "local"), *common]) == 0
    assert main(["doremi", "--shards", "s3://doremi/shards", "--output", "s3://doremi/out", *common]) == 0
    capsys.readouterr()
    want = json.loads((tmp_path / "local" / "domain_weights.json").read_text())
    assert json.loads(s3.get("s3://doremi/out/domain_weights.json")) == want
    names = {k.removeprefix("out/") for k in s3.keys("s3://doremi/out")}
    assert s3.get("s3://doremi/out/reference/checkpoints/latest") == b"step-4"  # the symlink, as an object
    assert {"reference/checkpoints/step-4/state.json", "proxy/checkpoints/step-4/model.pt"} <= names
    assert not [n for n in names if ".tmp" in n]


def test_a_corrupted_s3_shard_is_a_one_line_error_not_trained_on(s3_server, tmp_path):
    """A shard object rewritten in the bucket with other bytes of the same size passes the
    size check; the manifest's xxh3 digest catches it, and the bad copy leaves the cache."""
    import pytest

    from datacurate.configs.pipeline import ConfigError

    shards = Path(markov_set(tmp_path / "synth"))
    manifest = json.loads((shards / "manifest.json").read_text())
    victim = manifest["buckets"]["128"]["files"][1]["tokens"]
    s3.make_bucket("corrupt")
    s3.upload_dir(shards, "s3://corrupt/shards")
    good = s3.get(f"s3://corrupt/shards/{victim}")
    bad = bytes([good[0] ^ 1]) + good[1:]
    s3.client().put_object(Bucket="corrupt", Key=f"shards/{victim}", Body=bad)
    cache = tmp_path / "cache"
    cfg = cfg_of("s3://corrupt/shards", tmp_path / "out", cache_dir=str(cache), steps=2, model={"preset": "tiny"})
    with pytest.raises(ConfigError, match=f"{victim}: checksum [0-9a-f]+ is not the manifest's"):
        train(cfg)
    cached = next((cache / "shards").iterdir())
    assert (cached / "len64" / "part-a.tokens.bin").exists() and not (cached / victim).exists()


def _pipeline(corpus: Path, out: str, cache: Path):
    from datacurate.configs.pipeline import load_config

    model = {"threads": 1, "eval_every": 0, "cache_dir": str(cache),
             "data": {"tokens_per_step": 1024, "curriculum": "uniform", "eval_fraction": 0.1}}
    return load_config({
        "input": str(corpus), "output": out, "ray": {"progress": False, "num_cpus": 2},
        "stages": [{"tokenize": {}}, {"decompose": {"max_log2": 8}}],
        "doremi": {"reference_steps": 4, "proxy_steps": 4, "checkpoint_every": 2, **model},
        "train": {"steps": 4, "checkpoint_every": 2, "keep_checkpoints": 0, **model}})


def _read(root: str, name: str) -> bytes:
    return s3.get(f"{root}/{name}") if root.startswith("s3://") else (Path(root) / name).read_bytes()


def test_pipeline_doremi_and_train_sections_with_an_s3_output_match_local(ray_session, s3_server, tmp_path):
    """A pipeline with doremi: and train: sections writing to s3:// (the shards, then both
    models, read and written through the bucket) gives the local run's domain weights, losses,
    checkpoints and final eval losses."""
    import io

    import torch

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("news.jsonl", "learned.jsonl"):
        (corpus / name).write_bytes(b"".join((REPO / "sample_data" / "corpus" / name).open("rb").readlines()[:40]))
    local = str(tmp_path / "local")
    s3.make_bucket("piperun")
    remote = "s3://piperun/run1"
    want = run_pipeline(_pipeline(corpus, local, tmp_path / "cache-local"), report=False)
    got = run_pipeline(_pipeline(corpus, remote, tmp_path / "cache-remote"), report=False)

    assert got["doremi"] == want["doremi"] and set(want["doremi"]) == {"news", "learned"}
    assert json.loads(_read(remote, "doremi/domain_weights.json")) == want["doremi"]
    assert got["train"]["eval_loss"] == want["train"]["eval_loss"] and want["train"]["eval_loss"]["all"] > 0
    assert got["train"]["checkpoint"] == f"{remote}/train/checkpoints/latest"
    assert json.loads(_read(remote, "train/final.json"))["eval_loss"] == want["train"]["eval_loss"]
    assert json.loads(_read(remote, "stats.json"))["train"] == got["train"]
    for run in ("doremi/reference", "doremi/proxy", "train"):
        rows = [[{k: r[k] for k in ("step", "loss", "eval_loss") if k in r}
                 for r in map(json.loads, _read(root, f"{run}/metrics.jsonl").decode().splitlines())]
                for root in (local, remote)]
        assert rows[0] == rows[1] and len(rows[0]) >= 4, run
        assert _read(remote, f"{run}/checkpoints/latest") == b"step-4"
        for step in ("step-2", "step-4"):
            a, b = (torch.load(io.BytesIO(_read(root, f"{run}/checkpoints/{step}/model.pt")), map_location="cpu")
                    for root in (local, remote))
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), (run, step)
    assert _read(remote, "doremi/weights.jsonl") == _read(local, "doremi/weights.jsonl")


def test_ray_train_workers_read_s3_shards_and_write_an_s3_output(ray_session, s3_server, tmp_path):
    """The launcher's choice (Ray Train with workers > 1 or a Ray address), and Ray Train's
    ranks each caching the bucket's shards while rank 0 uploads the checkpoints: the curve
    of one local worker."""
    import numpy as np

    from datacurate.configs.pipeline import RayConfig
    from datacurate.engine.launch import launch_train, on_ray_train

    shards = Path(markov_set(tmp_path / "synth"))
    s3.make_bucket("raytrain")
    s3.upload_dir(shards, "s3://raytrain/shards")
    over = dict(steps=4, checkpoint_every=2, keep_checkpoints=0, model={"preset": "tiny"},
                data={"tokens_per_step": 2048})
    one = cfg_of(shards, tmp_path / "one", **over)
    two = cfg_of("s3://raytrain/shards", "s3://raytrain/two", workers=2, cache_dir=str(tmp_path / "cache"), **over)
    assert not on_ray_train(one, None) and not on_ray_train(one, RayConfig())
    assert on_ray_train(one, RayConfig(address="auto")) and on_ray_train(two, None)
    launch_train(one)
    final = launch_train(two, ray_cfg=RayConfig(progress=False))
    assert final["checkpoint"] == "s3://raytrain/two/checkpoints/latest" and final["steps"] == 4
    assert json.loads(s3.get("s3://raytrain/two/final.json")) == final
    assert s3.get("s3://raytrain/two/checkpoints/latest") == b"step-4"
    assert {k.split("/")[2] for k in s3.keys("s3://raytrain/two/checkpoints/step-")} == {"step-2", "step-4"}
    metrics = [json.loads(x) for x in s3.get("s3://raytrain/two/metrics.jsonl").decode().splitlines()]
    got = [(r["step"], r["loss"]) for r in metrics if "loss" in r]
    want = losses(tmp_path / "one")
    assert [s for s, _ in got] == [s for s, _ in want]
    np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-4)
