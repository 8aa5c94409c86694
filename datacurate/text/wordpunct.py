"""Hashed word-punct n-grams of a whole batch, straight from the UTF-8 buffer.

Tokens are those of NLTK's ``WordPunctTokenizer`` (regex ``\\w+|[^\\w\\s]+``), which the
DSIR reference code uses (Xie et al. 2023): runs of word characters, and runs of
characters that are neither word characters nor whitespace. Word and space follow
Python's own ``re`` classes (``str.isalnum() or "_"``, ``str.isspace()``): ASCII bytes
are classified by value, multi-byte characters by decoding their code points against a
table built from those methods. A token's hash is the polynomial sum(byte K^i) mod 2^64
read off one prefix sum (as :mod:`datacurate.text.minhash`), mixed with its length;
an n-gram's hash chains the hashes of its tokens. There is no Python loop per document
or token, and the hashes are stable across processes and machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.text import words as wordseg
from datacurate.text.charclass import CharTable
from datacurate.text.chunks import code_points, utf8_buffer
from datacurate.text.minhash import span_hashes, spans_by_runs
from datacurate.text.textstats import mix

SPACE, WORD, PUNCT = 0, 1, 2
_NGRAM_SALT = np.uint64(0x2545F4914F6CDD1D)


class _Classes(CharTable):
    """SPACE, WORD or PUNCT of each code point, by Python's own ``re`` classes."""

    dtype, fill = np.int8, PUNCT

    def _ask(self, cps: np.ndarray) -> np.ndarray:
        return np.array([WORD if c.isalnum() or c == "_" else SPACE if c.isspace() else PUNCT
                         for c in map(chr, cps.tolist())], dtype=np.int8)


_CLASSES = _Classes()


def _tokens(t: pa.LargeStringArray) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every token, (N+1,) token offsets per document)."""
    raw, off = utf8_buffer(t)
    n = len(raw)
    if n == 0:
        return np.zeros(0, np.uint64), np.zeros(len(t) + 1, np.int64)
    cls = _CLASSES.by_byte()[raw]  # (n,) int8: ASCII by value; bytes of multi-byte characters fixed below
    lead, size, cp = code_points(raw)
    if len(lead):
        c = _CLASSES.of(cp)
        for k in range(4):
            sel = k < size
            cls[np.minimum(lead[sel] + k, n - 1)] = c[sel]
    # a token is a maximal run of one non-space class, never running across documents
    edge = np.ones(n + 1, dtype=bool)  # edge[i]: a boundary between byte i-1 and byte i
    edge[1:-1] = cls[1:] != cls[:-1]
    edge[off] = True
    word = cls != SPACE
    s = np.flatnonzero(edge[:-1] & word)
    e = np.flatnonzero(edge[1:] & word) + 1
    return span_hashes(raw, s, e), np.searchsorted(s, off)


@dataclass
class Features:
    """Hashed n-gram features of a batch: one (document, bucket) pair per n-gram."""

    doc: np.ndarray  # (F,) int64 document index of each n-gram
    bucket: np.ndarray  # (F,) int64 bucket of each n-gram
    n_tokens: np.ndarray  # (D,) word-punct tokens per document
    n_docs: int

    def counts(self, num_buckets: int, docs: Optional[np.ndarray] = None) -> np.ndarray:
        """(num_buckets,) n-gram counts over all documents, or over the ``docs`` mask."""
        b = self.bucket if docs is None else self.bucket[np.asarray(docs, dtype=bool)[self.doc]]
        return np.bincount(b, minlength=num_buckets).astype(np.int64)

    def per_doc(self, values: np.ndarray) -> np.ndarray:
        """Sum ``values[bucket]`` over each document's n-grams."""
        return np.bincount(self.doc, weights=values[self.bucket], minlength=self.n_docs)


def tokenize(texts: pa.Array, langs=None) -> tuple[np.ndarray, np.ndarray]:
    """Lowercased word-punct token hashes and (D+1,) offsets, in runs of ~2 MB of text.
    Runs of scripts written without spaces are cut into words first
    (:func:`datacurate.text.words.spaced`, by ``langs``); other text tokenizes as before."""
    texts = wordseg.spaced(texts, langs)
    return spans_by_runs(pc.utf8_lower(pc.fill_null(texts, "")).cast(pa.large_string()), _tokens)


def features(texts: pa.Array, num_buckets: int, ngrams: int = 2, docs: Optional[np.ndarray] = None,
             langs=None) -> Features:
    """Unigrams .. ``ngrams``-grams of every document, hashed into ``num_buckets``.

    ``docs`` (a mask) limits the n-grams to some documents; token counts are always
    computed for all of them. ``langs``: the word segmenter's language per row (or None).
    """
    h, off = tokenize(texts, langs)
    counts = np.diff(off)
    n_docs = len(counts)
    doc = np.repeat(np.arange(n_docs), counts)
    keep = np.ones(len(h), dtype=bool) if docs is None else np.asarray(docs, dtype=bool)[doc]
    remaining = counts[doc] - (np.arange(len(h)) - off[doc])  # tokens from j to the end of its document
    docs_out, buckets = [doc[keep]], [(h[keep] % np.uint64(num_buckets)).astype(np.int64)]
    g = h
    for k in range(2, ngrams + 1):
        nxt = np.zeros_like(h)
        nxt[: max(len(h) - k + 1, 0)] = h[k - 1 :]
        g = mix(g ^ _NGRAM_SALT, nxt)
        ok = keep & (remaining >= k)
        docs_out.append(doc[ok])
        buckets.append((g[ok] % np.uint64(num_buckets)).astype(np.int64))
    return Features(np.concatenate(docs_out), np.concatenate(buckets), counts, n_docs)
