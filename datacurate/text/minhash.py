"""MinHash signatures (Broder 1997, "On the resemblance and containment of documents").

A document is the set of word n-gram shingles of its normalised text. For a random
permutation h, P[min h(A) = min h(B)] = Jaccard(A, B), so the share of equal values
among ``num_perm`` minima estimates Jaccard with standard error sqrt(J(1-J)/num_perm)
(0.035 at J = 0.8 with 128 permutations).

Everything runs over a whole batch, with no Python loop per document or shingle:

1. words straight from the UTF-8 buffer: ASCII bytes classified by value, multi-byte
   characters by decoding their code points against the same Unicode classes that
   ``normalize`` uses; a word's hash is a polynomial sum(byte K^i) mod 2^64 read off
   one prefix sum, mixed with its length (splitmix64, ``textstats.mix``);
2. a shingle's hash is a position-weighted sum of its n word hashes, top 32 bits;
3. permutations h(x) = a x + b mod 2^32, a odd - a bijection, as datasketch 2.0's
   default ``affine32`` scheme - over (num_perm, 8192) blocks of shingles of all
   documents, with a per-document ``np.minimum.reduceat``. No modulo: the classic
   (a x + b) mod (2^61 - 1) costs a 64-bit division per value (6x slower in NumPy).
   On 400 real text pairs the estimate is unbiased with the binomial standard error
   (tests/stages/test_dedup_near.py).

Word and shingle hashes are fixed; only the permutations follow ``seed``. Empty
documents (no words) get all 0xFFFFFFFF; a document of 1 to n-1 words is one shingle.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.text.charclass import RegexClass
from datacurate.text.chunks import CHUNK_BYTES, code_points, cut_runs, utf8_buffer
from datacurate.text import words as wordseg
from datacurate.text.textstats import mix

# separators: punctuation, symbols, control characters and every Unicode space but U+0020
_SEP_RE = r"[\p{P}\p{S}\p{Cc}\p{Zl}\p{Zp}\x{A0}\x{1680}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]+"
_BLOCK = 8192  # shingles per MinHash block: (num_perm, block) uint32 = 4 MB at 128 perms
# fixed tables: word and shingle hashes are stable across runs; only the permutations follow ``seed``
_K = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible mod 2^64
_K_INV = np.uint64(pow(int(_K), -1, 2**64))
COEF = np.random.default_rng(0xC0EF).integers(0, 2**63, 64, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
MAX_NGRAM = len(COEF)


def normalize(texts: pa.Array) -> pa.Array:
    """Lowercase; punctuation, symbols, control characters and spaces (Unicode P, S, Cc,
    Z) become one space; trimmed. ``normalize(t).split(" ")`` are the words MinHash uses."""
    t = pc.replace_substring_regex(pc.utf8_lower(pc.fill_null(texts, "")), _SEP_RE, " ")
    return pc.utf8_trim(pc.replace_substring_regex(t, "  +", " "), " ")


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(K^1..K^n, K^-1..K^-n) mod 2^64. cumprod is serial, so one chunk's worth is
    computed once per process (32 MB) and sliced; longer documents get their own."""
    global _POW
    if n > len(_POW[0]):
        size = max(n, CHUNK_BYTES)
        pw = np.cumprod(np.full(size, _K, dtype=np.uint64)), np.cumprod(np.full(size, _K_INV, dtype=np.uint64))
        if size > CHUNK_BYTES:
            return pw[0][:n], pw[1][:n]
        _POW = pw
    return _POW[0][:n], _POW[1][:n]


_POW = (np.zeros(0, np.uint64), np.zeros(0, np.uint64))
_LOCAL = threading.local()


def _scratch(n: int) -> np.ndarray:
    """A reused (n,) uint64 work array (per thread): a fresh 16 MB array costs more in
    page faults than the arithmetic done in it."""
    buf = getattr(_LOCAL, "buf", None)
    if buf is None or len(buf) < n:
        buf = np.empty(max(n, CHUNK_BYTES + 1), dtype=np.uint64)
        if len(buf) > CHUNK_BYTES + 1:  # an oversized document: do not keep it
            return buf[:n]
        _LOCAL.buf = buf
    return buf[:n]


_SEP = RegexClass(_SEP_RE)  # the very class normalize() replaces (RE2's Unicode tables)


def word_hashes(t: pa.LargeStringArray) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every word, (N+1,) word offsets per document) of lowercased texts,
    straight from the UTF-8 buffer.

    Words are runs of non-separator characters (as in normalize()): ASCII bytes are
    classified by value, multi-byte characters by decoding their code points. A word's
    hash is the polynomial sum(byte K^i) mod 2^64, read off one prefix sum over the
    buffer, then mixed with its length.
    """
    raw, off = utf8_buffer(t)
    n_bytes = len(raw)
    if n_bytes == 0:
        return np.zeros(0, np.uint64), np.zeros(len(t) + 1, np.int64)
    # (L,) word bytes: ASCII letters and digits (uint8 arithmetic wraps below 0), and for
    # now every byte of a multi-byte character
    w = (((raw | 32) - 97) < 26) | ((raw - 48) < 10) | (raw >= 128)
    lead, size, cp = code_points(raw)
    if len(lead):
        sep = _SEP.of(cp)
        for k in range(4):
            w[(lead + k)[sep & (k < size)]] = False
    padded = np.zeros(n_bytes + 2, dtype=np.int8)
    padded[1:-1] = w
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # word starts and ends, alternating
    inner = off[1:-1][(off[1:-1] > 0) & (off[1:-1] < n_bytes)]
    cut = np.unique(inner[w[inner - 1] & w[inner]])
    if len(cut):  # a word running across two documents is two words: an end and a start there
        edges = np.insert(edges, np.repeat(np.searchsorted(edges, cut), 2), np.repeat(cut, 2))
    s, e = edges[0::2], edges[1::2]  # (W,) first byte of each word, one past its last
    return span_hashes(raw, s, e), np.searchsorted(s, off)


def span_hashes(raw: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """64-bit hash of each byte span raw[s:e]: sum of byte K^(i - start) (one prefix sum
    over the buffer), mixed with the span's length."""
    n_bytes = len(raw)
    pw, inv = _powers(n_bytes)
    pre = _scratch(n_bytes + 1)  # pre[i] = sum of byte_t K^(t+1) for t < i
    pre[0] = 0
    np.multiply(raw, pw, out=pre[1:])
    np.cumsum(pre, out=pre)
    h = (pre[e] - pre[s]) * inv[s]  # bytes are > 0, so spans of zeros cannot collide
    return mix(h, (e - s).astype(np.uint64))


def _shingles(words: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(32-bit hash of every word n-gram, (N+1,) shingle offsets); a document with
    1..n-1 words is one shingle of all its words."""
    counts = np.diff(offsets)
    starts, ends = offsets[:-1], offsets[1:]
    acc = words * COEF[0]
    for i in range(1, min(n, len(words))):  # position-weighted sum of n word hashes (mod 2^64)
        acc[: len(words) - i] += words[i:] * COEF[i]
    valid = np.ones(len(words), dtype=bool)
    for i in range(1, n):  # the last n-1 positions of a document start no full n-gram
        p = ends - i
        valid[p[p >= starts]] = False
    short = (counts > 0) & (counts < n)
    if short.any():  # documents shorter than n: one shingle of all their words
        first, k = starts[short], counts[short]
        fix = words[first] * COEF[0]
        for i in range(1, n):
            fix += np.where(i < k, words[np.minimum(first + i, len(words) - 1)] * COEF[i], np.uint64(0))
        acc[first] = fix
        valid[first] = True
    sh_counts = np.where(counts >= n, counts - n + 1, counts > 0)
    sh_offsets = np.concatenate([[0], np.cumsum(sh_counts)]).astype(np.int64)
    return acc[valid] >> np.uint64(32), sh_offsets


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) uint32 of the affine family a x + b mod 2^32, a odd. Same seed, same (a, b)."""
    rng = np.random.default_rng(seed)
    a = (rng.integers(0, 2**31, num_perm, dtype=np.uint64) * 2 + 1).astype(np.uint32)
    b = rng.integers(0, 2**32, num_perm, dtype=np.uint64).astype(np.uint32)
    return a, b


def min_hashes(shingles: np.ndarray, offsets: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """(N, num_perm) uint32 MinHash of uint32 shingle hashes grouped by ``offsets``
    (documents without shingles: all 0xFFFFFFFF)."""
    a, b = permutations(num_perm, seed)
    x_all = shingles.astype(np.uint32)
    out = np.full((num_perm, len(offsets) - 1), 0xFFFFFFFF, dtype=np.uint32)  # (P, N)
    nonempty = np.diff(offsets) > 0
    bounds, doc_of = offsets[:-1][nonempty], np.flatnonzero(nonempty)  # first shingle of each non-empty doc
    buf = np.empty((num_perm, _BLOCK), dtype=np.uint32)
    for s0 in range(0, len(x_all), _BLOCK):
        x = x_all[s0 : s0 + _BLOCK]
        j0 = np.searchsorted(bounds, s0, side="right") - 1  # the document holding shingle s0
        j1 = np.searchsorted(bounds, s0 + len(x), side="left")
        seg = np.maximum(bounds[j0:j1] - s0, 0)  # block-local segment starts
        docs = doc_of[j0:j1]
        y = buf[:, : len(x)]
        np.multiply(a[:, None], x[None, :], out=y)  # (P, B), wraps mod 2^32
        y += b[:, None]
        out[:, docs] = np.minimum(out[:, docs], np.minimum.reduceat(y, seg, axis=1))
    return np.ascontiguousarray(out.T)  # (N, P)


def signatures(texts: pa.Array, num_perm: int, ngram: int, seed: int, langs=None) -> np.ndarray:
    """(N, num_perm) uint32 MinHash signatures of the texts' word ``ngram``-shingles.

    Words in every script: runs of scripts written without spaces (Chinese, Japanese,
    Thai ...) are first cut into words by :func:`datacurate.text.words.spaced` (the
    segmenter follows ``langs``: None, one lid.176 code or one per row), so a shingle
    is ``ngram`` words there too; text without such runs hashes exactly as before.

    Whole batch at once, in runs of ~2 MB of text to bound memory: words are hashed
    straight from the UTF-8 buffer (``word_hashes``), n-gram hashes are position-weighted
    sums of word hashes, and the permutations run over blocks of shingles of all
    documents with a per-document np.minimum.reduceat. Deterministic: same seed, same
    signatures, on any machine. Empty documents (no words) get all 0xFFFFFFFF; the
    engine treats them as never-duplicates.
    """
    t = pc.utf8_lower(pc.fill_null(wordseg.spaced(texts, langs), "")).cast(pa.large_string())
    cuts = cut_runs(np.asarray(pc.binary_length(t), dtype=np.int64), CHUNK_BYTES)
    out = [np.zeros((0, num_perm), np.uint32)]
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        words, offsets = word_hashes(t.slice(lo, hi - lo))
        shingles, sh_offsets = _shingles(words, offsets, ngram)
        out.append(min_hashes(shingles, sh_offsets, num_perm, seed))
    return np.concatenate(out)


def spans_by_runs(t: pa.LargeStringArray, spans) -> tuple[np.ndarray, np.ndarray]:
    """``spans(texts) -> (hashes, (N+1,) offsets)`` (such as :func:`word_hashes`) over runs of
    ~2 MB of ``t``, joined: the work arrays stay bounded whatever the batch size."""
    cuts = cut_runs(np.asarray(pc.binary_length(t), dtype=np.int64), CHUNK_BYTES)
    hashes, offsets, base = [np.zeros(0, np.uint64)], [np.zeros(1, np.int64)], 0
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        h, o = spans(t.slice(lo, hi - lo))
        hashes.append(h)
        offsets.append(o[1:] + base)
        base += len(h)
    return np.concatenate(hashes), np.concatenate(offsets)
