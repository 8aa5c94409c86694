"""``benchmarks/gpu_check.sh --smoke``: the one-command GPU check runs every part on the CPU
at toy sizes (the fused loss head's race included) (so it is kept working between the sessions that have a GPU), writes its JSON
and prints its table."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def test_gpu_check_smoke_runs_every_part(tmp_path):
    out = tmp_path / "check.json"
    p = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--smoke", "--out", str(out)], cwd=REPO,
                       env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    result = json.loads(out.read_text())
    parts = result["parts"]
    assert result["mode"] == "smoke" and set(parts) == {"gpu_tests", "bench_train", "bench_fused", "train_e2e"}
    assert all(part["ok"] for part in parts.values()), parts
    assert parts["gpu_tests"]["skipped"] == 8  # no CUDA here: every gpu test collected, then skipped
    b = parts["bench_train"]
    r1 = b["throughput"][0]  # race 1: the baseline, ours with the plain head and with the fused one (chunked on CPU)
    assert r1["heads"] == {"ours": "plain", "ours_chunked": "chunked"} and set(r1["arms"]) == {"baseline", "ours", "ours_chunked"}
    assert r1["ratio_ours_over_baseline"] > 0 and set(r1["ratio_over_baseline"]) == {"ours", "ours_chunked"}
    assert b["grow_p2"]["loss_head"] in ("plain", "chunked")  # --grow-head best: the faster of the two at 128
    assert set(b["objectives"]["step_time_over_plain"]) == {"rho1_on_the_fly", "rho1_sidecar", "doremi_on_the_fly",
                                                            "doremi_sidecar"}
    f = parts["bench_fused"]  # the loss heads: plain vs our chunked one (no Liger on CPU)
    assert f["heads"] == ["plain", "chunked"] and f["curves"]["ok"] and f["curves"]["steps"] == 2
    (run,) = f["runs"]
    assert [(r["head"], r["micro_batch"]) for r in run["sweep"]] == [("plain", 2), ("chunked", 2), ("plain", 8),
                                                                     ("chunked", 8)]
    assert all(r["tokens_per_s"] > 0 and r["peak_memory_gib"] >= 0 for r in run["sweep"])
    t = parts["train_e2e"]
    assert t["steps"] == 12 and t["loss_last10_mean"] < t["loss_first"] and set(t["cli_eval"]) == {"all", "a", "b"}
    assert "ours_chunked (chunked)" in p.stdout and "train tiny: 12 steps" in p.stdout and "fused vs plain" in p.stdout
