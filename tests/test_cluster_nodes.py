"""Nodes that share nothing but object storage (issue 39): ``pipelines/commoncrawl.yaml`` on a
crawl-shaped input (benchmarks/make_crawl.py) in an S3 bucket, run on a Ray cluster of a
0-CPU head and two worker nodes with private ``/tmp`` and ``/dev/shm`` (tests/cluster_nodes.py),
through ``--ray-address`` and through ``ray job submit``, gives the kept and rejected rows
(ids, reasons, texts), the shards and stats.json of a one-node local run.

The driver runs in a folder of the head's ``/tmp`` holding only the pipeline and the
blocklist it names (the worker nodes cannot see it): a stage reading a driver-local path on
a worker fails the run (the blocklist did, before side inputs were staged in the output's
file system: datacurate/engine/side.py). One cluster serves both paths.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import s3
from tests.cli_run import clean_env
from tests.cluster_nodes import Cluster, crawl_on_s3, driver_dir
from tests.outputs import assert_same

REPO = Path(__file__).resolve().parent.parent
BUCKET = "nodes"
CAPTURES = 60  # two WARC files of 30 captures: read tasks on both worker nodes


def download(prefix: str, local: Path) -> Path:
    """An s3:// output as a local folder, the URL in stats.json replaced by the folder."""
    bucket, _, key = prefix.removeprefix("s3://").partition("/")
    for k in s3.keys(prefix + "/"):
        if k.endswith("/"):  # a folder marker
            continue
        dst = local / k[len(key) + 1:]
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(s3.get(f"s3://{bucket}/{k}"))
    stats = local / "stats.json"
    stats.write_text(stats.read_text().replace(prefix, str(local.resolve())))
    return local


def without_hash(out: Path, copy: Path) -> Path:
    """A copy of an output whose stats.json lacks the configuration's hash."""
    shutil.copytree(out, copy)
    stats = json.loads((copy / "stats.json").read_text().replace(str(out.resolve()), str(copy.resolve())))
    stats.pop("config_sha256")
    (copy / "stats.json").write_text(json.dumps(stats))
    return copy


def run_cli(cwd: Path, out: str, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datacurate.cli", "run", "pipelines/commoncrawl.yaml", "--input",
                           f"s3://{BUCKET}/in", "--output", out, "--no-report", "--quiet", *args],
                          cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def nodes(s3_server, tmp_path_factory):
    crawl_on_s3(tmp_path_factory, BUCKET, CAPTURES, CAPTURES // 2)
    drv = driver_dir(REPO)
    with ThreadPoolExecutor(1) as pool:  # the cluster starts while the one-node run works
        starting = pool.submit(Cluster, log_dir=tmp_path_factory.mktemp("nodes"))
        try:
            local = run_cli(drv, f"s3://{BUCKET}/local")  # one node: an embedded Ray on this machine
        finally:
            cluster = starting.result()  # a cluster that failed to start has stopped itself
    try:
        assert local.returncode == 0, local.stderr[-3000:]
        yield cluster, drv, download(f"s3://{BUCKET}/local", tmp_path_factory.mktemp("local"))
    finally:
        cluster.stop()
        shutil.rmtree(drv, ignore_errors=True)


def test_ray_address_run_on_nodes_sharing_only_s3_equals_the_local_run(nodes, tmp_path):
    cluster, drv, local = nodes
    res = run_cli(drv, f"s3://{BUCKET}/addr", "--ray-address", cluster.address, env=cluster.env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert_same(local, download(f"s3://{BUCKET}/addr", tmp_path / "addr"))


def test_ray_job_submit_on_nodes_sharing_only_s3_equals_the_local_run(nodes, tmp_path):
    cluster, drv, local = nodes
    res = subprocess.run(["ray", "job", "submit", "--address", f"http://127.0.0.1:{cluster.dashboard}",
                          "--working-dir", ".", "--", "python", "-m", "datacurate.cli", "run",
                          "pipelines/commoncrawl.yaml", "--input", f"s3://{BUCKET}/in", "--output",
                          f"s3://{BUCKET}/job", "--no-report", "--quiet"],
                         cwd=drv, env=cluster.env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-2000:])
    assert f"outputs: s3://{BUCKET}/job/kept" in res.stdout, res.stdout[-3000:]
    # the blocklist's path is the job's copy of the working directory: another configuration hash
    job = download(f"s3://{BUCKET}/job", tmp_path / "job")
    assert_same(without_hash(local, tmp_path / "local"), without_hash(job, tmp_path / "job-"))
