"""Run an exact + near dedup + DSIR pipeline under a given Ray topology; print the kept ids.

Used by tests/test_dedup_distributed.py in a subprocess (each topology needs its own
Ray): ``python run_dedup.py MODE INPUT OUTPUT`` with MODE one of ``one_worker``,
``two_workers``, ``two_nodes`` (a simulated two-node cluster, ray.cluster_utils.Cluster).
"""

import json
import os
import sys
import tempfile

os.environ["RAY_AUTH_MODE"] = "disabled"
TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data", "target")

import ray  # noqa: E402

from datacurate.configs.pipeline import load_config  # noqa: E402
from datacurate.engine import run_pipeline  # noqa: E402


def main(mode: str, inp: str, out: str) -> None:
    tmp = tempfile.mkdtemp(prefix="dcr-", dir="/tmp")
    cluster = None
    if mode == "one_worker":
        ray.init(num_cpus=1, include_dashboard=False, _temp_dir=tmp, log_to_driver=False)
    elif mode == "two_workers":
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=tmp, log_to_driver=False)
    elif mode == "two_nodes":
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": tmp,
                                                                "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    else:
        raise SystemExit(f"unknown mode {mode}")
    cfg = load_config({
        "input": {"path": inp, "batch_rows": 64},
        "output": out,
        "ray": {"progress": False, "small_input_docs": 0},  # the distributed phases, not the one-task path
        "stages": [
            {"exact_dedup": {"expected_items": 100_000, "num_shards": 3, "chunk": 50}},
            # one worker: components in one task; the others: distributed star rounds
            {"near_dedup": {"threshold": 0.8, "num_partitions": 4,
                            "max_local_edges": 20_000_000 if mode == "one_worker" else 0}},
            # then DSIR resampling: the same seed must select the same documents everywhere
            {"dsir": {"target": {"path": TARGET}, "num_to_sample": 0.5, "seed": 1, "min_length": 20}},
        ],
    })
    report = run_pipeline(cfg)
    import pyarrow.parquet as pq

    kept_t = pq.read_table(os.path.join(out, "kept"))
    selected = kept_t.column("id").to_pylist()
    rejected = pq.read_table(os.path.join(out, "rejected"))
    dsir_rejected = [i for i, s in zip(rejected["id"].to_pylist(), rejected["reject_stage"].to_pylist()) if s == "dsir"]
    kept = selected + dsir_rejected  # kept by the two dedup stages
    clusters = {}
    for t in (kept_t, rejected):
        for i, c in zip(t["id"].to_pylist(), t["cluster_id"].to_pylist()):
            if c is not None:
                clusters[i] = c
    print("RESULT " + json.dumps({
        "kept": sorted(kept),
        "dsir_selected": sorted(selected),
        "dsir_metrics": report["stages"]["dsir"].get("metrics", {}),
        "rejected": sorted(zip(rejected["id"].to_pylist(), rejected["reject_reason"].to_pylist())),
        "clusters": clusters,
        "totals": report["totals"],
        "nodes": len(ray.nodes()),
    }))
    ray.shutdown()
    if cluster is not None:
        cluster.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
