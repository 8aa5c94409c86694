"""Stage ``tokenize``: documents -> token ids, through the Rust tokenizer's batch API.

Each Arrow batch is encoded in one ``encode_batch_fast`` call (no offsets computed;
the library splits the batch over its own threads), without the tokenizer's
post-processor; then ``<|endoftext|>`` (the EOS) is appended to every document's ids —
and, with ``add_bos``, the BOS prepended — as they are converted to NumPy, so a
document's tokens always end with EOS whatever the tokenizer's own template says.

The ids go to the engine-internal column ``_tokens`` (``large_list<uint32>``): it
travels with the kept rows through the work directory to ``decompose``, which turns it
into shards; it is never written to ``kept/``. ``n_tokens`` (EOS / BOS included) is a
declared column and is.

Outcomes: empty text, or text the tokenizer turns into no token at all (a normaliser
that strips everything), is rejected as ``tokenize/empty``. Characters outside the
tokenizer's training data: a byte-level BPE (the shipped one) encodes them as byte
tokens, losslessly; a tokenizer with an unknown token maps them to it, counted in the
stage metric ``unk_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import N_TOKENS, TEXT, TOKENS
from datacurate.stages.base import Stage, first_reason
from datacurate.formats.tokenizer import load_tokenizer

@dataclass
class TokenizeConfig:
    tokenizer: Optional[str] = opt(None, "tokenizer.json; null = the shipped sample-bpe-8k.json")
    eos_token: Optional[str] = opt(None, "null: <|endoftext|>, </s>, <|end_of_text|>, <eos>, [SEP] (first in vocab)")
    bos_token: Optional[str] = opt(None, "null: <|bos|>, <s>, <|begin_of_text|>, <bos>, [CLS]")
    add_bos: bool = opt(False, "prepend the BOS token to every document (needs one in the vocabulary)")
    batch_size: int = opt(1024, "documents per encode_batch call")

    def validate(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be positive")


class Tokenize(Stage):
    name = "tokenize"
    side_inputs = ("tokenizer",)
    Config = TokenizeConfig
    columns = {N_TOKENS: pa.int32()}
    makes_tokens = True  # later stages (decompose) take their tokenizer from here

    @classmethod
    def tokenizer_of(cls, config: TokenizeConfig):
        """The tokenizer this stage, so configured, uses (its description: sha256, dtype ...)."""
        return load_tokenizer(config.tokenizer, config.eos_token, config.bos_token)[1]

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        c = self.config
        self.tokenizer, self.info = load_tokenizer(c.tokenizer, c.eos_token, c.bos_token)
        if c.add_bos and self.info.bos_id is None:
            from datacurate.core.coerce import ConfigError

            raise ConfigError(f"tokenize: add_bos is set but tokenizer {self.info.path} has no BOS token; set bos_token")

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Texts -> (flat uint32 ids, BOS / EOS included; int64 offsets; tokens per text
        without them). The EOS (and BOS) go into each document's id list before its one
        conversion to NumPy: no second pass over the ids to make room for them."""
        bos = self.info.bos_id if self.config.add_bos else None
        eos = self.info.eos_id
        parts, lengths = [], []
        enc = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        for s in range(0, len(texts), self.config.batch_size):
            for e in enc(texts[s:s + self.config.batch_size], add_special_tokens=False):
                ids = e.ids  # a fresh Python list
                lengths.append(len(ids))
                ids.append(eos)
                if bos is not None:
                    ids.insert(0, bos)
                parts.append(np.asarray(ids, dtype=np.uint32))
        raw_len = np.array(lengths, dtype=np.int64)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(raw_len + 1 + (bos is not None), out=offsets[1:])
        values = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
        return values, offsets, raw_len

    def annotate(self, table: pa.Table):
        texts = pc.fill_null(table.column(TEXT).combine_chunks(), "")  # null text: empty, rejected below
        values, offsets, raw_len = self.encode(texts.to_pylist())
        empty = raw_len == 0  # covers empty text: it encodes to nothing
        tokens = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values, pa.uint32()))
        n = np.diff(offsets).astype(np.int32)
        return ({N_TOKENS: pa.array(np.where(empty, 0, n), pa.int32()), TOKENS: tokens},
                first_reason(table.num_rows, [("tokenize/empty", empty)]))

    def metrics(self, table: pa.Table) -> dict:
        kept = table.filter(pc.is_null(table.column("reject_reason")))
        out = {"tokens": int(pc.sum(kept.column(N_TOKENS)).as_py() or 0)}
        if self.info.unk_id is not None and TOKENS in kept.column_names:
            flat = np.asarray(pc.list_flatten(kept.column(TOKENS)))
            out["unk_tokens"] = int(np.count_nonzero(flat == self.info.unk_id))
        return out
