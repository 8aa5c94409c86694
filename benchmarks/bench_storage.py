"""Object-storage throughput of the two candidate seams, side by side on one local S3
server: ``pyarrow.fs.S3FileSystem`` (the AWS C++ SDK; what datacurate.formats.storage uses) and
fsspec's ``s3fs`` (botocore + aiobotocore; what datatrove uses).

The server is moto in server mode in its own process (so it shares no GIL with the
client), on 127.0.0.1: the numbers measure each client's overhead over the same server,
not a real S3's bandwidth. Each case runs ``--repeat`` times per seam, alternating seams;
the best time counts.

Cases: write and read back large objects (multipart uploads), stream one through an 8 MB
buffer in 64 KB reads (how .gz / .zst inputs are read), many small objects (per-request
latency), ranged reads at random offsets (the JSONL read tasks), one Parquet row group out
of a file (the Parquet read tasks), and listing a prefix.

Run:  python benchmarks/bench_storage.py [--large-mb 32] [--n-large 4] [--n-small 200]
Needs: pip install "moto[server]" s3fs  (the test extra has both)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

RESULTS = Path(__file__).resolve().parent / "results" / "storage.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("moto server did not start")


class Arrow:
    name = "pyarrow.fs"

    def __init__(self, endpoint: str):
        self.fs = pafs.S3FileSystem(endpoint_override=endpoint.split("://")[1], scheme="http", access_key="testing",
                                    secret_key="testing", region="us-east-1",
                                    allow_delayed_open=True)  # as datacurate.formats.storage: a small object is one PUT, not 3 requests

    def put(self, key: str, data: bytes):
        with self.fs.open_output_stream(key) as f:
            f.write(data)

    def get(self, key: str) -> bytes:
        # a random-access file knows the size: one GET. (An input stream's read() with no
        # buffer fetches 64 KB per request: 8 MB/s here, the slowest way to use pyarrow.fs.)
        with self.fs.open_input_file(key) as f:
            return f.read()

    def stream(self, key: str) -> int:
        with self.fs.open_input_stream(key, compression=None, buffer_size=8 << 20) as f:
            return sum(len(b) for b in iter(lambda: f.read(1 << 16), b""))

    def ranges(self, key: str, spans):
        with self.fs.open_input_file(key) as f:
            return sum(len(f.read_at(n, off)) for off, n in spans)

    def row_group(self, key: str, rg: int) -> int:
        return pq.ParquetFile(self.fs.open_input_file(key)).read_row_group(rg).num_rows

    def ls(self, prefix: str) -> int:
        return len(self.fs.get_file_info(pafs.FileSelector(prefix, recursive=True)))


class Fsspec:
    name = "fsspec (s3fs)"

    def __init__(self, endpoint: str):
        import s3fs

        self.fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=endpoint,
                                    client_kwargs={"region_name": "us-east-1"})

    def put(self, key: str, data: bytes):
        with self.fs.open(key, "wb") as f:
            f.write(data)

    def get(self, key: str) -> bytes:
        return self.fs.cat_file(key)

    def stream(self, key: str) -> int:
        with self.fs.open(key, "rb", block_size=8 << 20) as f:
            return sum(len(b) for b in iter(lambda: f.read(1 << 16), b""))

    def ranges(self, key: str, spans):
        with self.fs.open(key, "rb", block_size=1 << 20, cache_type="none") as f:
            total = 0
            for off, n in spans:
                f.seek(off)
                total += len(f.read(n))
            return total

    def row_group(self, key: str, rg: int) -> int:
        with self.fs.open(key, "rb") as f:
            return pq.ParquetFile(f).read_row_group(rg).num_rows

    def ls(self, prefix: str) -> int:
        self.fs.invalidate_cache()
        return len(self.fs.find(prefix))


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--large-mb", type=int, default=32)
    ap.add_argument("--n-large", type=int, default=4)
    ap.add_argument("--n-small", type=int, default=200)
    ap.add_argument("--small-kb", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    port = free_port()
    server = start_server(port)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket="bench")
        rng = np.random.default_rng(0)
        large = rng.integers(0, 256, args.large_mb << 20, dtype=np.uint8).tobytes()
        small = rng.integers(0, 256, args.small_kb << 10, dtype=np.uint8).tobytes()
        n_rows = 2_000_000
        table = pa.table({"id": np.arange(n_rows), "x": rng.random(n_rows)})
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=n_rows // 8)
        parquet = buf.getvalue()
        spans = [(random.Random(i).randrange(0, len(large) - (1 << 20)), 1 << 20) for i in range(32)]
        seams = [Arrow(endpoint), Fsspec(endpoint)]
        for s in seams:
            s.put(f"bench/{s.name}/data.parquet", parquet)
        cases = {
            "write_large": (args.n_large * len(large), lambda s: [s.put(f"bench/{s.name}/large/{i}", large)
                                                                  for i in range(args.n_large)]),
            "read_large": (args.n_large * len(large), lambda s: [s.get(f"bench/{s.name}/large/{i}")
                                                                 for i in range(args.n_large)]),
            "stream_large_8mb_buffer": (len(large), lambda s: s.stream(f"bench/{s.name}/large/0")),
            "write_small": (args.n_small * len(small), lambda s: [s.put(f"bench/{s.name}/small/{i:05d}", small)
                                                                  for i in range(args.n_small)]),
            "read_small": (args.n_small * len(small), lambda s: [s.get(f"bench/{s.name}/small/{i:05d}")
                                                                 for i in range(args.n_small)]),
            "ranged_reads_1mb": (sum(n for _, n in spans), lambda s: s.ranges(f"bench/{s.name}/large/0", spans)),
            "parquet_row_group": (len(parquet) // 8, lambda s: s.row_group(f"bench/{s.name}/data.parquet", 3)),
            "list_prefix": (args.n_small, lambda s: s.ls(f"bench/{s.name}/small")),
        }
        best: dict = {c: {s.name: float("inf") for s in seams} for c in cases}
        for _ in range(args.repeat):
            for case, (_, fn) in cases.items():
                for s in seams:
                    best[case][s.name] = min(best[case][s.name], timed(lambda: fn(s)))
    finally:
        server.terminate()
        server.wait()

    rows = {}
    print(f"{'case':<20} {'pyarrow.fs':>14} {'fsspec (s3fs)':>14} {'ratio':>7}")
    for case, (amount, _) in cases.items():
        a, f = best[case]["pyarrow.fs"], best[case]["fsspec (s3fs)"]
        unit = "keys/s" if case == "list_prefix" else "MB/s"
        scale = 1 if case == "list_prefix" else 1 / (1 << 20)
        rows[case] = {"unit": unit, "pyarrow.fs": round(amount * scale / a, 1), "fsspec": round(amount * scale / f, 1),
                      "pyarrow_over_fsspec": round(f / a, 2)}
        print(f"{case:<20} {rows[case]['pyarrow.fs']:>9} {unit:<4} {rows[case]['fsspec']:>9} {unit:<4} "
              f"{rows[case]['pyarrow_over_fsspec']:>6}x")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "args": vars(args), "results": rows,
        "versions": {p: version(p) for p in ("pyarrow", "s3fs", "fsspec", "moto", "boto3")},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }, indent=2) + "\n")
    print(f"-> {RESULTS}")


if __name__ == "__main__":
    main()
