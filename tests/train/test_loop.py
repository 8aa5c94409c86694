"""The training loop on CPU: loss falls, exact resume after kill -9 and Ctrl-C, Ray Train parity."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from datacurate.configs.train import load_train_config
from datacurate.train.loop import train
from tests.train.synth import markov_set, unigram_entropy

BASE = {"seed": 3, "threads": 1, "eval_every": 0, "checkpoint_every": 0, "log_every": 1,
        "data": {"tokens_per_step": 1024, "eval_fraction": 0.1}}


def cfg_of(shards, out, **over):
    raw = json.loads(json.dumps(BASE))
    for k, v in over.items():
        if isinstance(v, dict):
            raw.setdefault(k, {}).update(v)
        else:
            raw[k] = v
    return load_train_config(raw, shards=str(shards), output=str(out))


def losses(out) -> list[tuple[int, float]]:
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f) if "loss" in r]


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    return markov_set(tmp_path_factory.mktemp("synth"))


def test_loss_falls_well_below_unigram_entropy(shard_dir, tmp_path):
    h1 = unigram_entropy(shard_dir)
    final = train(cfg_of(shard_dir, tmp_path / "run", steps=150))
    first = losses(tmp_path / "run")[0][1]
    assert first > h1 - 0.1  # an untrained model is no better than the unigram
    assert final["eval_loss"]["all"] < h1 - 1.0, (final["eval_loss"], h1)  # held-out, never trained on
    assert set(final["eval_loss"]) == {"all", "a", "b", "c"}
    lines = [json.loads(x) for x in open(tmp_path / "run" / "metrics.jsonl")]
    step_line = next(x for x in lines if "loss" in x)
    assert set(step_line) == {"step", "tokens", "seq_len", "loss", "lr", "tokens_per_s", "mfu"}
    assert step_line["mfu"] is None  # CPU
    assert json.load(open(tmp_path / "run" / "final.json"))["steps"] == 150
    held = [x["eval_tokens"] for x in lines if "eval_loss" in x][-1]  # the held-out size beside each loss
    assert set(held) == {"all", "a", "b", "c"} and held["all"] == held["a"] + held["b"] + held["c"] > 0


def _cli(*args):
    return [sys.executable, "-m", "datacurate.cli", "train", *args]


def _started(cmd: list, latest, at_least: int) -> subprocess.Popen:
    """``cmd`` running, once its latest checkpoint is at step ``at_least`` or later."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and not (latest.exists() and int(os.readlink(latest).split("-")[1]) >= at_least):
        time.sleep(0.05)
    return proc


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_kill_9_and_ctrl_c_then_resume_give_the_uninterrupted_curve(shard_dir, tmp_path):
    common = ["--shards", shard_dir, "--set", "steps=400", "--set", "threads=1", "--set", "seed=5",
              "--set", "checkpoint_every=10", "--set", "eval_every=50", "--set", "data.tokens_per_step=1024"]
    full = tmp_path / "full"
    subprocess.run(_cli(*common, "--output", str(full)), check=True, capture_output=True)
    cut = tmp_path / "cut"
    latest = cut / "checkpoints" / "latest"
    proc = _started(_cli(*common, "--output", str(cut)), latest, 60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (cut / "final.json").exists(), "the run finished before it was killed"
    killed_at = int(os.readlink(latest).split("-")[1])
    assert 60 <= killed_at < 400
    # the resumed run is interrupted as Ctrl-C does: one line, exit 130, and --resume continues
    proc = _started(_cli(*common, "--output", str(cut), "--resume"), latest, killed_at + 60)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and not (cut / "final.json").exists(), (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == "datacurate: interrupted during training; run again with --resume to continue"
    assert "Traceback" not in err
    subprocess.run(_cli(*common, "--output", str(cut), "--resume"), check=True, capture_output=True)
    a, b = losses(full), losses(cut)
    assert [s for s, _ in a] == list(range(1, 401)) == [s for s, _ in b]
    assert a == b  # bit-identical: same batches, same optimiser state, same RNG
    evals = lambda p: [r["eval_loss"] for r in map(json.loads, open(p / "metrics.jsonl")) if "eval_loss" in r]
    assert evals(full) == evals(cut)


def test_two_ray_train_workers_match_one(ray_session, shard_dir, tmp_path):
    from datacurate.engine.ray.train import run_train

    one = train(cfg_of(shard_dir, tmp_path / "one", steps=12, data={"tokens_per_step": 2048}))
    two = run_train(cfg_of(shard_dir, tmp_path / "two", steps=12, workers=2, data={"tokens_per_step": 2048}))
    a, b = losses(tmp_path / "one"), losses(tmp_path / "two")
    assert [s for s, _ in a] == [s for s, _ in b] == list(range(1, 13))
    np.testing.assert_allclose([x for _, x in a], [x for _, x in b], rtol=2e-5)
    assert a[-1][1] < a[0][1]
    np.testing.assert_allclose(one["eval_loss"]["all"], two["eval_loss"]["all"], rtol=2e-5)
    # rank 0 wrote the checkpoint; it resumes in one process (another worker count)
    again = train(cfg_of(shard_dir, tmp_path / "two", steps=14, data={"tokens_per_step": 2048}), resume=True)
    assert again["steps"] == 14 and losses(tmp_path / "two")[:12] == b


def test_gradient_accumulation_matches_one_big_batch(shard_dir, tmp_path):
    train(cfg_of(shard_dir, tmp_path / "one", steps=6))
    train(cfg_of(shard_dir, tmp_path / "acc", steps=6, optim={"grad_accum": 4}))
    # 5 micro-batches: uneven splits (16 sequences of 64 -> 4,3,3,3,3) and more micro-batches
    # than sequences (4 of 256 -> four of 1), weighted by their share of the batch
    train(cfg_of(shard_dir, tmp_path / "odd", steps=6, optim={"grad_accum": 5}))
    a, b, c = losses(tmp_path / "one"), losses(tmp_path / "acc"), losses(tmp_path / "odd")
    np.testing.assert_allclose([x for _, x in a], [x for _, x in b], rtol=1e-5)
    np.testing.assert_allclose([x for _, x in a], [x for _, x in c], rtol=1e-5)
