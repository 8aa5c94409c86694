"""The per-block work of ``model_classifier``, in the order the engine runs it: token ids
on CPU workers (:func:`tokenize_block`), scores on a pool of model workers
(:class:`BlockScorer`: GPU actors when the cluster has GPUs), each block's scores saved
beside its part (:func:`save_block`), and one scores file per part (:func:`gather`).
Plain functions and a class on Arrow tables: the engine decides where they run."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.schema import ORD, TEXT, WPART
from datacurate.formats import storage
from datacurate.models import hf_classifier as hf
from datacurate.phases.ranking import WEIGHT, scores_path, weights

IDS, SCORED = "_ids", "_scored"


@dataclass(frozen=True)
class Card:
    """What a model's card fixes: where it is, how its input is cut, how its score is made."""

    path: str  # a resolved local directory
    name: str  # column prefix
    head: str  # "regression" or "softmax"
    label: Optional[str]  # softmax: the label whose probability is the score (None: the top label's)
    max_length: int  # tokens, special tokens included
    max_chars: Optional[int]  # characters given to the tokenizer first (None: all)
    int_score: Optional[tuple]  # (lo, hi): <name>_int_score = round(clamp(score, lo, hi)) (FineWeb-Edu: 0, 5)


def columns(card_name: str, head: str, int_score: bool, buckets: bool) -> dict[str, pa.DataType]:
    cols = {f"{card_name}_score": pa.float32()}
    if head == "softmax":
        cols[f"{card_name}_label"] = pa.string()
    if int_score:
        cols[f"{card_name}_int_score"] = pa.int32()
    if buckets:
        cols[f"{card_name}_bucket"] = pa.int32()
    return cols


@functools.lru_cache(maxsize=2)
def _tokenizer(path: str):
    return hf.load_tokenizer(path)  # once per worker process, not per block


def tokenize_block(batch: pa.Table, card: Card, languages: Optional[list], weight: str) -> pa.Table:
    """``_ord``, ``_wpart``, token ids (empty for rows not scored), ``_scored``, ``_weight``."""
    todo = np.ones(batch.num_rows, bool)
    if languages is not None and "lang" in batch.column_names and batch.schema.field("lang").type != pa.null():
        todo = np.asarray(pc.is_in(batch.column("lang"), pa.array(languages, pa.string())).fill_null(False))
    idx = np.flatnonzero(todo)
    ids: list = [[] for _ in range(batch.num_rows)]
    if len(idx):
        texts = pc.fill_null(batch.column(TEXT), "").take(pa.array(idx)).to_pylist()
        for i, t in zip(idx, hf.tokenize(_tokenizer(card.path), texts, card.max_length, card.max_chars)):
            ids[i] = t
    return pa.table({ORD: batch.column(ORD), WPART: batch.column(WPART), IDS: pa.array(ids, pa.list_(pa.int32())),
                     SCORED: pa.array(todo), WEIGHT: pa.array(weights(batch, weight), pa.int64())})


class BlockScorer:
    """A model worker: token ids in, ``<name>_score`` (and ``_label``, ``_int_score``) out."""

    def __init__(self, card: Card, device: str, dtype: str, batch_tokens: int):
        self.card = card
        self.scorer = hf.Scorer(card.path, device, dtype, batch_tokens)
        self.head = hf.Head(card.head, hf.id2label(card.path), card.label)

    def __call__(self, batch: pa.Table) -> pa.Table:
        c, n = self.card, batch.num_rows
        todo = np.asarray(batch.column(SCORED))
        idx = np.flatnonzero(todo)
        score = np.full(n, np.nan, np.float32)
        label = np.full(n, None, object)
        if len(idx):
            logits = self.scorer.logits(batch.column(IDS).take(pa.array(idx)).combine_chunks())  # (k, L)
            s, names = self.head.scores(logits)
            score[idx] = s
            if names is not None:
                label[idx] = names
        out = {ORD: batch.column(ORD), WPART: batch.column(WPART), WEIGHT: batch.column(WEIGHT),
               f"{c.name}_score": pa.array(score, pa.float32(), mask=~todo)}
        if c.head == "softmax":
            out[f"{c.name}_label"] = pa.array(label, pa.string())
        if c.int_score is not None:
            lo, hi = c.int_score  # FineWeb-Edu's card: int(round(max(0, min(score, 5))))
            ints = np.round(np.clip(np.nan_to_num(score), lo, hi)).astype(np.int32)
            out[f"{c.name}_int_score"] = pa.array(ints, pa.int32(), mask=~todo)
        return pa.table(out)


def block_dir(d: str, part: str) -> str:
    return storage.join(d, part.removesuffix(".parquet") + ".blocks")


def save_block(batch: pa.Table, d: str) -> pa.Table:
    """Each part's rows of this block saved under ``<part>.blocks/`` (named by their first
    ``_ord``: a retried block overwrites itself); one row per file written."""
    from datacurate.formats.io import write_atomic

    parts = batch.column(WPART).to_numpy(zero_copy_only=False)
    written = []
    for part in np.unique(parts):
        rows = batch.filter(pa.array(parts == part)).drop_columns([WPART])
        path = storage.join(block_dir(d, str(part)), f"{int(pc.min(rows.column(ORD)).as_py()):020d}.parquet")
        write_atomic(rows, path)
        written.append(path)
    return pa.table({"file": pa.array(written, pa.string())})


def gather(part: str, d: str) -> int:
    """One part's blocks as its scores file (rows by ``_ord``); how many rows."""
    from datacurate.formats.io import write_atomic

    name = part.rsplit("/", 1)[-1]
    files = storage.list_files(block_dir(d, name), ".parquet") if storage.isdir(block_dir(d, name)) else []
    tables = [storage.read_parquet(f) for f in files]
    if not tables:
        return 0
    t = pa.concat_tables(tables)
    t = t.take(pc.sort_indices(t.column(ORD)))
    write_atomic(t, scores_path(d, part))
    return t.num_rows
