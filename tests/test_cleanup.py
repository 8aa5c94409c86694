"""The final clean-up cannot clear a finished run: the driver is killed for real in the
middle of deleting ``OUT/_work`` (fault point ``run:cleanup``), then ``--resume`` says the
run is complete, finishes the clean-up and leaves outputs identical to an uninterrupted
run; ``--resume`` on a complete run kept with ``output.keep_work`` says so too."""

import shutil
import signal
from pathlib import Path

import orjson
import pytest
import yaml

from datacurate.phases import faults, layout
from tests.cli_run import clean_env, run
from tests.outputs import assert_same

REPO = Path(__file__).resolve().parent.parent
COMPLETE = "holds a complete run of this configuration; nothing to do"


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    """news.jsonl with 10 exact copies: a map stage and a global stage (parts, decisions,
    a journal with many entries under ``_work``)."""
    d = tmp_path_factory.mktemp("cleanup")
    lines = [line for line in (REPO / "sample_data/corpus/news.jsonl").read_bytes().splitlines() if line.strip()]
    copies = [orjson.dumps({**orjson.loads(x), "id": f"copy-{i}"}) for i, x in enumerate(lines[:10])]
    (d / "in.jsonl").write_bytes(b"\n".join(lines + copies) + b"\n")
    cfg = {"input": {"path": str(d / "in.jsonl"), "chunk_bytes": 200_000}, "output": str(d / "unused"),
           "ray": {"num_cpus": 2},
           "stages": [{"heuristics": {}}, {"exact_dedup": {"mode": "document", "num_shards": 2}}]}
    path = d / "pipeline.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_killed_in_the_cleanup_then_resumed(pipeline, tmp_path):
    clean = tmp_path / "clean"
    res = run(pipeline, clean, "--set", "output.keep_work=true")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (clean / layout.WORK).is_dir()
    again = run(pipeline, clean, "--resume", "--set", "output.keep_work=true")  # a finished run, its work kept
    assert again.returncode == 0 and COMPLETE in again.stderr, again.stderr[-3000:]
    assert (clean / layout.WORK).is_dir()
    shutil.rmtree(clean / layout.WORK)

    out, fdir = tmp_path / "out", tmp_path / "faults"
    killed = run(pipeline, out, env=clean_env(DATACURATE_FAULT="run:cleanup:3:kill-driver",
                                              DATACURATE_FAULT_DIR=str(fdir)))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert faults.fired("run", "cleanup", 3, str(fdir))
    assert (out / "stats.json").is_file() and not (out / layout.WORK).exists()
    left = [p for p in (out / layout.TRASH).rglob("*") if p.is_file()]
    assert left and any("journal" in str(p) for p in left)  # killed with most of the tree, journal included, there

    resumed = run(pipeline, out, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert COMPLETE in resumed.stderr and "starting a new one" not in resumed.stderr
    assert not (out / layout.WORK).exists() and not (out / layout.TRASH).exists()
    assert_same(clean, out)
