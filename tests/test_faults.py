"""Faults for real, through the CLI in subprocesses (each with its own Ray):

* a worker process dies (``os._exit``) after its task's side effects, once in a map
  stage and in each global stage's phases: Ray retries and the outputs are identical to a
  clean run (exact dedup rejected every document of the retried task before its filter
  actors answered re-runs as the first time);
* the driver, with its embedded Ray, is killed (SIGKILL) in the first map segment,
  inside near dedup and during decompose, each time followed by ``--resume``: the last
  one ends with outputs identical to an uninterrupted run, every resume skips finished
  tasks, and the earlier complete run in OUT stays whole until the new one completes;
* the same global stages in one task (the small-input path): identical outputs, also
  when that task's worker dies;
* a ``ray start`` cluster on the machine is killed while two runs with no address and
  one joined to it are going: the two private runs complete identically, the joined one
  stops within a minute with one line;
* SIGTERM to the driver in a map stage, then SIGINT to its process group (a terminal's
  Ctrl-C) inside near dedup: one line each, exit 143 / 130, no Ray process left; ``--resume``
  then ends with the uninterrupted outputs.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest
import yaml

from datacurate.phases import faults
from tests.cli_run import clean_env as _env, cmd as _cmd, free_port as _free_port, run as _run, \
    wait_port as _wait_port
from tests.outputs import assert_same, tree_digest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "sample_data" / "corpus"


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    """About 400 documents (news + learned) with 20 exact and 20 near copies, in read
    tasks of ~500 KB; every kind of global stage."""
    d = tmp_path_factory.mktemp("faults")
    docs = []
    for name in ("news.jsonl", "learned.jsonl"):
        docs += [orjson.loads(line) for line in (CORPUS / name).read_bytes().splitlines() if line.strip()]
    extra = []
    for i, doc in enumerate(docs[:40]):
        text = doc["text"] if i < 20 else doc["text"].replace(" the ", " a ", 1)
        extra.append({**doc, "id": f"copy-{i}", "text": text})
    with open(d / "in.jsonl", "wb") as f:
        for doc in docs + extra:
            f.write(orjson.dumps(doc) + b"\n")
    cfg = {
        "input": {"path": str(d / "in.jsonl"), "chunk_bytes": 500_000},
        "output": str(d / "unused"),
        "ray": {"num_cpus": 2, "small_input_docs": 0},  # the distributed phases (the one-task path: below)
        "stages": [
            {"heuristics": {}},
            {"exact_dedup": {"mode": "document", "num_shards": 2, "expected_items": 10_000}},
            {"near_dedup": {"num_partitions": 2}},
            {"dsir": {"target": {"domains": ["news"]}, "num_to_sample": 0.7, "seed": 0}},
            {"tokenize": {}},
            {"decompose": {"min_log2": 6, "max_log2": 9}},
        ],
    }
    path = d / "pipeline.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def clean(pipeline, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "out"
    res = _run(pipeline, out)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = orjson.loads((out / "stats.json").read_bytes())
    st = stats["stages"]
    # every global stage had work to do, so a fault in it can change something
    assert st["exact_dedup"]["rejected_total"] >= 20 and st["near_dedup"]["rejected_total"] >= 10
    assert st["dsir"]["rejected_total"] > 0 and st["decompose"]["metrics"]["sequences_written"] > 0
    return out


def test_worker_deaths_in_every_kind_of_stage_leave_the_output_unchanged(pipeline, clean, tmp_path):
    armed = ["heuristics:map:1", "exact_dedup:decide:0", "exact_dedup:write:0", "near_dedup:signatures:1",
             "near_dedup:edges:0", "near_dedup:survivors:0", "dsir:fit:0", "dsir:weigh:1", "dsir:decide:0",
             "decompose:count:0", "decompose:write:1"]
    fdir = tmp_path / "faults"
    out = tmp_path / "out"
    res = _run(pipeline, out, env=_env(DATACURATE_FAULT=",".join(armed), DATACURATE_FAULT_DIR=str(fdir)))
    assert res.returncode == 0, res.stderr[-3000:]
    for spec in armed:
        stage, phase, n = spec.split(":")
        assert faults.fired(stage, phase, int(n), str(fdir)), f"{spec} never fired"
    assert_same(clean, out)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_small_input_path_gives_the_same_output_and_survives_a_worker_death(pipeline, clean, tmp_path):
    """Below ray.small_input_docs a global stage runs its phases in one task: same
    decisions, shards and saved filter as the distributed phases; its task retried after
    a worker death (in near dedup, after the signatures were journaled) changes nothing."""
    fdir = tmp_path / "faults"
    out = tmp_path / "out"
    res = _run(pipeline, out, "--set", "ray.small_input_docs=100000",
               env=_env(DATACURATE_FAULT="near_dedup:edges:0", DATACURATE_FAULT_DIR=str(fdir)))
    assert res.returncode == 0, res.stderr[-3000:]
    assert faults.fired("near_dedup", "edges", 0, str(fdir))
    assert "near_dedup signatures: skipped" in res.stdout + res.stderr  # the retried task found them journaled
    assert_same(clean, out)


def _skipped(stderr: str) -> int:
    """Tasks the log says a resumed run skipped (per segment, global stage and phase)."""
    found = re.findall(r"resume: (?!in all)[^\n]*?skipped (\d+) of", stderr)
    assert found, stderr[-2000:]
    return sum(map(int, found))


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_driver_killed_three_times_then_resumed(pipeline, clean, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(clean, out)  # an earlier complete run of the same pipeline
    before = tree_digest(out)

    def killed_at(point: str, *args) -> subprocess.CompletedProcess:
        fdir = tmp_path / point.replace(":", "_")
        res = _run(pipeline, out, *args, env=_env(DATACURATE_FAULT=f"{point}:kill-driver", DATACURATE_FAULT_DIR=str(fdir)))
        stage, phase, n = point.split(":")
        assert faults.fired(stage, phase, int(n), str(fdir)), res.stderr[-3000:]
        assert res.returncode == -signal.SIGKILL, (res.returncode, res.stderr[-3000:])
        return res

    killed_at("heuristics:map:2")
    # the crashed run left the earlier complete run as it was, and nothing that looks complete of its own
    after = tree_digest(out)
    assert {k: v for k, v in after.items() if not k.startswith("_work/")} == before
    # resuming with another configuration: one line, exit 2, nothing touched
    other = _run(pipeline, out, "--resume", "--set", "dsir.seed=1")
    assert other.returncode == 2 and "another configuration" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1

    res = killed_at("near_dedup:edges:0", "--resume")
    assert _skipped(res.stderr) > 0
    res = killed_at("decompose:write:0", "--resume")
    assert _skipped(res.stderr) > 0
    assert not (out / "stats.json").exists() or tree_digest(out)["stats.json"] == before["stats.json"]
    res = _run(pipeline, out, "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    assert _skipped(res.stderr) > 0
    assert not (out / "_work").exists()
    assert_same(clean, out)


def _ray_processes(marker: str) -> list[str]:
    """Command lines of running processes that name ``marker`` (the run's Ray temp dir)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline[:200])
    return found


def _interrupted(pipeline: Path, out: Path, point: str, sig: int, tmp: Path, *args, group: bool = True) -> str:
    """A run held at fault point ``point`` gets ``sig``; its stderr. SIGINT goes to its
    process group as a terminal's Ctrl-C does, SIGTERM to its pid as ``kill`` does."""
    fdir, ray_tmp = tmp / point.replace(":", "_"), tempfile.mkdtemp(prefix="ri", dir="/tmp")
    log = tmp / f"{point.replace(':', '_')}.log"
    env = _env(DATACURATE_FAULT=f"{point}:wait", DATACURATE_FAULT_DIR=str(fdir), RAY_TMPDIR=ray_tmp)
    with open(log, "w") as err:  # SIGINT as the default (a background shell's child may start ignoring it)
        proc = subprocess.Popen(_cmd(pipeline, out, *args), env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            stage, phase, n = point.split(":")
            t0 = time.monotonic()
            while not faults.fired(stage, phase, int(n), str(fdir)) and proc.poll() is None:
                assert time.monotonic() - t0 < 300, log.read_text()[-2000:]
                time.sleep(0.2)
            assert _ray_processes(ray_tmp), "the run's Ray is not found by its temp dir"
            (os.killpg if sig == signal.SIGINT and group else os.kill)(proc.pid, sig)
            assert proc.wait(timeout=120) == 128 + sig, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    t0 = time.monotonic()
    while _ray_processes(ray_tmp) and time.monotonic() - t0 < 30:
        time.sleep(0.5)
    assert not _ray_processes(ray_tmp), _ray_processes(ray_tmp)  # the private Ray was shut down
    shutil.rmtree(ray_tmp, ignore_errors=True)
    return log.read_text()


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_sigterm_and_ctrl_c_say_one_line_and_resume_continues(pipeline, clean, tmp_path):
    out = tmp_path / "out"
    err = _interrupted(pipeline, out, "heuristics:map:1", signal.SIGTERM, tmp_path)
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "datacurate: interrupted during heuristics; run again with --resume to continue"
    err = _interrupted(pipeline, out, "near_dedup:edges:0", signal.SIGINT, tmp_path, "--resume")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == "datacurate: interrupted during near_dedup; run again with --resume to continue"
    res = _run(pipeline, out, "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    assert _skipped(res.stderr) > 0
    assert_same(clean, out)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
@pytest.mark.parametrize("group", [True, False], ids=["process-group", "driver-only"])
def test_ctrl_c_while_a_map_segment_waits_on_ray_says_one_line(pipeline, tmp_path, group):
    """Ctrl-C while the driver waits in ``ray.wait`` (engine/ray/tasks.py): Ray raises its own
    KeyboardInterrupt from its status check, not the CLI's Interrupted; still one line with the
    --resume hint and exit 130 (a 40-line traceback before)."""
    err = _interrupted(pipeline, tmp_path / "out", "heuristics:map:1", signal.SIGINT, tmp_path, group=group)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == "datacurate: interrupted during heuristics; run again with --resume to continue"


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_a_cluster_on_the_machine_dies_mid_run(pipeline, clean, tmp_path):
    port = _free_port()
    ray_bin = Path(sys.executable).parent / "ray"
    temp = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    log = open(tmp_path / "cluster.log", "w")
    cluster = subprocess.Popen([str(ray_bin), "start", "--head", f"--port={port}", "--num-cpus=1", "--block",
                                "--disable-usage-stats", "--include-dashboard=false", f"--temp-dir={temp}"],
                               env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_port(port, cluster, tmp_path / "cluster.log")
        time.sleep(3)  # the raylet registers after the GCS listens
        logs = {name: open(tmp_path / f"{name}.log", "w+") for name in ("a", "b", "joined")}
        runs = {name: subprocess.Popen(_cmd(pipeline, tmp_path / name, *args), env=_env(), cwd=REPO, text=True,
                                       stdout=logs[name], stderr=subprocess.STDOUT)
                for name, args in (("a", ()), ("b", ()), ("joined", ("--ray-address", f"127.0.0.1:{port}")))}
        joined_log = tmp_path / "joined.log"
        t0 = time.monotonic()
        while "global phases" not in joined_log.read_text() and time.monotonic() - t0 < 300:
            time.sleep(0.5)  # the joined run is past its first segment
        os.killpg(cluster.pid, signal.SIGKILL)
        killed = time.monotonic()
        runs["joined"].wait(timeout=120)
        text = joined_log.read_text()
        assert runs["joined"].returncode not in (0, None)
        assert time.monotonic() - killed < 60
        last = text.strip().splitlines()[-1]
        assert last.startswith("datacurate: lost the Ray cluster at ") and "--resume" in last, \
            (runs["joined"].returncode, text[-4000:])
        for name in ("a", "b"):
            runs[name].wait(timeout=600)
            assert runs[name].returncode == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
            assert_same(clean, tmp_path / name)
    finally:
        try:
            os.killpg(cluster.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        cluster.wait(timeout=30)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
