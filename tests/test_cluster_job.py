"""The README's "Running on a Ray cluster" path: ``ray job submit`` as the section writes it,
against a ``ray start --head`` cluster on private ports, puts the outputs where the job
says; inside a job a relative path datacurate would write to is refused with one line.

The cluster runs in its own temp dir (``ray.init()`` with no address in other tests finds
clusters through ``/tmp/ray/ray_current_cluster``, which it never writes) and is stopped by
killing the process group of its ``ray start --block``: ``ray stop`` would stop every Ray
process on the machine, other tests' included.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest

from datacurate.cli import main
from datacurate.engine.ray.cluster import JOB_ENV, refuse_relative_in_job
from tests.cli_run import clean_env, free_port, wait_port

REPO = Path(__file__).resolve().parent.parent
IN_JOB = {JOB_ENV: json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg_0.zip"}})}


def _readme_job_command() -> str:
    """The ``ray job submit`` line of the README's cluster section (continuations joined)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Running on a Ray cluster"):]
    block = section[section.index("```bash"):section.index("```", section.index("```bash") + 3)]
    line = block[block.index("ray job submit"):].split("\n\n")[0]
    return re.sub(r"\\\n\s*", "", line).splitlines()[0].strip()


def test_relative_outputs_are_refused_inside_a_ray_job(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(JOB_ENV, IN_JOB[JOB_ENV])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cases = [(["run", str(REPO / "pipelines" / "heuristics_only.yaml")], "output: out/"),
             (["run", str(REPO / "pipelines" / "heuristics_only.yaml"), "--output", str(tmp_path / "o"),
               "--set", "train={shards: s, output: runs/t}"], "train.output: runs/t is a relative path"),
             (["train", "--shards", str(tmp_path), "--output", "runs/a"], "output: runs/a is a relative path"),
             (["export", str(tmp_path), "--output", "hf"], "--output: hf is a relative path")]
    for argv, start in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("datacurate: error: " + start), err
        assert "inside a Ray job" in err and "absolute path on storage every node shares" in err and "s3://" in err
    refuse_relative_in_job({"output": str(tmp_path), "x": "s3://b/p"})  # absolute and s3:// pass
    monkeypatch.delenv(JOB_ENV)
    refuse_relative_in_job({"output": "out/x"})  # outside a job a relative path is the user's cwd


@pytest.fixture
def head(tmp_path):
    """A one-node cluster (``ray start --head --block``) with its job server; its dashboard port."""
    ports = {k: free_port() for k in ("port", "dashboard-port", "ray-client-server-port",
                                       "dashboard-agent-listen-port")}
    temp = tempfile.mkdtemp(prefix="rj", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = clean_env(RAY_TMPDIR=temp, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    log_path = tmp_path / "head.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["ray", "start", "--head", "--block", "--num-cpus=2", "--disable-usage-stats",
                                 "--dashboard-host=127.0.0.1", f"--temp-dir={temp}",
                                 *(f"--{k}={v}" for k, v in ports.items())],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(ports["dashboard-port"], proc, log_path, timeout=180)
        yield ports["dashboard-port"], env
    finally:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 30)):  # `ray start --block` often outlives SIGTERM
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        shutil.rmtree(temp, ignore_errors=True)


def test_ray_job_submit_as_the_readme_writes_it(head, tmp_path):
    """The README's line, run by a shell in a copy of the checkout (its ``$PWD/out/sample``
    is then the copy's), with the test's dashboard address; a small input and no training
    keep it short. The outputs are where the job's ``outputs:`` line says, absolute."""
    port, env = head
    line = _readme_job_command()
    assert line.startswith("ray job submit --address http://127.0.0.1:8265 --working-dir . -- "), line
    words = shlex.split(line)
    assert words[words.index("--") + 1:words.index("--") + 5] == ["python", "-m", "datacurate.cli", "run"]
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(".git", ".venv", "out", "__pycache__", ".*cache"))
    small = checkout / "small"  # shipped with the working directory, read through a relative path
    small.mkdir()
    for name in ("news.jsonl", "learned.jsonl"):
        rows = (REPO / "sample_data" / "corpus" / name).read_bytes().splitlines()[:20]
        (small / name).write_bytes(b"\n".join(rows) + b"\n")
    command = line.replace("127.0.0.1:8265", f"127.0.0.1:{port}") + " --input small --set train=null --no-report"
    res = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.stdout[-4000:], res.stderr[-2000:])
    said = re.search(r"^outputs: (.*)$", res.stdout, re.M)
    assert said, res.stdout[-3000:]
    places = said.group(1).split(", ")
    out = checkout / "out" / "sample"
    assert places[:3] == [f"{out}/kept", f"{out}/rejected", f"{out}/stats.json"], places
    for place in places:
        assert os.path.exists(place), place
    stats = orjson.loads((out / "stats.json").read_bytes())
    assert stats["totals"]["read"] == 40 and stats["totals"]["accounted"]
    assert (out / "shards" / "manifest.json").is_file()
