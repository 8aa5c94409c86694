"""Global stages' shuffles over a bounded number of blocks (engine/ray/data.py, issue 18):
coalescing changes nothing in the results; the bound follows the bytes read; near dedup's
partitions follow the corpus."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate.engine.ray import data as ray_data
from datacurate.engine.ray.data import Data
from datacurate.stages.dedup_near import NearDedupConfig


def _sum_per_key(group: pa.Table) -> pa.Table:
    return pa.table({"k": group["k"].slice(0, 1), "s": [int(np.sum(group["v"].to_numpy()))]})


def _tables(ray):
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 37, 6000)
    left = ray.data.from_arrow([pa.table({"k": keys[i::12], "v": np.arange(6000)[i::12]}) for i in range(12)])
    right = ray.data.from_arrow([pa.table({"k": np.arange(37)[i::6], "w": np.arange(37)[i::6] * 10}) for i in range(6)])
    return left, right


def _results(ray, max_blocks):
    left, right = _tables(ray)
    a = Data(left, "t", blocks=12, max_blocks=max_blocks)
    b = Data(right, "t", blocks=6, max_blocks=max_blocks)
    sums = sorted((r["k"], r["s"]) for r in a.groupby("g", "k", 4, _sum_per_key).rows())
    joined = sorted((r["k"], r["v"], r["w"]) for r in a.join(b, "k", 3).rows())
    return sums, joined


def test_coalesced_shuffles_give_the_same_results(ray_session):
    left, _ = _tables(ray_session)
    assert Data(left, "t", blocks=12, max_blocks=3)._bounded(left, 12).materialize().num_blocks() == 3
    assert Data(left, "t", blocks=12)._bounded(left, 12) is left  # under the bound: untouched
    bounded, unbounded = _results(ray_session, 3), _results(ray_session, 1 << 30)
    assert bounded == unbounded
    sums, joined = bounded
    assert len(sums) == 37 and sum(s for _, s in sums) == sum(range(6000))
    assert len(joined) == 6000 and all(w == 10 * k for k, _, w in joined)


def test_shuffle_blocks_follow_the_bytes_read(ray_session, tmp_path, monkeypatch):
    files = []
    for i in range(10):
        p = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"x": np.random.default_rng(i).integers(0, 1 << 60, 20_000)}), p, compression="none")
        files.append(str(p))
    size = sum((tmp_path / f"part-{i}.parquet").stat().st_size for i in range(10))
    cpus = int(ray_session.cluster_resources()["CPU"])
    monkeypatch.setattr(ray_data, "SHUFFLE_BLOCK_BYTES", size // 7)  # one block per ~7th of the data
    assert ray_data.shuffle_blocks(files) == max(2 * cpus, 8)
    monkeypatch.setattr(ray_data, "SHUFFLE_BLOCK_BYTES", 1 << 40)  # tiny data: two blocks per CPU
    assert ray_data.shuffle_blocks(files) == 2 * cpus
    monkeypatch.setattr(ray_data, "MAX_SHUFFLE_BLOCKS", 3)
    monkeypatch.setattr(ray_data, "SHUFFLE_BLOCK_BYTES", 1)
    assert ray_data.shuffle_blocks(files) == 3


def test_near_dedup_partitions_follow_the_corpus():
    c = NearDedupConfig()
    assert [c.partitions(n) for n in (0, 1_000, 100_000, 100_001, 656_000)] == [2, 2, 2, 3, 14]
    assert NearDedupConfig(num_partitions=5).partitions(10_000_000) == 5
    assert NearDedupConfig(partition_documents=1).partitions(10**9) == 1024
    for bad in ({"num_partitions": 0}, {"partition_documents": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be positive"):
            NearDedupConfig(**bad).validate()


def test_embedded_object_store_is_bounded_per_cpu():
    import os

    from datacurate.configs.pipeline import RayConfig
    from datacurate.engine.ray.cluster import object_store_bytes

    assert object_store_bytes(RayConfig(object_store_memory_mb=300)) == 300 << 20
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert object_store_bytes(RayConfig(num_cpus=2)) == min(1024 << 20, int(0.3 * phys))
    assert object_store_bytes(RayConfig(num_cpus=10_000)) == int(0.3 * phys)  # never over Ray's own default
