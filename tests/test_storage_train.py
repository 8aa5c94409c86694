"""Training against the S3 test server: shards streamed from the bucket into a local
cache, checkpoints uploaded, and --resume from the checkpoint stored there gives the
curve of the uninterrupted local run."""

import json
import shutil
from pathlib import Path

import yaml

from datacurate import storage
from datacurate.train.loop import train
from tests import s3
from tests.train.synth import markov_set
from tests.train.test_loop import cfg_of, losses


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

    from datacurate.config import ConfigError

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
