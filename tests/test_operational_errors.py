"""Operational failures for real, through the CLI in subprocesses: a full disk (a small
tmpfs), OUT not writable, an input that vanishes mid-run, an S3 endpoint that stops
answering mid-run. Each ends with one line naming the path and the cause (exit 2 before
any work, 3 for a run that had started, with a ``--resume`` hint), no traceback; after
the cause is fixed, ``--resume`` gives the outputs of an uninterrupted run.

Mid-run failures are placed with the ``wait`` fault action: the first map task stops
after its work until the test has broken something, so nothing depends on timing."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import orjson
import pytest
import yaml

from datacurate.phases import faults
from tests.cli_run import clean_env as _env, cmd as _cmd, run as _run
from tests.outputs import assert_same

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "sample_data" / "corpus"


def _one_line(res, code: int, *words: str) -> str:
    """The run failed with exit ``code`` and one error line holding ``words``, no traceback."""
    assert res.returncode == code, (res.returncode, res.stderr[-3000:])
    errors = [x for x in res.stderr.splitlines() if not x.startswith("[datacurate]")]
    assert len(errors) == 1 and errors[0].startswith("datacurate: error: "), res.stderr[-3000:]
    assert "Traceback" not in res.stderr + res.stdout
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


def _write_corpus(d: Path) -> Path:
    """About 400 documents (news + learned) in four JSONL files, 20 of them exact copies."""
    docs = []
    for name in ("news.jsonl", "learned.jsonl"):
        docs += [orjson.loads(x) for x in (CORPUS / name).read_bytes().splitlines() if x.strip()]
    docs += [{**doc, "id": f"copy-{i}"} for i, doc in enumerate(docs[:20])]
    d.mkdir(parents=True, exist_ok=True)
    for k in range(4):
        (d / f"part-{k}.jsonl").write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in docs[k::4]))
    return d


def _pipeline(d: Path, inputs: str) -> Path:
    cfg = {"input": {"path": inputs}, "output": str(d / "unused"),
           # one CPU: while the first task waits at its fault point no other task runs
           "ray": {"num_cpus": 1},
           "stages": [{"heuristics": {}}, {"exact_dedup": {"mode": "document", "expected_items": 10_000}}]}
    path = d / "pipeline.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """(pipeline on local files, the input directory, a clean run's OUT)."""
    d = tmp_path_factory.mktemp("operr")
    inputs = _write_corpus(d / "in")
    pipeline = _pipeline(d, str(inputs))
    clean = d / "clean"
    res = _run(pipeline, clean)
    assert res.returncode == 0, res.stderr[-3000:]
    return pipeline, inputs, clean


def _paused(pipeline: Path, out: Path, fdir: Path, *args, env=None) -> subprocess.Popen:
    """A run whose first heuristics task waits, after its work, until :func:`_release`."""
    env = env or _env()
    env.update(DATACURATE_FAULT="heuristics:map:0:wait", DATACURATE_FAULT_DIR=str(fdir))
    proc = subprocess.Popen(_cmd(pipeline, out, *args), env=env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while not faults.fired("heuristics", "map", 0, str(fdir)):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - t0 < 300, "the run never reached its fault point"
        time.sleep(0.05)
    return proc


def _release(proc: subprocess.Popen, fdir: Path) -> subprocess.CompletedProcess:
    (fdir / "heuristics.map.0.go").touch()
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_disk_full_is_one_line_and_resume_finishes(local, tmp_path):
    pipeline, _, clean = local
    disk = tmp_path / "disk"
    disk.mkdir()
    used = sum(p.stat().st_size for p in clean.rglob("*") if p.is_file())
    size_kb = max(64, used // 2 // 1024)  # room for about half of the outputs
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        out = disk / "out"
        res = _run(pipeline, out)
        line = _one_line(res, 3, "no space left on device", str(out), "run again with --resume")
        log = line.rsplit("(traceback: ", 1)[-1].rstrip(")")
        assert "Traceback" in Path(log).read_text()  # the traceback the line names
        subprocess.run(["mount", "-o", "remount,size=256m", str(disk)], check=True)
        res = _run(pipeline, out, "--resume")
        assert res.returncode == 0, res.stderr[-3000:]
        assert "skipped" in res.stderr  # the tasks done before the disk filled were not redone
        assert_same(clean, out)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _without_root_override() -> list:
    """A command prefix that takes root's power to write anywhere away (root's processes
    ignore file modes): uid 0 stays, the capabilities DAC_OVERRIDE / DAC_READ_SEARCH go."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without util-linux setpriv: cannot make a directory unwritable")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_output_not_writable_is_one_line_before_any_work(local, tmp_path):
    pipeline, _, clean = local
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    out = locked / "out"
    res = subprocess.run(_without_root_override() + _cmd(pipeline, out), env=_env(), capture_output=True,
                         text=True, timeout=600, cwd=REPO)
    _one_line(res, 2, f"cannot write to {out}", "permission denied")
    assert not out.exists()
    locked.chmod(0o755)
    res = _run(pipeline, out, "--resume")  # nothing had started: --resume starts the run
    assert res.returncode == 0, res.stderr[-3000:]
    assert_same(clean, out)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_an_input_that_vanishes_mid_run_is_one_line_and_resume_finishes(local, tmp_path):
    pipeline, inputs, clean = local
    out, fdir = tmp_path / "out", tmp_path / "faults"
    proc = _paused(pipeline, out, fdir)
    away = inputs.with_name("in-away")
    inputs.rename(away)  # every input file vanishes; the waiting task has read its own
    try:
        res = _release(proc, fdir)
    finally:
        away.rename(inputs)
    _one_line(res, 3, str(inputs), "no such file or directory", "run again with --resume")
    res = _run(pipeline, out, "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "skipped" in res.stderr
    assert_same(clean, out)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_an_s3_endpoint_that_stops_answering_mid_run_is_one_line_and_resume_finishes(tmp_path):
    from moto.server import ThreadedMotoServer

    from tests import s3
    from tests.conftest import _free_port

    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = _env(AWS_ENDPOINT_URL=endpoint)
    try:
        os.environ["AWS_ENDPOINT_URL"], saved = endpoint, os.environ["AWS_ENDPOINT_URL"]
        try:
            s3.make_bucket("opserr")
            s3.upload_dir(_write_corpus(tmp_path / "in"), "s3://opserr/in")
        finally:
            os.environ["AWS_ENDPOINT_URL"] = saved
        pipeline = _pipeline(tmp_path, "s3://opserr/in")
        clean = tmp_path / "clean"
        res = _run(pipeline, clean, env=env)
        assert res.returncode == 0, res.stderr[-3000:]

        out, fdir = tmp_path / "out", tmp_path / "faults"
        proc = _paused(pipeline, out, fdir, env=dict(env))
        server.stop()  # the endpoint stops answering: connections are refused
        try:
            res = _release(proc, fdir)
        finally:
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
            server.start()  # the same in-process store: the bucket is still there
        _one_line(res, 3, "s3://opserr/in", f"the S3 endpoint {endpoint} does not answer", "run again with --resume")
        res = _run(pipeline, out, "--resume", env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "skipped" in res.stderr
        assert_same(clean, out)
    finally:
        server.stop()


def test_debug_prints_the_traceback(local, tmp_path):
    pipeline, inputs, _ = local
    out, fdir = tmp_path / "out", tmp_path / "faults"
    proc = _paused(pipeline, out, fdir, "--debug")
    away = inputs.with_name("in-away2")
    inputs.rename(away)
    try:
        res = _release(proc, fdir)
    finally:
        away.rename(inputs)
    assert res.returncode == 3 and "Traceback" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("datacurate: error: ")
