"""Training against the S3 test server: shards streamed from the bucket into a local
cache, checkpoints uploaded, and --resume from the checkpoint stored there gives the
curve of the uninterrupted local run."""

import json
import shutil
from pathlib import Path

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
    assert s3.get(f"{out}/checkpoints/latest") == b"step-12"
