"""A Ray cluster on this machine whose nodes share nothing but object storage (issue 39):
a head with 0 CPUs, where drivers and jobs run, and worker nodes started with ``ray start
--address``, each in its own mount namespace with a private ``/tmp`` and ``/dev/shm``
(``unshare -m``, as root), so that nothing one node writes to local disk is seen by
another. Each node is its own session (``start_new_session``) and is stopped, or killed
mid-run, by its session id (``pkill -s SID``), never by ``ray stop``, which would stop
every Ray on the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.cli_run import REPO, clean_env, free_port, wait_port

NODE_SH = ("{keep}mount -t tmpfs tmpfs /tmp && {restore}mount -t tmpfs tmpfs /dev/shm && exec ray start --address {head} "
           "--num-cpus 1 --object-store-memory 150000000 --temp-dir /tmp/ray{k} --block --disable-usage-stats "
           "--dashboard-agent-listen-port {agent} --metrics-export-port {metrics}")


def installs_under_tmp() -> list[str]:
    """The checkout and the Python environment, where they live under /tmp (a clone made
    there, as CI may): a node's private /tmp would hide them, and a real node has datacurate
    installed, so they are mounted back into it at the same paths (nothing else of /tmp is)."""
    dirs = sorted({str(d) for d in (REPO.resolve(), Path(sys.prefix).resolve()) if str(d).startswith("/tmp/")})
    return [d for d in dirs if not any(d != o and d.startswith(o + "/") for o in dirs)]


def node_mounts() -> tuple[str, str]:
    """Shell steps around the private /tmp mount: keep the installs (a bind under a private
    /mnt taken before /tmp is covered), then bind them back at their paths."""
    dirs = installs_under_tmp()
    if not dirs:
        return "", ""
    keep = "mount -t tmpfs tmpfs /mnt && " + "".join(
        f"mkdir -p /mnt/keep{i} && mount --bind '{d}' /mnt/keep{i} && " for i, d in enumerate(dirs))
    restore = "".join(f"mkdir -p '{d}' && mount --bind /mnt/keep{i} '{d}' && " for i, d in enumerate(dirs))
    return keep, restore


def why_not() -> str | None:
    """Why private-mount nodes cannot be started here (None when they can)."""
    if os.geteuid() != 0:
        return "worker nodes with a private /tmp need root (unshare -m and mount)"
    if not shutil.which("unshare"):
        return "unshare(1) is not installed"
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                       capture_output=True, text=True)
    if p.returncode:
        return f"unshare -m is not allowed here: {p.stderr.strip()[:200]}"
    return None


class Cluster:
    def __init__(self, workers: int = 2, log_dir: Path | None = None, **node_env):
        self.temp = tempfile.mkdtemp(prefix="cn", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
        self.log_dir = Path(log_dir or self.temp)
        self.env = clean_env(PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", RAY_TMPDIR=self.temp,
                             **node_env)  # a node's workers inherit its environment (fault points: node_env)
        self.port, self.dashboard = free_port(), free_port()
        self.nodes: dict[str, subprocess.Popen] = {}
        self._start("head", ["ray", "start", "--head", "--block", "--num-cpus=0", "--disable-usage-stats",
                             "--dashboard-host=127.0.0.1", f"--temp-dir={self.temp}", f"--port={self.port}",
                             f"--dashboard-port={self.dashboard}", f"--ray-client-server-port={free_port()}",
                             f"--dashboard-agent-listen-port={free_port()}", "--object-store-memory=150000000"])
        try:
            wait_port(self.dashboard, self.nodes["head"], self.log_dir / "head.log", timeout=180)
            for k in range(1, workers + 1):
                self.add_worker(f"w{k}")
            self.wait_cpus(workers)
        except BaseException:
            self.stop()
            raise

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, name: str, argv: list[str]) -> None:
        with open(self.log_dir / f"{name}.log", "w") as log:
            self.nodes[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, cwd="/")

    def add_worker(self, name: str) -> None:
        keep, restore = node_mounts()
        sh = NODE_SH.format(keep=keep, restore=restore, head=self.address, k=name, agent=free_port(), metrics=free_port())
        self._start(name, ["unshare", "-m", "--propagation", "private", "sh", "-c", sh])

    def cpus(self) -> float:
        code = ("import ray,json; ray.init(address=%r, logging_level='ERROR'); "
                "print(json.dumps(sum(n['Resources'].get('CPU', 0) for n in ray.nodes() if n['Alive'])))" % self.address)
        try:
            p = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=120,
                               cwd="/")
        except subprocess.TimeoutExpired:  # the head not answering yet (a loaded machine)
            return 0.0
        return float(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 and p.stdout.strip() else 0.0

    def wait_cpus(self, n: int, timeout: float = 400) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for name, p in self.nodes.items():
                if p.poll() is not None and name != "head" and not name.startswith("dead"):
                    raise RuntimeError(f"node {name} exited: {(self.log_dir / f'{name}.log').read_text()[-2000:]}")
            if self.cpus() >= n:
                return
            time.sleep(1)
        head = self.nodes["head"].poll()
        raise TimeoutError(f"the cluster has not {n} CPUs after {timeout} s (head {'exited' if head is not None else 'up'}): "
                           + (self.log_dir / "head.log").read_text()[-1500:])

    def node_of(self, pid: int) -> str | None:
        """The live worker node a process belongs to (its session), if any."""
        try:
            sid = os.getsid(pid)
        except ProcessLookupError:
            return None
        return next((n for n, p in self.nodes.items() if p.pid == sid and n.startswith("w")), None)

    def workers(self) -> list[str]:
        return [n for n in self.nodes if n.startswith("w")]

    def kill(self, name: str) -> None:
        """SIGKILL every process of node ``name`` (its raylet, object store, workers): a lost machine."""
        sid = self.nodes[name].pid
        subprocess.run(["pkill", "-KILL", "-s", str(sid)], check=False)
        self.nodes[name].wait(timeout=30)
        self.nodes["dead-" + name] = self.nodes.pop(name)

    def stop(self) -> None:
        for name in [n for n in self.nodes if n != "head"] + ["head"]:
            p = self.nodes.get(name)
            if p is None:
                continue
            subprocess.run(["pkill", "-KILL", "-s", str(p.pid)], check=False)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
        shutil.rmtree(self.temp, ignore_errors=True)

    def job_env(self, **extra) -> dict:
        return {**self.env, **extra}


def crawl_on_s3(tmp_path_factory, bucket: str, captures: int, per_file: int) -> None:
    """Skip (with the reason) where nodes cannot be isolated; else ``captures`` pages of
    benchmarks/make_crawl.py's crawl, ``per_file`` a WARC file, uploaded to ``s3://bucket/in``."""
    import pytest

    from tests.bench_scripts import make_crawl
    from tests import s3

    reason = why_not()
    if reason:
        pytest.skip(reason)
    s3.make_bucket(bucket)
    crawl = tmp_path_factory.mktemp("crawl")
    make_crawl(captures, crawl, per_file=per_file)
    (crawl / "crawl.json").unlink()
    s3.upload_dir(crawl, f"s3://{bucket}/in")


def driver_dir(root: Path) -> Path:
    """What a user's driver machine holds: the pipeline and the files it names, and no
    datacurate package (each node has its own install): a folder under the head's /tmp,
    which the worker nodes cannot see."""
    d = Path(tempfile.mkdtemp(prefix="cndrv", dir="/tmp"))
    shutil.copytree(REPO / "pipelines", d / "pipelines")
    shutil.copytree(REPO / "sample_data" / "blocklist", d / "sample_data" / "blocklist")
    return d
