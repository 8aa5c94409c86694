"""Token shards: written by tokenize + decompose on real text (in-process), read back
with ``json`` + ``numpy.memmap`` alone and with ``datacurate.train.data.ShardDataset``."""

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from datacurate import Pipeline
from datacurate.formats import shards
from datacurate.configs.pipeline import ConfigError
from datacurate.stages.decompose import Decompose
from datacurate.stages.tokenize import Tokenize
from datacurate.formats.tokenizer import DEFAULT_TOKENIZER, file_sha256
from datacurate.train.data import ShardDataset

CORPUS = Path(__file__).resolve().parent.parent / "sample_data" / "corpus"


def memmap_only(root: str) -> dict:
    """Everything a trainer needs, read as the README says: manifest + numpy.memmap."""
    with open(os.path.join(root, "manifest.json")) as f:
        man = json.load(f)
    out = {}
    for b in man["buckets"].values():
        L = b["seq_len"]
        toks = [np.memmap(os.path.join(root, f["tokens"]), dtype=man["dtype"], mode="r", shape=(f["n"], L))
                for f in b["files"]]
        doms = [np.memmap(os.path.join(root, f["domains"]), dtype="<u2", mode="r", shape=(f["n"],)) for f in b["files"]]
        out[L] = (np.concatenate(toks), np.concatenate(doms))
    return man, out


def sample_table() -> pa.Table:
    texts, domains = [], []
    for name, domain in (("news.jsonl", "news"), ("legal.jsonl", "legal")):
        with open(CORPUS / name) as f:
            rows = [json.loads(line) for line in f if line.strip()][:40]
        texts += [r["text"] for r in rows]
        domains += [domain] * len(rows)
    texts += ["", "Too short.", "日本語 🎉"]
    domains += ["news"] * 3
    return pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": pa.array(texts, pa.large_string()),
                      "domain": domains})


@pytest.fixture(scope="module")
def shard_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards") / "out"
    dec, stats = Decompose(output=str(root), mixture={"news": 0.5, "legal": 0.5}), {}
    out = Pipeline([Tokenize(), dec]).apply(sample_table(), stats)
    return root, out, stats["decompose"]["metrics"]


def test_shards_readable_with_numpy_memmap_alone(shard_run):
    root, out, dec = shard_run
    man, buckets = memmap_only(str(root))
    assert man["dtype"] == "uint16" and man["tokenizer"]["vocab_size"] == 8192
    assert man["tokenizer"]["sha256"] == file_sha256(DEFAULT_TOKENIZER) == file_sha256(root / "tokenizer.json")
    assert man["domains"] == ["legal", "news"]
    eos = man["tokenizer"]["eos_id"]
    for L, (tokens, domains) in buckets.items():
        assert L & (L - 1) == 0 and 64 <= L <= 2048
        assert man["buckets"][str(L)]["sequences"] == len(tokens) == len(domains)
        assert tokens.max() < 8192 and set(np.unique(domains)) <= {0, 1}
        # EOS only ever closes a document: inside a sequence it can only be the last token
        assert not np.any(tokens[:, :-1] == eos)
    for name, d in man["per_domain"].items():
        assert d["tokens_in"] == d["tokens_in_buckets"] + d["tokens_dropped"]
        written = sum(int((buckets[L][1] == man["domains"].index(name)).sum()) * L for L in buckets)
        assert written == d["tokens_written"]
    assert man["totals"]["tokens_written"] == sum(b["tokens"] for b in man["buckets"].values())
    assert not list(root.rglob("*.tmp*"))


def test_accounting_and_rejects(shard_run):
    root, out, m = shard_run
    reasons = dict(zip(out.column("id").to_pylist(), out.column("reject_reason").to_pylist()))
    n = out.num_rows
    assert reasons[f"d{n - 3}"] == "tokenize/empty"
    assert reasons[f"d{n - 2}"] == reasons[f"d{n - 1}"] == "decompose/too_short"
    alive = [t for t, r in zip(out.column("n_tokens").to_pylist(), out.column("reject_stage").to_pylist())
             if r != "tokenize"]
    assert m["tokens_in"] == sum(alive) == m["tokens_in_buckets"] + m["tokens_dropped"]
    assert m["too_short"] == 2 and m["documents"] == n - 1


def test_shard_dataset_batches(shard_run):
    root, _, _ = shard_run
    ds = ShardDataset(str(root))
    _, buckets = memmap_only(str(root))
    assert ds.seq_lens == sorted(buckets) and len(ds) == sum(len(t) for t, _ in buckets.values())
    tokens, domains = ds.sequences(64, np.array([2, 0]))
    assert np.array_equal(tokens, buckets[64][0][[2, 0]]) and np.array_equal(domains, buckets[64][1][[2, 0]])
    seen = {L: [] for L in ds.seq_lens}
    for L, index in ds.plan(tokens_per_batch=4096, seed=1, drop_last=False):
        assert len(index) <= 4096 // L
        seen[L] += index.tolist()
    assert all(sorted(v) == list(range(ds.num_sequences(L))) for L, v in seen.items())  # each once per epoch
    batches = list(ds.batches(tokens_per_batch=4096, seed=1))
    assert batches and all(t.shape[0] * t.shape[1] == 4096 and len(d) == t.shape[0] for t, d in batches)
    again = list(ds.batches(tokens_per_batch=4096, seed=1))
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(batches, again))
    assert len({t.shape[1] for t, _ in batches}) > 1  # several buckets, one per batch
    with pytest.raises(ValueError, match="smaller than sequence length"):
        ds.plan(tokens_per_batch=1024)


def test_bucket_files_bounded_by_target(shard_run, tmp_path):
    root, _, m = shard_run
    man, whole = memmap_only(str(root))
    assert m["files_per_bucket"] == {k: 1 for k in man["buckets"]}  # 256 MB default
    assert [f["tokens"] for b in man["buckets"].values() for f in b["files"]] == \
        [f"len{L}/shard-00000.tokens.bin" for L in whole]
    assert not list(root.rglob("part-*"))  # the per-part pieces are gone
    target = 4 * 2048 * 2  # four sequences of the largest bucket (uint16 ids)
    small = Decompose(output=str(tmp_path / "small"), mixture={"news": 0.5, "legal": 0.5}, target_file_bytes=target)
    stats: dict = {}
    Pipeline([Tokenize(), small]).apply(sample_table(), stats)
    man_small, split = memmap_only(str(tmp_path / "small"))
    m_small = stats["decompose"]["metrics"]
    assert m_small["files_per_bucket"] == {str(L): -(-t.nbytes // target) for L, (t, _) in whole.items()}
    assert max(m_small["files_per_bucket"].values()) > 1
    assert m_small["sequences_per_bucket"] == m["sequences_per_bucket"]
    for L, (tokens, domains) in whole.items():  # the same sequences in the same order
        assert split[L][0].tobytes() == tokens.tobytes() and split[L][1].tobytes() == domains.tobytes()
    ds = ShardDataset(str(tmp_path / "small"))
    assert np.array_equal(ds.sequences(64)[0], whole[64][0])


def test_shard_dir_safety(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="holds no token shards"):
        shards.prepare_dir(str(tmp_path / "mine"), overwrite=True)
    old = tmp_path / "old"
    shards.write_piece(str(old), "p", np.zeros((2, 64), np.uint16), np.zeros(2, np.uint16), np.uint16)
    shards.write_manifest(str(old), shards.build_manifest([]))
    with pytest.raises(ConfigError, match="already holds shards"):
        shards.prepare_dir(str(old), overwrite=False)
    (old / "README.txt").write_text("a note the user keeps beside the shards")
    shards.prepare_dir(str(old), overwrite=True)
    assert os.listdir(old) == ["README.txt"]  # only the shard set itself is removed
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        ShardDataset(str(old))
    with pytest.raises(ValueError, match="does not fit"):
        shards.write_piece(str(old), "p", np.full((1, 64), 70000), np.zeros(1), np.uint16)


def test_pack_mode_through_ray_with_mixture_file(ray_session, tmp_path, write_jsonl):
    """The engine path of mode: pack, weights from a DoReMi-style file, tiny and empty documents."""
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    prose = "The committee met on Tuesday to discuss the budget for the coming year. " * 8
    records = [{"id": f"n{i}", "text": prose * (1 + i % 3), "domain": "news"} for i in range(30)]
    records += [{"id": f"w{i}", "text": prose[: 40 + 7 * i], "domain": "web"} for i in range(30)]
    records += [{"id": "empty", "text": "", "domain": "web"}]
    data = write_jsonl("docs.jsonl", records)
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"domain_weights": {"news": 0.25, "web": 0.75}}))
    cfg = load_config({"input": str(data), "output": str(tmp_path / "out"), "ray": {"progress": False},
                       "stages": [{"tokenize": {}}, {"decompose": {"mode": "pack", "seq_len": 128,
                                                                   "mixture_file": str(weights)}}]})
    report = run_pipeline(cfg)
    assert report["totals"]["accounted"] and report["rejected_by_reason"] == {"tokenize/empty": 1}
    m = report["stages"]["decompose"]["metrics"]
    assert m["tokens_in"] == report["stages"]["tokenize"]["metrics"]["tokens"] == m["tokens_in_buckets"] + m["tokens_dropped"]
    man, buckets = memmap_only(str(tmp_path / "out" / "shards"))
    assert list(buckets) == [128] and man["mode"] == "pack" and man["mixture"]["source"] == str(weights)
    tokens, domains = buckets[128]
    share_web = float(np.mean(domains == man["domains"].index("web")))
    assert abs(share_web - 0.75) < 0.1 and m["tokens_written"] == tokens.size
    assert m["files_per_bucket"] == {"128": 1} and not list((tmp_path / "out" / "shards").rglob("part-*"))
    eos = man["tokenizer"]["eos_id"]
    assert np.any(tokens == eos)  # packed sequences span documents, separated by EOS
