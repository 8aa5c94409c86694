"""``datacurate ablate``: the interval statistics on synthetic numbers, the multiple-choice
scorer against a hand computation and against transformers on an exported model, config
errors, and (with real curation and training) two identical arms, a kill -9 then
``--resume``, and heuristics beating no filter on a half-junk corpus."""

import gzip
import json
import math
import os
import random
import re
import signal
import subprocess
import sys

import numpy as np
import orjson
import pyarrow as pa
import pytest
import torch
import yaml

from datacurate.configs.ablation import load_ablation_config
from datacurate.configs.pipeline import ConfigError
from datacurate.core.intervals import excludes_zero, paired_difference, t_interval, t_quantile
from datacurate.train.downstream import encode_pair, score_task
from tests.ablation_data import write_corpus
from tests.bench_scripts import run_script
from tests.conftest import REPO

TARGET = REPO / "sample_data" / "target" / "target.jsonl"


# ----------------------------------------------------------------------------- statistics


def test_t_interval_on_synthetic_numbers():
    # Student t 0.975 quantiles from the printed tables
    for df, want in [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (9, 2.262), (29, 2.045)]:
        assert t_quantile(0.975, df) == pytest.approx(want, abs=5e-4)
    r = t_interval([1.0, 2.0, 3.0])  # mean 2, s = 1, half-width 4.3027 / sqrt(3)
    assert r["mean"] == 2.0 and r["sd"] == 1.0
    assert r["ci"] == pytest.approx([2 - 4.302653 / math.sqrt(3), 2 + 4.302653 / math.sqrt(3)], abs=1e-5)
    d = paired_difference([5.1, 5.3, 5.2], [5.0, 5.1, 5.2])  # per seed: 0.1, 0.2, 0.0
    assert d["mean"] == pytest.approx(0.1) and d["sd"] == pytest.approx(0.1)
    assert d["ci"] == pytest.approx([0.1 - 0.2484138, 0.1 + 0.2484138], abs=1e-6)
    assert not excludes_zero(d["ci"]) and excludes_zero([0.01, 0.3]) and excludes_zero([-0.3, -0.01])
    assert t_interval([4.2])["ci"] == [None, None]


def test_paired_interval_covers_zero_for_identical_arms_at_the_stated_rate():
    """Two arms with the same distribution (a shared per-seed effect plus noise): the
    paired interval holds 0 in 95 % of 4,000 draws, and the shared part cancels."""
    rng = random.Random(0)
    hits, width = 0, 0.0
    for _ in range(4000):
        shared = [rng.gauss(0, 1.0) for _ in range(3)]
        a = [6.0 + s + rng.gauss(0, 0.05) for s in shared]
        b = [6.0 + s + rng.gauss(0, 0.05) for s in shared]
        d = paired_difference(a, b)
        hits += d["ci"][0] <= 0 <= d["ci"][1]
        width += (d["ci"][1] - d["ci"][0]) / 4000
    assert 0.94 <= hits / 4000 <= 0.96
    assert width < 0.4  # about 2 t s / sqrt(3) with s ~ 0.07: the shared per-seed part (sd 1) cancelled


# ----------------------------------------------------------------------------- multiple choice


class Unigram(torch.nn.Module):
    """A "model" with a fixed next-token distribution whatever the context."""

    def __init__(self, probs):
        super().__init__()
        self.logp = torch.log(torch.tensor(probs, dtype=torch.float64))

    def forward(self, idx, targets):
        return -self.logp[targets].float()  # (B, T) per-token loss


def test_multiple_choice_scorer_agrees_with_a_hand_computation():
    chars = ["<eos>", " ", "a", "b", "c", "x"]
    probs = [0.0625, 0.0625, 0.5, 0.25, 0.0625, 0.0625]
    enc = lambda s: [chars.index(c) for c in s]  # noqa: E731 - one token per character
    lp = {c: math.log(p) for c, p in zip(chars, probs)}
    items = [
        # " a" = log .0625 + log .5 = -3.466; " bb" = log .0625 + 2 log .25 = -5.545
        {"context": "xx", "choices": ["a", "bb"], "label": 0},
        # " c" = 2 log .0625 = -5.545; " aaa" = log .0625 + 3 log .5 = -4.852
        {"context": "x", "choices": ["c", "aaa"], "label": 1},
        # the context's trailing space moves to the continuation: "  b" = -6.931, "  ab" = -7.625
        {"context": "x ", "choices": ["b", "ab"], "label": 0},
    ]
    res = score_task(Unigram(probs), items, enc, 0, 64, "cpu")
    hand = [[-3.465736, -5.545177], [-5.545177, -4.852030], [-6.931472, -7.624619]]
    assert np.allclose(res["logliks"], hand, atol=1e-5)
    assert np.allclose(hand, [[lp[" "] + lp["a"], lp[" "] + 2 * lp["b"]], [2 * lp[" "], lp[" "] + 3 * lp["a"]],
                              [2 * lp[" "] + lp["b"], 2 * lp[" "] + lp["a"] + lp["b"]]], atol=1e-6)
    # acc (sums): "a", "aaa", "b" -> 3 of 3 right
    # acc_norm (sum / characters of the choice): "bb" (-2.773 > -3.466), "aaa" (-1.617 > -5.545),
    # "ab" (-3.812 > -6.931) -> 1 of 3 right
    assert res["acc"] == pytest.approx(1.0) and res["acc_norm"] == pytest.approx(1 / 3)
    assert encode_pair(enc, "x ", " b", 0) == ([5], [1, 1, 3])
    assert encode_pair(enc, "", " b", 0) == ([0], [1, 3])  # empty context: EOS stands in


transformers = pytest.importorskip("transformers")


def test_multiple_choice_scorer_agrees_with_transformers_on_an_exported_model(tmp_path):
    """A tiny model trained on sample shards, exported; the same task scored by our scorer
    and by GPT2LMHeadModel + AutoTokenizer with the harness's recipe by hand."""
    from datacurate.stages.decompose import Decompose
    from datacurate.stages.tokenize import Tokenize
    from datacurate.train import checkpoint
    from datacurate.configs.train import load_train_config
    from datacurate.train.export import export_model
    from datacurate.train.loop import train
    from datacurate.formats.tokenizer import load_tokenizer

    docs = [orjson.loads(x) for x in (REPO / "sample_data" / "corpus" / "news.jsonl").read_bytes().splitlines()[:8]]
    Decompose(output=str(tmp_path / "shards"), min_log2=5, max_log2=7)(Tokenize()(pa.table(
        {"id": [d["id"] for d in docs], "domain": [d["domain"] for d in docs], "text": [d["text"] for d in docs]})))
    cfg = load_train_config({"steps": 3, "threads": 2, "eval_every": 0, "model": {"n_layer": 1, "n_head": 2, "n_embd": 32},
                             "data": {"tokens_per_step": 256, "eval_fraction": 0.0}},
                            shards=str(tmp_path / "shards"), output=str(tmp_path / "train"))
    ckpt = train(cfg, log=lambda m: None)["checkpoint"]
    export_model(ckpt, str(tmp_path / "hf"))
    items = [{"context": "The jury said", "choices": ["the election was fair", "a banana", "it"], "label": 0},
             {"context": "In the city of ", "choices": ["Atlanta", "purple sky elephants"], "label": 0},
             {"context": "He went home.", "choices": ["Then he slept", "élan vital", "x"], "label": 1}]
    tok, info = load_tokenizer()
    model, _ = checkpoint.load_model(ckpt)
    ours = score_task(model, items, lambda s: tok.encode(s, add_special_tokens=False).ids, info.eos_id,
                      model.shape.max_seq_len, "cpu")
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf")).eval()
    for item, lls in zip(items, ours["logliks"]):
        for choice, ll in zip(item["choices"], lls):
            ctx = hf_tok(item["context"].rstrip(), add_special_tokens=False)["input_ids"]
            cont_text = item["context"][len(item["context"].rstrip()):] + " " + choice
            whole = hf_tok(item["context"].rstrip() + cont_text, add_special_tokens=False)["input_ids"]
            cont = whole[len(ctx):]
            with torch.no_grad():
                logits = hf(torch.tensor([whole[:-1]])).logits[0].double()
            logp = torch.log_softmax(logits, -1)[-len(cont):].gather(1, torch.tensor(cont)[:, None]).sum().item()
            assert ll == pytest.approx(logp, abs=1e-4)


# ----------------------------------------------------------------------------- configuration


def test_config_errors_are_one_line(tmp_path):
    base = {"input": str(TARGET), "output": str(tmp_path / "o"), "eval": {"text": {"t": str(TARGET)}},
            "arms": {"a": {"stages": ["tokenize", "decompose"]}, "b": {"stages": ["tokenize", "decompose"]}}}
    cfg = load_ablation_config(base)
    assert cfg.baseline == "a" and cfg.seeds == [0, 1, 2]
    bad = [({"budgte": {}}, "unknown key 'budgte' (did you mean 'budget'?)"),
           ({"baseline": "c"}, "baseline: 'c' is not an arm"),
           ({"arms": {"a": {"stages": ["tokenize"]}, "b": {"stages": ["tokenize", "decompose"]}}},
            "no decompose stage"),
           ({"arms": {"a": {"stages": [], "pipeline": "x.yaml"}, "b": {"stages": []}}}, "an arm is one of"),
           ({"arms": {"a": {"stages": ["tokenize", "decompose"], "train": {"steps": 5}},
                      "b": {"stages": ["tokenize", "decompose"]}}}, "train.steps is the budget's"),
           ({"arms": {"a": {"base": "pipelines/sample.yaml", "set": {"heuristics.gopher_quality.min_stop_wrd": 0.1}},
                      "b": {"stages": ["tokenize", "decompose"]}}}, "min_stop_wrd"),
           ({"eval": {}}, "eval: give at least one text: or tasks: entry")]
    for change, msg in bad:
        with pytest.raises(ConfigError, match=re.escape(msg)) as e:
            load_ablation_config({**base, **change})
        assert "\n" not in str(e.value)
    cfg = load_ablation_config({**base, "arms": {"s": {"base": "pipelines/sample.yaml", "set": {
        "heuristics.gopher_quality.min_stop_word_ratio": 0.0}}, "b": base["arms"]["b"]}},
        ["budget.tokens=1000", "arms.s.set.langid.min_score=0.5"])
    assert cfg.budget.tokens == 1000 and cfg.arms["s"].set["langid.min_score"] == 0.5


# ----------------------------------------------------------------------------- end to end


def _ablation(tmp, arms: dict, tokens: int, seeds: int = 3, eval_docs: int = 6) -> dict:
    lines = TARGET.read_bytes().splitlines()
    (tmp / "heldout.jsonl").write_bytes(b"\n".join(lines[:eval_docs]) + b"\n")
    return {"input": str(tmp / "corpus.jsonl"), "output": str(tmp / "out"), "arms": arms,
            "budget": {"model": {"preset": "tiny"}, "tokens": tokens, "seeds": seeds, "device": "cpu",
                       "train": {"threads": 2, "checkpoint_every": 5, "optim": {"warmup_steps": 5},
                                 "data": {"tokens_per_step": 2048}}},
            "eval": {"text": {"prose": str(tmp / "heldout.jsonl")}}, "ray": {"num_cpus": 2}}


DECOMPOSE = {"decompose": {"min_log2": 6, "max_log2": 8}}


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "DATACURATE_FAULT"))}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=str(REPO), **extra)
    return env


def _ablate(cfg_path, *args, env=None):
    return subprocess.run([sys.executable, "-m", "datacurate.cli", "ablate", str(cfg_path), "--no-report", *args],
                          env=env or _env(), capture_output=True, text=True, timeout=900, cwd=REPO)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_identical_arms_then_kill_and_resume(tmp_path):
    """Two identical arms: a difference of 0 on every seed, an interval holding 0. The
    same ablation killed (SIGKILL of the driver) right after its second seed's eval,
    then ``--resume``: nothing finished is redone and ablation.json is the same."""
    docs = [orjson.loads(x) for x in (REPO / "sample_data" / "corpus" / "news.jsonl").read_bytes().splitlines()[:40]]
    with open(tmp_path / "corpus.jsonl", "wb") as f:
        f.writelines(orjson.dumps(d) + b"\n" for d in docs)
    arm = {"stages": ["tokenize", DECOMPOSE]}
    cfg = _ablation(tmp_path, {"a": arm, "b": arm}, tokens=8192, seeds=2, eval_docs=3)
    (tmp_path / "ab.yaml").write_text(yaml.safe_dump(cfg))
    res = _ablate(tmp_path / "ab.yaml", "--output", str(tmp_path / "clean"))
    assert res.returncode == 0, res.stderr[-3000:]
    clean = json.loads((tmp_path / "clean" / "ablation.json").read_text())
    d = clean["diffs"]["b"]["prose"]
    assert d["seeds"] == [0.0, 0.0] and d["ci"][0] <= 0 <= d["ci"][1] and not d["distinguishable"]
    assert "within seed noise" in res.stdout and "one tokenizer for all arms" in res.stdout
    # every phase announced, each unit's training progress shown (step, loss, ETA)
    assert "[ablate] 2 arms x 2 seeds: each arm's curation, then its trainings (4 steps x 2,048 tokens)" in res.stderr
    assert "[ablate] a: curation -> " in res.stderr and "[ablate] b seed 1: eval on prose" in res.stderr
    assert re.search(r"\[ablate\] a seed 0: training step 4/4  loss \d+\.\d+ .* ETA 0:00\n", res.stderr), res.stderr
    assert clean["arms"]["a"]["epochs"] == pytest.approx(clean["arms"]["a"]["train_tokens"] / clean["arms"]["a"]["kept_tokens"])

    fault_dir = tmp_path / "faults"
    killed = _ablate(tmp_path / "ab.yaml", env=_env(DATACURATE_FAULT="ablate:seed:1:kill-driver",
                                                    DATACURATE_FAULT_DIR=str(fault_dir)))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    out = tmp_path / "out"
    assert not (out / "ablation.json").exists() and (out / "a" / "seed-1" / "eval.json").exists()
    before = {p: os.stat(out / "a" / p).st_mtime_ns for p in ("seed-0/eval.json", "seed-1/eval.json",
                                                               "curated/stats.json", "seed-0/final.json")}
    resumed = _ablate(tmp_path / "ab.yaml", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resume: a: curation was complete" in resumed.stderr
    assert "resume: a seed 0: trained and evaluated before" in resumed.stderr
    assert "resume: a seed 1: trained and evaluated before" in resumed.stderr
    assert {p: os.stat(out / "a" / p).st_mtime_ns for p in before} == before
    assert json.loads((out / "ablation.json").read_text()) == clean
    again = _ablate(tmp_path / "ab.yaml", "--resume", "--set", "budget.tokens=4096")
    assert again.returncode == 2 and "another configuration" in again.stderr


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_arms_and_seeds_run_as_parallel_ray_jobs(tmp_path):
    """``jobs: 2``: curations and trainings are Ray tasks, two at a time. The first training
    to start stops at a fault point and is let go only once a second training has started,
    which a run of one unit after another never reaches (the test would time out). Two
    identical arms, each seed trained in its own worker: the paired differences are 0."""
    import time

    docs = [orjson.loads(x) for x in (REPO / "sample_data" / "corpus" / "news.jsonl").read_bytes().splitlines()[:40]]
    with open(tmp_path / "corpus.jsonl", "wb") as f:
        f.writelines(orjson.dumps(d) + b"\n" for d in docs)
    arm = {"stages": ["tokenize", DECOMPOSE]}
    cfg = {**_ablation(tmp_path, {"a": arm, "b": arm}, tokens=4096, seeds=2, eval_docs=3), "jobs": 2}
    (tmp_path / "ab.yaml").write_text(yaml.safe_dump(cfg))
    faults = tmp_path / "faults"
    proc = subprocess.Popen([sys.executable, "-m", "datacurate.cli", "ablate", str(tmp_path / "ab.yaml"), "--no-report"],
                            env=_env(DATACURATE_FAULT="ablate:train:0:wait", DATACURATE_FAULT_DIR=str(faults)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 600
        while not (faults / "ablate.train.1").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (faults / "ablate.train.1").exists(), "a second training never started while the first waited"
        (faults / "ablate.train.0.go").touch()
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert "up to 2 at once on Ray" in stderr
    units = {u["unit"]: u for u in map(json.loads, (tmp_path / "out" / "_ablate" / "units.jsonl").read_text().splitlines())}
    assert set(units) == {"a", "b", "a/seed-0", "a/seed-1", "b/seed-0", "b/seed-1"}
    runs = [u for k, u in units.items() if "/" in k]
    assert any(x["started"] < y["started"] < x["ended"] for x in runs for y in runs)  # two ran at the same time
    assert len({u["pid"] for u in runs}) >= 2
    summary = json.loads((tmp_path / "out" / "ablation.json").read_text())
    assert summary["diffs"]["b"]["prose"]["seeds"] == [0.0, 0.0]
    assert all((tmp_path / "out" / arm / f"seed-{s}" / "eval.json").is_file() for arm in "ab" for s in (0, 1))


def test_a_failed_parallel_unit_is_its_own_one_line_error(ray_session):
    """A unit's error reaches the driver as itself (a ConfigError: the CLI's one line), not
    as Ray's multi-line task-error wrapper."""
    from datacurate.core.coerce import parse_override
    from datacurate.engine.ray.jobs import Job, run_jobs

    with pytest.raises(ConfigError) as e:
        list(run_jobs([Job("bad", parse_override, ("no-equals-sign",))], 1))
    assert str(e.value) == "--set 'no-equals-sign': expected KEY=VALUE"
    assert not type(e.value).__module__.startswith("ray")


def test_heuristics_beat_no_filter_on_half_junk_corpus(tmp_path):
    """Half Brown news prose, half generated junk (repeated lines, symbol soup,
    boilerplate); at equal tokens the heuristics arm has the lower loss on unseen Brown
    prose (sample_data/target) and the paired interval excludes 0."""
    from datacurate.configs.ablation import load_ablation_config
    from datacurate.engine.ablate import run_ablation

    write_corpus(tmp_path / "corpus.jsonl", n_prose=60)
    cfg = load_ablation_config(_ablation(tmp_path, {"all": {"stages": ["tokenize", DECOMPOSE]},
                                                     "heuristics": {"stages": ["heuristics", "tokenize", DECOMPOSE]}},
                                         tokens=12 * 2048))
    summary = run_ablation(cfg, log=lambda m: None, report=False)
    d = summary["diffs"]["heuristics"]["prose"]
    assert d["ci"][1] < 0 and d["distinguishable"] and d["better"], d
    assert summary["arms"]["heuristics"]["kept_tokens"] < summary["arms"]["all"]["kept_tokens"]
    assert summary["arms"]["heuristics"]["epochs"] > summary["arms"]["all"]["epochs"]
    from datacurate.cli import main

    assert main(["report", str(tmp_path / "out")]) == 0  # the ablation section of the run report
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Ablation</h2>" in page and "better, outside seed noise" in page and "<script" not in page
    assert page.count("<polyline") == 2  # both arms' loss curves on one plot


def test_unit_log_shows_phases_and_throttled_steps():
    from datacurate.engine import ablate

    shown = []
    say = ablate._unit_log(shown.append, "x seed 0")
    for line in ["[datacurate] segment 0: tasks 1/6", "[doremi] round 1/1: reference model, 40 steps",
                 "[train] tiny GPT 2x128: 5 parameters", "[train] step 1/40  loss 9.0  ETA 0:10",
                 "[train] step 2/40  loss 8.0  ETA 0:09", "[train] eval at step 40: all 7.0",
                 "[train] step 40/40  loss 7.0  ETA 0:00", "[datacurate] resume: a: skipped 1 of 1"]:
        say(line)
    assert shown == ["[ablate] x seed 0: DoReMi round 1/1: reference model, 40 steps",
                     "[ablate] x seed 0: training step 1/40  loss 9.0  ETA 0:10",
                     "[ablate] x seed 0: training step 40/40  loss 7.0  ETA 0:00",
                     "[ablate] x seed 0: curation resume: a: skipped 1 of 1"]


# ----------------------------------------------------------------------------- curves, shipped ablations


def test_curves_loss_at_a_budget_and_tokens_to_a_loss():
    from datacurate.core.curves import at, cumulative, first_reach

    xs, ys = [10, 20, 40], [8.0, 7.0, 6.0]
    assert at(xs, ys, 30) == pytest.approx(6.5) and at(xs, ys, 10) == 8.0 and at(xs, ys, 40) == 6.0
    assert at(xs, ys, 5) is None and at(xs, ys, 41) is None
    assert first_reach(xs, ys, 6.5) == pytest.approx(30) and first_reach(xs, ys, 8.5) == 10
    assert first_reach(xs, ys, 5.9) is None
    spent = cumulative([{"step": 2, "seq_len": 64, "tokens_per_s": 100.0}, {"step": 1, "seq_len": 128, "tokens_per_s": 50.0}],
                       lambda t: 1000 + t, 200)
    assert spent == {1: (200 * 1128, 4.0), 2: (200 * 1128 + 200 * 1064, 6.0)}


def test_shipped_rho1_ablation_at_a_toy_budget(tmp_path):
    """pipelines/ablations/rho1.yaml end to end on a few documents: held-out domains no arm
    reads, the reference trained first, curves, loss at equal FLOPs, tokens to the
    baseline's final loss, and the Science table script reading the result."""
    from datacurate.engine.ablate import run_ablation

    rows = []
    for name in ("fiction.jsonl.gz", "learned.jsonl", "news.jsonl"):
        raw = (REPO / "sample_data" / "corpus" / name).read_bytes()
        rows += [orjson.loads(x) for x in (gzip.decompress(raw) if name.endswith(".gz") else raw).splitlines()[:4]]
    (tmp_path / "corpus.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (tmp_path / "target.jsonl").write_bytes(b"\n".join(TARGET.read_bytes().splitlines()[:3]) + b"\n")
    cfg = load_ablation_config(str(REPO / "pipelines" / "ablations" / "rho1.yaml"), [
        f"input.path={tmp_path / 'corpus.jsonl'}", f"output={tmp_path / 'out'}", "ray.num_cpus=2",
        f"reference.input.path={tmp_path / 'target.jsonl'}", "reference.steps=2", "budget.tokens=4096",
        "budget.seeds=2", "eval.curve_every=1", "holdout.fraction=0.5", "holdout.max_docs=1"])
    s = run_ablation(cfg, log=lambda m: None, report=False)
    held = {d: n for d, n in s["holdout"]["heldout_docs"].items()}
    assert held == {"fiction": 1, "learned": 1, "news": 1} and s["holdout"]["train_docs"] == 9
    train_ids = {orjson.loads(x)["id"] for x in (tmp_path / "out" / "_ablate" / "holdout" / "train.jsonl").read_bytes().splitlines()}
    assert len(train_ids) == 9 and len(train_ids | {r["id"] for r in rows}) == 12
    arm = s["arms"]["rho1"]
    for k in range(2):
        sc = {n: arm["eval"][n]["seeds"][k] for n in ("heldout/fiction", "heldout/learned", "heldout/news")}
        assert arm["eval"]["domains_worst"]["seeds"][k] == max(sc.values())
        assert arm["eval"]["target_like"]["seeds"][k] == pytest.approx((sc["heldout/fiction"] + sc["heldout/learned"]) / 2)
        assert [p["step"] for p in arm["curves"][k]["points"]] == [1, 2]
    ends = [c["points"][-1]["flops"] for a in s["arms"].values() for c in a["curves"]]
    assert s["compute_budget"]["flops"] == min(ends)  # the same model and lengths: equal FLOPs per step
    reach = s["diffs"]["rho1"]["target_like"]["to_baseline_final"]
    assert len(reach["tokens"]) == 2 and reach["baseline_tokens"] == [4096, 4096]
    assert (tmp_path / "out" / "_ablate" / "reference" / "train" / "final.json").exists()
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "rho1.ablation.json").write_text(json.dumps(s))
    table = run_script("science_table.py", "--results", tmp_path / "res").stdout
    assert "| RHO-1 | rho1 vs full (2 seeds) | target_like" in table and "tokens to reach full's final loss" in table


def test_readme_science_table_is_the_generated_one():
    """README's Science table is what benchmarks/science_table.py makes of the committed
    ablation.json files (regenerate with --write after a rerun)."""
    res = run_script("science_table.py", "--check")
    assert res.returncode == 0, res.stdout + res.stderr

