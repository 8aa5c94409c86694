"""Shared fixtures: one real local Ray for the whole session, and small input files.

Ray starts once (it takes seconds); ``run_pipeline`` finds it initialised and uses
it without shutting it down. Its temp dir is short because Ray's socket paths have
a length limit.
"""

import gzip
import os
import shutil
import socket
import tempfile
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The S3-compatible test server (tests/s3.py) listens here. Its settings go into the
# environment now, before Ray starts: Ray's workers inherit the driver's environment, and
# read their S3 inputs as the AWS SDK does, from it.
S3_ENV = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{_free_port()}", "AWS_ACCESS_KEY_ID": "testing",
          "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
os.environ.update(S3_ENV)


def pytest_configure(config):
    # Ray Data's own context warns about its deprecated settings on every run
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:ray.data.context")


@pytest.fixture(scope="session")
def ray_session():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    import ray

    temp_dir = tempfile.mkdtemp(prefix="dcray-", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)


def _encode(record) -> bytes:
    """A dict becomes one JSON line; bytes / str are written as given (one line)."""
    if isinstance(record, bytes):
        raw = record
    elif isinstance(record, str):
        raw = record.encode()
    else:
        raw = orjson.dumps(record)
    return raw if raw.endswith(b"\n") else raw + b"\n"


@pytest.fixture
def write_jsonl(tmp_path):
    """write_jsonl(name, records) -> path; compressed by the name's suffix (.gz, .zst)."""

    def write(name: str, records) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = b"".join(_encode(r) for r in records)
        if name.endswith(".gz"):
            data = gzip.compress(data)
        elif name.endswith((".zst", ".zstd")):
            data = zstandard.ZstdCompressor().compress(data)
        path.write_bytes(data)
        return path

    return write


@pytest.fixture
def write_parquet(tmp_path):
    """write_parquet(name, {column: values} or table, row_group_size=None) -> path."""

    def write(name: str, data, row_group_size: int | None = None) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        table = data if isinstance(data, pa.Table) else pa.table(data)
        pq.write_table(table, path, row_group_size=row_group_size)
        return path

    return write


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (moto in server mode) on the loopback address for the
    whole session; yields its endpoint URL (tests/s3.py has the helpers)."""
    from tests.s3 import start_server

    server = start_server(S3_ENV["AWS_ENDPOINT_URL"])
    yield S3_ENV["AWS_ENDPOINT_URL"]
    server.stop()
