"""``benchmarks/model_classifier_gpu.sh --smoke``: the prepared GPU benchmark runs its code on
the CPU with a tiny model, so it is kept working on machines without a GPU."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_smoke_runs_and_agrees(tmp_path):
    out = tmp_path / "gpu.json"
    p = subprocess.run(["bash", "benchmarks/model_classifier_gpu.sh", "--smoke", "--out", str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["device"] == "cpu" and res["docs"] == 24 and res["plain_docs"] == 12
    assert res["max_abs_score_diff"] < 1e-4  # float32 on CPU: the same scores as the plain loop
    assert res["docs_per_s"]["model_classifier"] > 0 and res["nemo_floor_docs_per_s_per_gpu"] == 437.5
