"""Dataset decomposition, packing and the domain mixture, phase by phase (no Ray).

Synthetic token ids encode where they came from: document ``i``'s token at position
``p`` is ``i << 16 | p`` (uint32 shards), so a sequence read back from disk tells which
document and which positions it holds.
"""

import json
import os

import numpy as np
import pyarrow as pa
import pytest

from datacurate.formats import shards
from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.stages import mixture
from datacurate.stages.decompose import DecomposeConfig, count_part, plan, write_part
from datacurate.stages.tokenize import TOKENS

U32 = np.dtype(np.uint32)


def docs_table(lengths, domains=None, ids=None) -> pa.Table:
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    doc = np.repeat(np.arange(n), lengths)
    pos = np.arange(lengths.sum()) - np.repeat(np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    values = (doc.astype(np.uint32) << 16) | pos.astype(np.uint32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return pa.table({
        "id": ids or [f"doc-{i}" for i in range(n)],
        "domain": domains or ["a"] * n,
        "n_tokens": pa.array(lengths, pa.int32()),
        "_ord": pa.array(np.arange(n), pa.int64()),
        TOKENS: pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values, pa.uint32())),
    })


def read_back(out_dir, pieces):
    """{seq_len: (tokens (n, L), domains (n,))} with numpy.memmap only."""
    got = {}
    for p in pieces:
        t = np.memmap(os.path.join(out_dir, p["tokens"]), dtype="<u4", mode="r", shape=(p["n"], p["seq_len"]))
        d = np.memmap(os.path.join(out_dir, p["domains"]), dtype="<u2", mode="r", shape=(p["n"],))
        prev = got.get(p["seq_len"], (np.zeros((0, p["seq_len"]), np.uint32), np.zeros(0, np.uint16)))
        got[p["seq_len"]] = (np.concatenate([prev[0], t]), np.concatenate([prev[1], d]))
    return got


@pytest.mark.parametrize("min_log2,max_log2", [(6, 11), (0, 3), (4, 4), (2, 9)])
def test_decomposition_round_trip(tmp_path, min_log2, max_log2):
    rng = np.random.default_rng(min_log2 * 100 + max_log2)
    lengths = np.concatenate([[0, 1, 2**min_log2 - 1, 2**min_log2, 2**max_log2, 2**max_log2 + 1,
                               3 * 2**max_log2 - 1], rng.integers(1, min(9000, 2**(max_log2 + 4)), 300)])
    cfg = DecomposeConfig(min_log2=min_log2, max_log2=max_log2)
    table = docs_table(lengths)
    pieces, written = write_part(table, cfg, "p0", str(tmp_path), {"a": 1.0}, {"a": 0}, U32)
    got = read_back(str(tmp_path), pieces)
    # every sequence length is a power of two within the configured range
    assert set(got) <= {2**i for i in range(min_log2, max_log2 + 1)}
    for seq_len, (m, _) in got.items():  # no sequence spans two documents; each is a contiguous slice
        assert np.all(m >> 16 == m[:, :1] >> 16)
        assert np.all(m & 0xFFFF == (m[:, :1] & 0xFFFF) + np.arange(seq_len, dtype=np.uint32))
    seqs = [row for seq_len in got for row in got[seq_len][0]]
    doc = [int(s[0]) >> 16 for s in seqs]
    # a document's chunks, in order, give back its tokens except the dropped tail
    dropped = (lengths % 2**max_log2) % 2**min_log2
    by_doc: dict = {}
    for s, d in zip(seqs, doc):
        by_doc.setdefault(d, []).append(s)
    for i, n in enumerate(lengths):
        mine = sorted(by_doc.get(i, []), key=lambda s: int(s[0]) & 0xFFFF)
        joined = np.concatenate(mine) if mine else np.zeros(0, np.uint32)
        assert np.array_equal(joined & 0xFFFF, np.arange(n - dropped[i])), i
        sizes = [len(s) for s in mine]
        assert sizes == sorted(sizes, reverse=True)  # binary representation, largest first
    # token accounting is exact: tokens in == tokens in buckets + dropped
    counts, decisions = count_part(table, cfg)
    c = counts["a"]
    assert c["tokens_in"] == lengths.sum() == c["tokens_in_buckets"] + dropped.sum()
    assert c["tokens_in_buckets"] == sum(len(s) for s in seqs) == written["a"]["tokens"]
    assert {int(k): v for k, v in c["buckets"].items()} == {k: len(v[0]) for k, v in got.items()}
    short = np.flatnonzero(lengths < 2**min_log2)
    assert decisions.column("_ord").to_pylist() == short.tolist() and c["too_short"] == len(short)
    assert set(decisions.column("reject_reason").to_pylist()) <= {"decompose/too_short"}


def test_compaction_keeps_sequence_order_in_bounded_files(tmp_path):
    rng = np.random.default_rng(11)
    table = docs_table(rng.integers(40, 3000, 400), rng.choice(["a", "b"], 400).tolist())
    cfg = DecomposeConfig(min_log2=5, max_log2=10)
    pieces = []
    for i in range(8):  # eight work parts: eight pieces per bucket
        pieces += write_part(table.slice(50 * i, 50), cfg, f"p{i}", str(tmp_path), {"a": 1.0, "b": 1.0},
                             {"a": 0, "b": 1}, U32)[0]
    before = read_back(str(tmp_path), shards.manifest_order(pieces))  # memmap reading, in manifest order
    target = 3 * 1024 * U32.itemsize  # 3 sequences of the largest bucket; a whole number of any bucket's
    files = shards.compact(str(tmp_path), pieces, target, U32.itemsize)
    after = read_back(str(tmp_path), files)
    assert after.keys() == before.keys()
    for seq_len, (tokens, domains) in before.items():
        mine = [f for f in files if f["seq_len"] == seq_len]
        assert len(mine) == -(-tokens.nbytes // target) > 1
        assert [f["tokens"] for f in mine] == [f"len{seq_len}/shard-{k:05d}.tokens.bin" for k in range(len(mine))]
        assert all(os.path.getsize(tmp_path / f["tokens"]) <= target for f in mine)
        assert after[seq_len][0].tobytes() == tokens.tobytes() and after[seq_len][1].tobytes() == domains.tobytes()
    left = {p.name for p in tmp_path.rglob("*.bin")}
    assert left == {os.path.basename(f[k]) for f in files for k in ("tokens", "domains")}  # pieces deleted
    assert not list(tmp_path.rglob("*.tmp"))
    # a target below one sequence: a sequence a file
    one, _ = write_part(docs_table([64 * 5]), DecomposeConfig(min_log2=6, max_log2=6), "p", str(tmp_path / "one"),
                        {"a": 1.0}, {"a": 0}, U32)
    assert [f["n"] for f in shards.compact(str(tmp_path / "one"), one, 1, U32.itemsize)] == [1] * 5


def test_plan_is_vectorised_binary_decomposition():
    _, buckets = plan(np.array([100, 5000]), np.zeros(2, np.int64), DecomposeConfig(min_log2=4, max_log2=11))
    # 100 = 64 + 32 + 4 (tail dropped); 5000 = 2 x 2048 + 512 + 256 + 128 + 8 (dropped)
    got = {L: list(zip(d.tolist(), p.tolist())) for L, (d, p, _) in buckets.items() if len(d)}
    assert got == {2048: [(1, 0), (1, 2048)], 512: [(1, 4096)], 256: [(1, 4608)], 128: [(1, 4864)],
                   64: [(0, 0)], 32: [(0, 64)]}


def test_pack_mode_concat_and_chunk(tmp_path):
    lengths = np.array([30, 50, 7, 100, 64, 3])
    domains = ["x", "y", "x", "x", "y", "y"]
    cfg = DecomposeConfig(mode="pack", seq_len=32)
    pieces, _ = write_part(docs_table(lengths, domains), cfg, "p", str(tmp_path), {"x": 1.0, "y": 1.0},
                           {"x": 0, "y": 1}, U32)
    tokens, dom = read_back(str(tmp_path), pieces)[32]
    for code, members in ((0, [0, 2, 3]), (1, [1, 4, 5])):  # each domain's documents, in input order
        stream = np.concatenate([(np.uint32(i) << 16) | np.arange(lengths[i], dtype=np.uint32) for i in members])
        n = len(stream) // 32
        assert np.array_equal(tokens[dom == code].ravel(), stream[:n * 32])
    counts, decisions = count_part(docs_table(lengths, domains), cfg)
    assert decisions.num_rows == 0  # packing drops a remainder, never a document
    assert counts["x"]["tokens_in"] - counts["x"]["tokens_in_buckets"] == 137 % 32
    assert counts["y"]["tokens_in"] - counts["y"]["tokens_in_buckets"] == 117 % 32


def test_mixture_weights_reproduced_within_sampling_error(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    domains = rng.choice(["web", "books", "code"], n, p=[0.7, 0.2, 0.1]).tolist()
    table = docs_table(rng.integers(40, 3000, n), domains)
    cfg = DecomposeConfig(min_log2=5, max_log2=10, seed=3)
    counts, _ = count_part(table, cfg)
    weights = {"web": 0.2, "books": 0.5, "code": 0.3}  # books and code up-sampled, web down
    total = 4_000_000
    mix = mixture.plan({d: c["tokens_in_buckets"] for d, c in counts.items()}, weights, total)
    rates = {d: m["rate"] for d, m in mix["domains"].items()}
    assert rates["web"] < 1 < rates["books"] and rates["code"] > 1
    ids = {d: i for i, d in enumerate(sorted(counts))}
    pieces, written = write_part(table, cfg, "p", str(tmp_path), rates, ids, U32)
    for d, w in weights.items():
        # variance of the written tokens: sum over sequences of L^2 * f (1 - f), f = frac(rate)
        f = rates[d] - np.floor(rates[d])
        sizes = np.repeat([int(k) for k in counts[d]["buckets"]], list(counts[d]["buckets"].values()))
        sd = np.sqrt(np.sum(sizes.astype(float) ** 2) * f * (1 - f))
        assert abs(written[d]["tokens"] - total * w) < 4 * sd + 1, (d, written[d], total * w, sd)
        assert abs(written[d]["tokens"] / total - w) < 0.02
    # the same sequences whatever the split into parts (worker count, batching)
    half = table.num_rows // 2
    p1, w1 = write_part(table.slice(0, half), cfg, "q1", str(tmp_path / "s"), rates, ids, U32)
    p2, w2 = write_part(table.slice(half), cfg, "q2", str(tmp_path / "s"), rates, ids, U32)
    whole = read_back(str(tmp_path), pieces)
    split = read_back(str(tmp_path / "s"), p1 + p2)
    for seq_len in whole:
        a, b = whole[seq_len][0], split[seq_len][0]
        assert np.array_equal(a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])])
    # another seed draws other sequences
    _, w_other = write_part(table, DecomposeConfig(min_log2=5, max_log2=10, seed=4), "p", str(tmp_path / "o"),
                            rates, ids, U32)
    assert w_other != written


def test_repeats_floor_plus_bernoulli():
    keys = np.random.default_rng(0).integers(0, 2**63, 200_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    k = mixture.repeats(keys, np.full(len(keys), 2.25))
    assert set(np.unique(k)) == {2, 3} and abs(k.mean() - 2.25) < 0.01
    assert mixture.repeats(keys, np.zeros(len(keys))).sum() == 0


def test_mixture_weights_sources(tmp_path):
    path = tmp_path / "doremi.json"
    path.write_text(json.dumps({"domain_weights": {"news": 3, "web": 1}, "steps": 100}))
    assert mixture.load_weights(None, str(path)) == ({"news": 3.0, "web": 1.0}, str(path))
    assert mixture.load_weights(None, None) == (None, "natural")
    p = mixture.plan({"news": 100, "web": 300, "code": 50}, {"news": 3, "web": 1, "legal": 4}, 800)
    assert p["missing_domains"] == ["legal"] and p["domains"]["code"]["rate"] == 0
    assert p["domains"]["news"]["target_tokens"] == 600 and p["domains"]["web"]["rate"] == 200 / 300
    natural = mixture.plan({"a": 100, "b": 300}, None, None)
    assert {d: m["rate"] for d, m in natural["domains"].items()} == {"a": 1.0, "b": 1.0}
    for bad, msg in (({"a": -1}, "non-negative"), ({"a": 0}, "no positive weight")):
        with pytest.raises(ConfigError, match=msg):
            mixture.load_weights(bad, None)
    with pytest.raises(ConfigError, match="not found"):
        mixture.load_weights(None, str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="not both"):
        mixture.load_weights({"a": 1}, str(path))


def test_config_errors_are_one_line():
    def error(stages):
        with pytest.raises(ConfigError) as e:
            load_config({"input": "x.jsonl", "stages": stages})
        assert "\n" not in str(e.value)
        return str(e.value)

    assert "needs a 'tokenize' stage before it" in error(["decompose"])
    assert "min_log2" in error(["tokenize", {"decompose": {"min_log2": 12, "max_log2": 11}}])
    assert "not one of" in error(["tokenize", {"decompose": {"mode": "concat"}}])
    assert "mixture" in error(["tokenize", {"decompose": {"mixture": {"a": "x"}}}])
    assert "target_file_bytes" in error(["tokenize", {"decompose": {"target_file_bytes": 0}}])
    with pytest.raises(ConfigError, match="mixture_file not found"):
        from datacurate.stages.decompose import Decompose

        Decompose(mixture_file="/nonexistent/weights.json")


def test_ids_that_do_not_fit_the_shard_dtype_are_an_error(tmp_path):
    t = docs_table([70])  # ids (doc << 16 | pos) of doc 0 fit; make one too large for uint16
    t = t.set_column(t.schema.get_field_index(TOKENS), TOKENS, pa.LargeListArray.from_arrays(
        pa.array([0, 70], pa.int64()), pa.array(np.full(70, 70_000), pa.uint32())))
    with pytest.raises(ValueError, match="does not fit uint16"):
        write_part(t, DecomposeConfig(), "p", str(tmp_path), {"a": 1.0}, {"a": 0}, np.dtype(np.uint16))


def test_mixture_edges():
    natural = mixture.plan({"a": 100, "b": 7}, None, None)
    assert all(d["rate"] == 1.0 for d in natural["domains"].values())
    with pytest.raises(ValueError, match="no domain with a positive mixture weight has tokens"):
        mixture.plan({"a": 100, "b": 50}, {"a": 0.0, "c": 1.0}, None)
