"""Megatron-LM's indexed dataset (``<prefix>.bin`` + ``<prefix>.idx``), written without Megatron.

The format is that of ``megatron/core/datasets/indexed_dataset.py`` (``_IndexWriter``,
megatron-core 0.16; NeMo and datatrove write the same files), which Megatron's
``--data-path`` reads through ``IndexedDataset(prefix)``:

* ``.bin``: the token ids of every sequence back to back, little-endian, no header.
* ``.idx``: ``b"MMIDIDX\\x00\\x00"``; ``<Q`` version 1; ``<B`` dtype code (uint16 = 8,
  int32 = 4, see :data:`DTYPE_CODES`); ``<Q`` sequence count ``n``; ``<Q`` document
  count (the length of the document index array, ``documents + 1``); ``int32[n]``
  sequence lengths in tokens; ``int64[n]`` sequence pointers (byte offsets into
  ``.bin``); ``int64[documents + 1]`` document indices: ``0``, then the index of the
  sequence after each document's last.

Here one document is one sequence (its tokens as the tokenize stage made them, EOS
included), so the document indices are ``0 .. n``. Writing has two steps, as for the
token shards (:mod:`datacurate.formats.shards`): each work part writes a *piece* per prefix
(its ``.bin`` bytes and an ``int32`` lengths file, :func:`write_piece`); then
:func:`merge` concatenates a prefix's pieces, in order, into one ``.bin`` (streamed,
bounded reads) and writes the ``.idx`` from their lengths. Every file is written under
a temporary name and renamed (uploaded whole on S3).
"""

from __future__ import annotations

import struct

import numpy as np

from datacurate.formats import shards, storage

HEADER = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
               np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.float32): 7, np.dtype(np.uint16): 8}
LENGTH_DTYPE = np.dtype("<i4")


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits, else int32 (Megatron has no uint32 code)."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.int32)


def index_bytes(lengths: np.ndarray, dtype: np.dtype) -> bytes:
    """The ``.idx`` file of sequences of ``lengths`` tokens, one document each."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) and int(lengths.max()) > np.iinfo(np.int32).max:
        raise ValueError("a sequence longer than 2^31 - 1 tokens does not fit the index")
    pointers = np.zeros(len(lengths), dtype="<i8")
    np.cumsum(lengths[:-1] * np.dtype(dtype).itemsize, out=pointers[1:])
    documents = np.arange(len(lengths) + 1, dtype="<i8")
    head = HEADER + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[np.dtype(dtype)])
    head += struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(documents))
    return head + lengths.astype(LENGTH_DTYPE).tobytes() + pointers.tobytes() + documents.tobytes()


def write_piece(stem: str, tokens: np.ndarray, lengths: np.ndarray, dtype: np.dtype) -> dict:
    """One part's documents of one prefix: ``tokens`` (flat ids) -> ``<stem>.bin``, their
    ``lengths`` -> ``<stem>.lengths`` (int32); returns the piece's entry."""
    shards.write_file(stem + ".bin", shards.token_array(tokens, dtype))
    shards.write_file(stem + ".lengths", lengths.astype(LENGTH_DTYPE))
    return {"stem": stem, "documents": int(len(lengths)), "tokens": int(tokens.size)}


def merge(prefix: str, stems: list[str], dtype: np.dtype) -> dict:
    """Pieces (``stems``, in order) -> ``<prefix>.bin`` and ``<prefix>.idx``; their counts."""
    import xxhash

    itemsize = np.dtype(dtype).itemsize
    lengths = [np.frombuffer(storage.read_bytes(s + ".lengths"), dtype=LENGTH_DTYPE) for s in stems]
    digest = xxhash.xxh3_128()
    with storage.atomic_file(prefix + ".bin") as dst:
        for stem, n in zip(stems, lengths):
            nbytes = int(n.sum(dtype=np.int64)) * itemsize
            if storage.size(stem + ".bin") != nbytes:
                raise ValueError(f"{stem}.bin does not hold the {nbytes} bytes its lengths say")
            with storage.open_input(stem + ".bin") as src:
                shards.copy_bytes(src, dst, nbytes, digest)
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, LENGTH_DTYPE)
    storage.write_bytes(prefix + ".idx", index_bytes(all_lengths, dtype))
    return {"documents": int(len(all_lengths)), "tokens": int(all_lengths.sum(dtype=np.int64)),
            "bin_xxh3": digest.hexdigest()}
