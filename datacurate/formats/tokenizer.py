"""Tokenizers: train a byte-level BPE on a run's kept text, or load any ``tokenizer.json``.

Byte-level BPE (as GPT-2, Radford et al. 2019) starts from the 256 byte values, so every
string encodes without an unknown token and decodes back exactly — characters the
tokenizer never saw in training become several byte tokens instead of ``<unk>``. The
``tokenizers`` library (Rust) trains it (an 8k vocabulary on 20 MB in ~3 s on this
machine) and encodes whole batches in parallel.

A tokenizer is identified by the sha256 of its ``tokenizer.json`` bytes; the shards'
manifest records it with the vocabulary size and the EOS / BOS ids, so a training run
can check it decodes with the tokenizer the shards were made with.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

import numpy as np

from datacurate.formats import storage
from datacurate.core.coerce import ConfigError

DEFAULT_TOKENIZER = Path(__file__).resolve().parent.parent / "resources" / "tokenizers" / "sample-bpe-8k.json"
EOS_TOKEN = "<|endoftext|>"
BOS_TOKEN = "<|bos|>"
# tried in order when no EOS / BOS token is named (GPT-2, Llama/T5, Llama 3, Gemma, BERT)
EOS_CANDIDATES = (EOS_TOKEN, "</s>", "<|end_of_text|>", "<eos>", "[SEP]")
BOS_CANDIDATES = (BOS_TOKEN, "<s>", "<|begin_of_text|>", "<bos>", "[CLS]")
UNK_CANDIDATES = ("<unk>", "[UNK]", "<|unk|>")


@dataclass(frozen=True)
class TokenizerInfo:
    """What a shard reader needs to know about the tokenizer that made the tokens."""

    path: str
    sha256: str
    vocab_size: int  # including added (special) tokens
    eos_token: str
    eos_id: int
    bos_token: Optional[str]
    bos_id: Optional[int]  # None when the tokenizer has no BOS token
    unk_id: Optional[int]  # None for byte-level tokenizers (nothing is unknown)

    @property
    def dtype(self) -> np.dtype:
        return token_dtype(self.vocab_size)

    def to_dict(self) -> dict:
        return {**asdict(self), "dtype": self.dtype.name}


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab <= 65,536), else uint32."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


def file_sha256(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _find(tok, name: Optional[str], candidates: Iterable[str], what: str, path: str) -> tuple[Optional[str], Optional[int]]:
    if name is not None:
        i = tok.token_to_id(name)
        if i is None:
            raise ConfigError(f"tokenizer {path}: no {what} token {name!r} in its vocabulary")
        return name, i
    for cand in candidates:
        i = tok.token_to_id(cand)
        if i is not None:
            return cand, i
    return None, None


def load_tokenizer(path: str | os.PathLike | None = None, eos_token: Optional[str] = None,
                   bos_token: Optional[str] = None):
    """``tokenizer.json`` (default: the shipped sample tokenizer) -> (Tokenizer, TokenizerInfo)."""
    from tokenizers import Tokenizer

    path = str(path or DEFAULT_TOKENIZER)
    if storage.is_remote(path):  # each worker reads its own copy (a cache per machine)
        path = storage.local_copy(path) if storage.isfile(path) else path
    if not os.path.isfile(path):
        raise ConfigError(f"tokenizer file not found: {path}")
    try:
        tok = Tokenizer.from_file(path)
    except Exception as e:  # noqa: BLE001 - the library raises a bare Exception on bad JSON
        raise ConfigError(f"tokenizer {path}: not a tokenizers JSON file ({str(e).splitlines()[0]})") from None
    eos, eos_id = _find(tok, eos_token, EOS_CANDIDATES, "EOS", path)
    if eos is None:
        raise ConfigError(f"tokenizer {path}: no EOS token found (tried {', '.join(EOS_CANDIDATES)}); set eos_token")
    bos, bos_id = _find(tok, bos_token, BOS_CANDIDATES, "BOS", path)
    _, unk_id = _find(tok, None, UNK_CANDIDATES, "UNK", path)
    info = TokenizerInfo(path=path, sha256=file_sha256(path), vocab_size=tok.get_vocab_size(with_added_tokens=True),
                         eos_token=eos, eos_id=eos_id, bos_token=bos, bos_id=bos_id, unk_id=unk_id)
    return tok, info


def train_tokenizer(texts: Iterable[str | list[str]], vocab_size: int = 8192, min_frequency: int = 2,
                    bos: bool = False, length: Optional[int] = None):
    """Train a byte-level BPE on ``texts`` (strings or batches of strings).

    Special tokens: ``<|endoftext|>`` (EOS, id 0) and, with ``bos``, ``<|bos|>`` (id 1).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 256 + 2:
        raise ConfigError(f"vocab_size must be at least 258 (256 bytes + special tokens), got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = [EOS_TOKEN] + ([BOS_TOKEN] if bos else [])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=length)
    return tok


def iter_texts(paths: list[str], batch_rows: int = 2048) -> Iterator[list[str]]:
    """Text batches of the kept documents in ``paths``: a run directory (its ``kept/``),
    or any input datacurate reads (JSONL / Parquet files, directories, globs). Streams
    batch by batch; rows the reader rejects (malformed JSON …) are skipped."""
    from datacurate.configs.input import InputConfig
    from datacurate.formats.io import read_texts

    resolved = [os.path.join(p, "kept") if os.path.isdir(os.path.join(p, "kept")) else p for p in paths]
    for texts in read_texts(InputConfig(path=resolved, batch_rows=batch_rows)):
        if len(texts):
            yield texts.to_pylist()


def hf_tokenizer_files(info: TokenizerInfo, model_max_length: Optional[int] = None) -> dict[str, bytes]:
    """The files with which ``transformers.AutoTokenizer.from_pretrained(dir)`` opens this
    tokenizer as a ``PreTrainedTokenizerFast``: ``tokenizer.json`` (the file itself) and a
    ``tokenizer_config.json`` naming the special tokens. No BOS in the vocabulary: the EOS
    stands in, as in GPT-2, where ``<|endoftext|>`` is both."""
    import json

    special = {"eos_token": info.eos_token, "bos_token": info.bos_token or info.eos_token}
    if info.unk_id is not None:
        from tokenizers import Tokenizer

        special["unk_token"] = Tokenizer.from_file(info.path).id_to_token(info.unk_id)
    config = {"tokenizer_class": "PreTrainedTokenizerFast", **special, "add_bos_token": False,
              "add_eos_token": False, "clean_up_tokenization_spaces": False}
    if model_max_length:
        config["model_max_length"] = model_max_length
    return {"tokenizer.json": storage.read_bytes(info.path),
            "tokenizer_config.json": json.dumps(config, indent=2).encode(),
            "special_tokens_map.json": json.dumps(special, indent=2).encode()}
