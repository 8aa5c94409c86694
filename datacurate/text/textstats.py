"""Batch-vectorised text statistics shared by the heuristic rule sets.

Everything here works on a whole Arrow batch at once: texts are split into one flat
array of words (or lines) with a parallel array of document indices, so per-document
counts are ``np.bincount`` calls and repetition checks are one ``np.unique`` over
64-bit keys of (document, item). There is no Python loop over documents.

Word definition: whitespace tokens with leading/trailing punctuation stripped; tokens
that are punctuation only (``--``, ``''``, ``*``) are not words. Counting them as
words (as a spaCy tokenizer does) drops good edited prose for "words without a
letter".
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

PUNCT = string.punctuation + "\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u00ab\u00bb\u2039\u203a\u2013\u2014\u2015\u2026\u00b7\u2022\u00bf\u00a1\u3001\u3002\uff0c\uff01\uff1f\uff1a\uff1b"
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


def mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Combine two uint64 arrays into a well-spread 64-bit hash (splitmix64 finaliser)."""
    with np.errstate(over="ignore"):
        x = (a * _M1) ^ (b + _M2 + (a << np.uint64(6)) + (a >> np.uint64(2)))
        x ^= x >> np.uint64(31)
        x *= _M2
        x ^= x >> np.uint64(29)
    return x


@dataclass
class Pieces:
    """A flat array of pieces (words or lines) of every document of a batch."""

    values: pa.Array  # the pieces, concatenated over documents
    doc: np.ndarray  # (N,) document index of each piece
    offsets: np.ndarray  # (D+1,) piece offsets per document
    n_docs: int

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def per_doc(self, weights=None) -> np.ndarray:
        """Sum ``weights`` (or count pieces) per document."""
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        return np.bincount(self.doc, weights=w, minlength=self.n_docs)

    def select(self, mask: np.ndarray) -> "Pieces":
        mask = np.asarray(mask, dtype=bool)
        doc = self.doc[mask]
        counts = np.bincount(doc, minlength=self.n_docs)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return Pieces(self.values.filter(pa.array(mask)), doc, offsets, self.n_docs)

    def lengths(self) -> np.ndarray:
        return np.asarray(pc.utf8_length(self.values).fill_null(0), dtype=np.int64)

    def codes(self) -> np.ndarray:
        """Integer id per piece, equal ids for equal strings (across the batch)."""
        enc = pc.dictionary_encode(self.values)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        return np.asarray(enc.indices, dtype=np.uint64)

    def rejoin(self, sep: str) -> pa.Array:
        lists = pa.LargeListArray.from_arrays(pa.array(self.offsets, pa.int64()), self.values)
        return pc.binary_join(lists, pa.scalar(sep, self.values.type))


def _from_lists(lists) -> Pieces:
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    offsets = np.asarray(lists.offsets, dtype=np.int64)
    offsets = offsets - offsets[0]
    values = lists.flatten()
    n_docs = len(lists)
    doc = np.repeat(np.arange(n_docs), np.diff(offsets))
    return Pieces(values, doc, offsets, n_docs)


def split_whitespace(texts: pa.Array) -> Pieces:
    return _from_lists(pc.utf8_split_whitespace(texts))


def split_pattern(texts: pa.Array, pattern: str, regex: bool = False, drop_blank: bool = True) -> Pieces:
    lists = pc.split_pattern_regex(texts, pattern) if regex else pc.split_pattern(texts, pattern)
    pieces = _from_lists(lists)
    if drop_blank:
        blank = np.asarray(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(pieces.values)), 0))
        pieces = pieces.select(~blank)
    return pieces


def words_of(texts: pa.Array) -> Pieces:
    """Whitespace tokens stripped of surrounding punctuation; punctuation-only tokens dropped."""
    tokens = split_whitespace(texts)
    stripped = pc.utf8_trim(tokens.values, PUNCT)
    tokens = Pieces(stripped, tokens.doc, tokens.offsets, tokens.n_docs)
    return tokens.select(np.asarray(pc.greater(pc.utf8_length(stripped), 0)))


def repeated(keys: np.ndarray) -> np.ndarray:
    """Mask of items whose key was already seen earlier in the array (first copy excluded).

    A hash table (pandas' khash) in O(N), not a sort: this is the hot path.
    """
    if len(keys) == 0:
        return np.zeros(0, dtype=bool)
    return pd.Series(keys, copy=False).duplicated(keep="first").to_numpy()


def duplicate_stats(pieces: Pieces) -> tuple[np.ndarray, np.ndarray]:
    """Per document: (number of repeated pieces, characters in repeated pieces).

    A piece counts as repeated from its second occurrence in the same document,
    as in Gopher (Rae et al. 2021, table A1) and datatrove's ``find_duplicates``.
    """
    keys = mix(pieces.doc.astype(np.uint64), pieces.codes())
    dup = repeated(keys)
    return pieces.per_doc(dup), pieces.per_doc(pieces.lengths() * dup)


def ngram_hashes(words: Pieces, n_max: int, n_dup: tuple[int, ...] = ()) -> tuple[np.ndarray, list, dict]:
    """Hashes of every word n-gram for n = 1..n_max, tagged with the document, and the
    positions where the n-grams of each length in ``n_dup`` repeat.

    Returns (position of each word within its document, [h_1, ..., h_n_max], {n: starts})
    where ``h_n[j]`` is the hash of words j..j+n-1 where that n-gram lies inside one
    document (``pos + n <= doc_len``); elsewhere it is a unique sentinel that never
    repeats, so callers need not filter. ``starts[n]`` are the positions whose n-gram
    already occurred earlier in the document.

    Repeats of longer n-grams are found among ever fewer positions: an n-gram can only
    occur twice where its (n-1)-gram prefix does, so after ``n_max`` only positions whose
    previous n-gram occurs more than once are hashed and compared (the same repeats as
    hashing every position, unless two different prefixes collide in 63 bits).
    """
    codes = words.codes()
    total = len(codes)
    pos = np.arange(total) - words.offsets[words.doc]
    remaining = words.counts[words.doc] - pos  # words from j to the end of its document
    idx = np.arange(total)  # positions still hashed
    h = mix(words.doc.astype(np.uint64), codes)
    hashes, starts = [h], {}
    for n in range(2, max(n_max, *n_dup, 1) + 1):
        nxt = idx + (n - 1)  # the word this n-gram adds, where it exists
        shifted = np.zeros(len(idx), dtype=np.uint64)
        inside = nxt < total
        shifted[inside] = codes[nxt[inside]]
        h = mix(h, shifted)
        masked = np.where(remaining[idx] >= n, h & np.uint64((1 << 63) - 1), idx.astype(np.uint64) | np.uint64(1 << 63))
        if n <= n_max:
            hashes.append(masked)
        if n in n_dup:
            starts[n] = idx[repeated(masked)]  # sentinels (n-grams crossing documents) never repeat
        if n >= n_max and len(idx):
            again = pd.Series(masked, copy=False).duplicated(keep=False).to_numpy()
            idx, h = idx[again], h[again]
    return pos, hashes, starts


def top_ngram_chars(words: Pieces, pos, h: np.ndarray, n: int, word_len: np.ndarray) -> np.ndarray:
    """Per document: characters covered by its most frequent n-gram (count x length)."""
    doc_len = words.counts[words.doc]
    valid = np.flatnonzero(pos + n <= doc_len)
    out = np.zeros(words.n_docs)
    if len(valid) == 0:
        return out
    # factorize numbers n-grams in order of first appearance, so the codes of one
    # document form a contiguous, increasing range (documents are contiguous too)
    codes, _ = pd.factorize(h[valid])
    cnt = np.bincount(codes)
    runmax = np.maximum.accumulate(codes)
    is_first = codes > np.concatenate([[-1], runmax[:-1]])
    first_pos = valid[is_first]  # (U,) first position of each code, in code order
    doc = words.doc[first_pos]
    csum = np.concatenate([[0], np.cumsum(word_len)])
    length = csum[first_pos + n] - csum[first_pos] + (n - 1)  # words plus n-1 joining spaces
    starts = np.flatnonzero(np.concatenate([[True], doc[1:] != doc[:-1]]))
    best_cnt = np.maximum.reduceat(cnt, starts)  # (docs with n-grams,)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(cnt))))
    cand = np.where(cnt == best_cnt[seg], np.arange(len(cnt)), len(cnt))
    best = np.minimum.reduceat(cand, starts)  # most frequent, earliest on ties
    # an n-gram seen once is not repetition (else every short document would fail)
    out[doc[best]] = np.where(cnt[best] > 1, cnt[best] * length[best], 0)
    return out


def dup_ngram_chars(words: Pieces, starts: np.ndarray, n: int, word_len: np.ndarray) -> np.ndarray:
    """Per document: characters of words covered by repeated n-grams (each word once).

    Gopher counts "the fraction of characters contained within all duplicate
    n-grams" without double-counting overlaps; here a word is covered when any
    occurrence of an n-gram that already appeared earlier in the document spans it
    (``starts``: those occurrences, from :func:`ngram_hashes`).
    """
    total = len(word_len)
    if total == 0:
        return np.zeros(words.n_docs)
    diff = np.bincount(starts, minlength=total + 1)[: total + 1] - np.bincount(starts + n, minlength=total + 1)[: total + 1]
    covered = np.cumsum(diff)[:total] > 0
    return words.per_doc(word_len * covered)


def ratio(num: np.ndarray, den: np.ndarray, empty: float = 0.0) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(num.shape, empty, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out
