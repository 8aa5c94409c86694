"""Stage ``export_tokens``, read back by the formats' own readers: megatron-core's
``IndexedDataset`` and ``datasets.load_dataset("parquet")``. The decoded export equals the
kept documents' text (byte-level BPE is lossless) as a multiset; a run killed during the
export and resumed writes the same bytes as an uninterrupted one; bad input is one line."""

import collections
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from datacurate.formats import megatron
from datacurate.cli import main
from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from datacurate.phases import faults
from tests.conftest import REPO
from tests.outputs import tree_digest

indexed_dataset = pytest.importorskip("megatron.core.datasets.indexed_dataset")
datasets = pytest.importorskip("datasets")

CORPUS = REPO / "sample_data" / "corpus"
EOS = "<|endoftext|>"


def pipeline(tmp, out, outside) -> dict:
    (tmp / "w.json").write_text(json.dumps({"domain_weights": {"news": 0.2, "legal": 0.8, "web": 0.5}}))
    return {"input": {"path": [str(CORPUS / "news.jsonl"), str(CORPUS / "legal.jsonl")], "chunk_bytes": 300_000},
            "output": str(out), "ray": {"num_cpus": 2, "small_input_docs": 0, "progress": False},
            "stages": [{"tokenize": {}}, {"decompose": {"min_log2": 6, "max_log2": 9}},
                       {"export_tokens": {"format": "megatron", "split_by": "domain"}},
                       {"export_tokens": {"format": "hf", "target_file_bytes": 100_000}},
                       {"export_tokens": {"format": "megatron", "path": str(outside), "split_by": "domain",
                                          "weights_file": str(tmp / "w.json")}}]}


@pytest.fixture(scope="module")
def clean(ray_session, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export_tokens")
    raw = pipeline(tmp, tmp / "out", tmp / "outside")
    (tmp / "p.yaml").write_text(yaml.safe_dump(raw))
    stats = run_pipeline(load_config(raw), report=False)
    return tmp, stats


def kept_texts(out) -> collections.Counter:
    """What the export must hold: each kept document's text followed by the EOS."""
    return collections.Counter(t + EOS for t in pq.read_table(out / "kept", columns=["text"])["text"].to_pylist())


def decoder(path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    return lambda ids: tok.decode(list(map(int, ids)), skip_special_tokens=False)


def test_megatron_core_reads_every_document(clean):
    tmp, stats = clean
    out = tmp / "out"
    exp = out / "megatron"
    man = json.loads((exp / "export.json").read_text())
    assert sorted(man["prefixes"]) == ["legal_text_document", "news_text_document"]
    decode, got, tokens = decoder(exp), collections.Counter(), {}
    kept = pq.read_table(out / "kept", columns=["text", "domain"]).to_pylist()
    for name, entry in man["prefixes"].items():
        ds = indexed_dataset.IndexedDataset(str(exp / name))
        assert len(ds) == entry["documents"] and ds.index.dtype == np.uint16
        assert list(ds.document_indices) == list(range(len(ds) + 1))  # one document per sequence
        texts = collections.Counter(decode(ds[i]) for i in range(len(ds)))
        assert texts == collections.Counter(r["text"] + EOS for r in kept if r["domain"] == entry["domain"])
        got += texts
        tokens[entry["domain"]] = int(ds.sequence_lengths.sum())
    assert got == kept_texts(out)
    # the --data-path blend: the natural mixture, by tokens
    parts = (exp / "data_path.txt").read_text().split()
    weights = dict(zip(parts[1::2], map(float, parts[::2])))
    total = sum(tokens.values())
    assert weights == {str(exp / f"{d}_text_document"): pytest.approx(n / total, rel=1e-5) for d, n in tokens.items()}
    assert stats["stages"]["export_tokens:megatron"]["metrics"]["documents"] == len(kept)
    # the DoReMi weights of a file, over the domains exported (web has no documents)
    parts = (tmp / "outside" / "data_path.txt").read_text().split()
    assert dict(zip(parts[1::2], map(float, parts[::2]))) == {
        str(tmp / "outside" / "legal_text_document"): 0.8, str(tmp / "outside" / "news_text_document"): 0.2}


def test_datasets_loads_the_hf_export(clean):
    tmp, _ = clean
    out = tmp / "out"
    exp = out / "hf"
    files = sorted(os.listdir(exp / "data"))
    assert len(files) > 1 and files[0] == "train-00000.parquet"  # bounded by target_file_bytes
    for f in files:
        lengths = [len(x) for x in pq.read_table(exp / "data" / f)["input_ids"].to_pylist()]
        assert sum(lengths) * 4 <= 100_000 or len(lengths) == 1
    ds = datasets.load_dataset("parquet", data_dir=str(exp))["train"]
    assert ds.column_names == ["id", "domain", "input_ids"]
    assert ds.features["input_ids"].feature.dtype == "int32"
    decode = decoder(exp)
    assert collections.Counter(decode(r["input_ids"]) for r in ds) == kept_texts(out)
    kept = pq.read_table(out / "kept", columns=["id", "domain"]).to_pylist()
    assert sorted((r["id"], r["domain"]) for r in ds) == sorted((r["id"], r["domain"]) for r in kept)
    man = json.loads((exp / "export.json").read_text())  # the counts it reports are the dataset's
    assert (man["documents"], man["tokens"]) == (len(ds), sum(len(r["input_ids"]) for r in ds))
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(exp)).decode(ds[0]["input_ids"]).endswith(EOS)


@pytest.mark.slow  # the slow tier: pytest -m slow (README "Set-up")
def test_resume_after_a_kill_during_the_export_writes_the_same_bytes(clean, tmp_path):
    tmp, _ = clean
    raw = pipeline(tmp_path, tmp_path / "out", tmp_path / "outside")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "DATACURATE_FAULT"))}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "datacurate.cli", "run", str(tmp_path / "p.yaml"), "--no-report", "--quiet"]
    killed = subprocess.run(cmd, env={**env, "DATACURATE_FAULT": "export_tokens:write:3:kill-driver",
                                      "DATACURATE_FAULT_DIR": str(tmp_path / "f")},
                            capture_output=True, text=True, timeout=300, cwd=REPO)
    assert faults.fired("export_tokens", "write", 3, str(tmp_path / "f")), killed.stderr[-3000:]
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not (tmp_path / "out" / "megatron").exists()  # nothing of the export outside the staging
    res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "export_tokens write: skipped" in res.stderr
    for name in ("megatron", "hf"):
        a, b = tree_digest(tmp / "out" / name), tree_digest(tmp_path / "out" / name)
        assert a.pop("export.json") and b.pop("export.json")  # names the run's OUT
        a.pop("data_path.txt", None), b.pop("data_path.txt", None)
        assert a == b, name
    a, b = tree_digest(tmp / "outside"), tree_digest(tmp_path / "outside")
    assert {k for k in a} == {k for k in b}
    assert {k: v for k, v in a.items() if k.endswith((".bin", ".idx"))} == \
           {k: v for k, v in b.items() if k.endswith((".bin", ".idx"))}


def test_index_of_a_large_vocabulary_is_int32(tmp_path):
    """Ids past uint16 go to an int32 .bin (Megatron has no uint32); megatron-core reads them."""
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 100_000, size=n) for n in (3, 1, 7)]
    dtype = megatron.token_dtype(100_000)
    stems = [megatron.write_piece(str(tmp_path / f"p{i}"), d, np.array([len(d)]), dtype)["stem"]
             for i, d in enumerate(docs)]
    megatron.merge(str(tmp_path / "x"), stems, dtype)
    ds = indexed_dataset.IndexedDataset(str(tmp_path / "x"))
    assert ds.index.dtype == np.int32 and [list(ds[i]) for i in range(3)] == [list(d) for d in docs]


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("datacurate: error: "), err
    return err[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    raw = pipeline(tmp_path, tmp_path / "out", tmp_path / "outside")
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(raw))
    assert "'onnx' is not one of ['megatron', 'hf']" in _error(capsys, ["run", str(p), "--set", "2.format=onnx"])
    assert "needs split_by: domain" in _error(capsys, ["run", str(p), "--set", "4.split_by=null"])
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "notes.txt").write_text("mine")
    assert "is not empty and holds no export" in _error(capsys, ["run", str(p)])
    assert "exports to the same path" in _error(capsys, ["run", str(p), "--set", f"4.path={tmp_path / 'out' / 'hf'}",
                                                         "--set", "4.format=hf", "--set", "4.split_by=null",
                                                         "--set", "4.weights_file=null"])
    raw["stages"] = raw["stages"][2:]
    p.write_text(yaml.safe_dump(raw))
    assert "needs a 'tokenize' stage before it" in _error(capsys, ["run", str(p)])


def test_exports_to_s3_equal_the_local_ones(ray_session, s3_server, tmp_path):
    """``path: s3://...``: the same files, byte for byte, as a local export; megatron-core
    and ``datasets`` read the downloaded copies."""
    from tests import s3

    s3.make_bucket("exports")

    def run(where: str, out) -> None:
        raw = {"input": {"path": [str(CORPUS / "news.jsonl")], "chunk_bytes": 300_000}, "output": str(out),
               "ray": {"num_cpus": 2, "small_input_docs": 0, "progress": False},
               "stages": [{"tokenize": {}},
                          {"export_tokens": {"format": "megatron", "path": f"{where}/megatron"}},
                          {"export_tokens": {"format": "hf", "path": f"{where}/hf"}}]}
        run_pipeline(load_config(raw), report=False)

    run(str(tmp_path / "local"), tmp_path / "out-local")
    run("s3://exports/run", tmp_path / "out-s3")
    got = tmp_path / "got"
    for key in [k for k in s3.keys("s3://exports/run") if not k.endswith("/")]:  # not a directory marker
        target = got / key.removeprefix("run/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(s3.get(f"s3://exports/{key}"))
    local = tmp_path / "local"
    same = {k: v for k, v in tree_digest(got).items() if not k.endswith("export.json")}  # it names its paths
    assert same == {k: v for k, v in tree_digest(local).items() if not k.endswith("export.json")}
    man = json.loads((got / "megatron" / "export.json").read_text())
    assert man["prefixes"] == json.loads((local / "megatron" / "export.json").read_text())["prefixes"]
    for name, entry in man["prefixes"].items():
        assert len(indexed_dataset.IndexedDataset(str(got / "megatron" / name))) == entry["documents"]
    ds = datasets.load_dataset("parquet", data_dir=str(got / "hf" / "data"), split="train")
    assert ds.num_rows == sum(e["documents"] for e in man["prefixes"].values())
