"""Tokenizer training / loading and the ``tokenize`` stage (no Ray)."""

import json

import numpy as np
import pyarrow as pa
import pytest

from datacurate import cli
from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.stages.tokenize import Tokenize
from datacurate.stages.tokenize import TOKENS
from datacurate.formats.tokenizer import DEFAULT_TOKENIZER, file_sha256, load_tokenizer, token_dtype, train_tokenizer

PROSE = ["The committee met on Tuesday to discuss the budget for the coming year.",
         "She walked to the station, bought a ticket and waited for the evening train.",
         "Results of the survey were published in the journal last spring."] * 20


def table(texts):
    return pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": pa.array(texts, pa.large_string())})


def token_lists(out: pa.Table) -> list[list[int]]:
    return out.column(TOKENS).to_pylist()


def test_shipped_tokenizer_info():
    tok, info = load_tokenizer()
    assert info.path == str(DEFAULT_TOKENIZER) and info.sha256 == file_sha256(DEFAULT_TOKENIZER)
    assert info.vocab_size == 8192 and info.dtype == np.uint16
    assert info.eos_token == "<|endoftext|>" and info.eos_id == tok.token_to_id("<|endoftext|>")
    assert info.bos_id is None and info.unk_id is None  # byte-level: nothing is unknown
    assert token_dtype(65536) == np.uint16 and token_dtype(65537) == np.uint32


def test_every_document_ends_with_eos_and_matches_the_tokenizer():
    stage = Tokenize()
    texts = PROSE[:3] + ["A line\nand another\n\n  indented   spaces\t tab"]
    out = stage(table(texts))
    assert out.column("reject_reason").null_count == out.num_rows
    ref = stage.tokenizer.encode_batch(texts, add_special_tokens=False)
    for ids, text, enc, n in zip(token_lists(out), texts, ref, out.column("n_tokens").to_pylist()):
        assert ids[-1] == stage.info.eos_id and ids[:-1] == enc.ids and n == len(ids)
        assert stage.tokenizer.decode(ids[:-1]) == text  # byte-level BPE is lossless
    assert out.schema.field(TOKENS).type == pa.large_list(pa.uint32())


def test_empty_document_is_rejected_and_counted():
    out = Tokenize()(table(["", "Some words here.", ""]))
    assert out.column("reject_reason").to_pylist() == ["tokenize/empty", None, "tokenize/empty"]
    assert out.column("n_tokens").to_pylist()[0] == 0
    assert Tokenize().metrics(out) == {"tokens": out.column("n_tokens").to_pylist()[1]}


def test_characters_outside_training_data_round_trip_as_bytes():
    # the shipped tokenizer saw English text only: CJK, emoji, Cyrillic, control and
    # private-use characters still encode (as byte tokens) and decode back exactly
    texts = ["日本語のテキストです。", "emoji 🎉🦀 and ZWJ 👩\u200d💻", "Привет, мир", "ctrl \x00\x07\x1b nul", "\ue000\U0010fffd"]
    stage = Tokenize()
    out = stage(table(texts))
    assert out.column("reject_reason").null_count == len(texts)
    for ids, text in zip(token_lists(out), texts):
        assert stage.tokenizer.decode(ids[:-1]) == text and ids[-1] == stage.info.eos_id
    assert stage.metrics(out) == {"tokens": sum(map(len, token_lists(out)))}  # no unk_tokens: none can occur


def test_unknown_token_tokenizer_counts_unknowns(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"</s>": 0, "<unk>": 1, "the": 2, "cat": 3, "sat": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "wordlevel.json"
    tok.save(str(path))
    stage = Tokenize(tokenizer=str(path))
    assert (stage.info.eos_token, stage.info.unk_id) == ("</s>", 1)
    out = stage(table(["the cat sat", "the dog sat on 日本"]))
    assert token_lists(out) == [[2, 3, 4, 0], [2, 1, 4, 1, 1, 0]]
    assert stage.metrics(out) == {"tokens": 10, "unk_tokens": 3}


def test_add_bos(tmp_path):
    tok = train_tokenizer([PROSE], vocab_size=300, bos=True)
    path = tmp_path / "bos.json"
    tok.save(str(path))
    stage = Tokenize(tokenizer=str(path), add_bos=True)
    assert (stage.info.eos_id, stage.info.bos_id) == (0, 1)
    ids = token_lists(stage(table(PROSE[:2])))
    assert all(x[0] == 1 and x[-1] == 0 and 0 not in x[1:-1] for x in ids)
    with pytest.raises(ConfigError, match="no BOS token"):
        Tokenize(add_bos=True)  # the shipped tokenizer has none


def _old_tokens(stage: Tokenize, texts: list[str], bos) -> tuple[np.ndarray, np.ndarray]:
    """The code before issue 18: ids of every text, then EOS / BOS put in by one scatter."""
    encs = stage.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    values = np.concatenate([np.asarray(e.ids, np.uint32) for e in encs] + [np.zeros(0, np.uint32)])
    offsets = np.concatenate([[0], np.cumsum([len(e.ids) for e in encs])]).astype(np.int64)
    n, extra = len(texts), 1 + (bos is not None)
    lengths = np.diff(offsets)
    new_offsets = np.concatenate([[0], np.cumsum(lengths + extra)]).astype(np.int64)
    out = np.empty(new_offsets[-1], dtype=np.uint32)
    shift = new_offsets[:-1] - offsets[:-1] + (bos is not None)
    out[np.arange(len(values)) + shift[np.repeat(np.arange(n), lengths)]] = values
    out[new_offsets[1:] - 1] = stage.info.eos_id
    if bos is not None:
        out[new_offsets[:-1]] = bos
    return out, new_offsets


@pytest.mark.parametrize("bos, batch_size", [(False, 1024), (False, 7), (True, 5)])
def test_tokens_equal_the_code_before(tmp_path, bos, batch_size):
    texts = PROSE + ["", "x", "\u00e9t\u00e9 \U0001F600 \u65e5\u672c\u8a9e", "", "  \n\t"] + PROSE[:2]
    if bos:
        tok = train_tokenizer([PROSE], vocab_size=300, bos=True)
        tok.save(str(tmp_path / "bos.json"))
        stage = Tokenize(tokenizer=str(tmp_path / "bos.json"), add_bos=True, batch_size=batch_size)
    else:
        stage = Tokenize(batch_size=batch_size)
    values, offsets = _old_tokens(stage, texts, stage.info.bos_id if bos else None)
    out = stage(table(texts))
    col = out.column(TOKENS).combine_chunks()
    assert np.array_equal(col.offsets.to_numpy(), offsets)
    assert np.array_equal(col.values.to_numpy(), values)
    empty = np.array([len(e.ids) == 0 for e in stage.tokenizer.encode_batch_fast(texts, add_special_tokens=False)])
    assert out.column("n_tokens").to_pylist() == np.where(empty, 0, np.diff(offsets)).tolist()
    assert out.column("reject_reason").to_pylist() == ["tokenize/empty" if e else None for e in empty]


def test_bad_tokenizer_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_tokenizer(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not a tokenizers JSON"):
        load_tokenizer(bad)
    from tokenizers import Tokenizer, models

    path = tmp_path / "noeos.json"
    Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).save(str(path))
    with pytest.raises(ConfigError, match="no EOS token"):
        load_tokenizer(path)
    with pytest.raises(ConfigError, match="no EOS token '<nope>'"):
        load_tokenizer(DEFAULT_TOKENIZER, eos_token="<nope>")
    cfg = {"input": "x.jsonl", "stages": [{"tokenize": {"batch_size": 0}}]}
    with pytest.raises(ConfigError, match="batch_size"):
        load_config(cfg)


def test_train_tokenizer_cli_is_deterministic(tmp_path, write_jsonl, capsys):
    data = write_jsonl("docs.jsonl", [{"id": str(i), "text": t} for i, t in enumerate(PROSE)] + [b"{broken"])
    outs = [tmp_path / "a" / "tok.json", tmp_path / "b" / "tok.json"]
    for out in outs:
        assert cli.main(["train-tokenizer", str(data), "--vocab-size", "320", "--out", str(out)]) == 0
    assert file_sha256(outs[0]) == file_sha256(outs[1])
    assert "vocab 320" in capsys.readouterr().out
    tok, info = load_tokenizer(outs[0])
    assert info.eos_id == 0 and json.loads(outs[0].read_text())["model"]["type"] == "BPE"
    assert tok.decode(tok.encode("The committee met.").ids) == "The committee met."


def test_null_text_is_an_empty_document():
    out = Tokenize()(pa.table({"text": pa.array(["hello", None], pa.large_string())}))
    assert out["reject_reason"].to_pylist() == [None, "tokenize/empty"]
