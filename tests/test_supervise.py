"""The lost-cluster supervisor's probe: a gRPC server answers the HTTP/2 preface; a closed
port, and a listening socket whose process runs no code (a dying or stopped server: the
kernel still accepts connections), do not. The whole design is tested with a real
cluster killed mid-run in tests/test_faults.py."""

import os
import signal
import socket
import subprocess
import sys

from datacurate.engine.ray.supervise import answers


def test_a_closed_port_is_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert answers(f"127.0.0.1:{port}") is False


def test_a_stopped_server_that_still_accepts_is_not_alive():
    """A process that listens but never answers (here: stopped with SIGSTOP) gets no
    verdict of alive: the connection completes in the kernel, no frame comes back."""
    code = ("import socket,sys,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(8)\n"
            "print(s.getsockname()[1],flush=True)\ntime.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGSTOP)
        assert answers(f"127.0.0.1:{port}", timeout=1.0) is None  # no answer: not alive
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert answers(f"127.0.0.1:{port}", timeout=1.0) is False
    finally:
        proc.kill()
        proc.wait()


def test_a_live_ray_gcs_answers(ray_session):
    address = ray_session.get_runtime_context().gcs_address
    assert answers(address) is True


def test_every_way_of_naming_a_cluster_is_supervised(tmp_path, monkeypatch):
    import yaml

    from datacurate.cli import _cluster_address, build_parser

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml.safe_dump({"input": "sample_data/corpus", "output": str(tmp_path / "o"),
                                        "stages": [{"heuristics": {}}]}))
    parse = build_parser().parse_args
    assert _cluster_address(parse(["run", str(pipeline)])) is None  # an embedded Ray: nothing to watch
    assert _cluster_address(parse(["run", str(pipeline), "--set", "ray.address=10.0.0.1:6379"])) == "10.0.0.1:6379"
    assert _cluster_address(parse(["run", str(pipeline), "--ray-address", "10.0.0.2:6379"])) == "10.0.0.2:6379"
    assert _cluster_address(parse(["train", "--shards", "s", "--output", "o", "--ray-address", "h:1"])) == "h:1"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.3:6379")  # as `ray job submit` sets it
    assert _cluster_address(parse(["doremi", "--shards", "s", "--output", "o"])) == "10.0.0.3:6379"
    assert _cluster_address(parse(["stages"])) is None
