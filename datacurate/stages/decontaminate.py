"""Stage ``decontaminate``: reject documents that hold n-grams of evaluation sets.

Eval leakage makes published numbers worthless, so pretraining corpora are checked
against the benchmarks a model will be scored on: GPT-3 (Brown et al. 2020, appendix C)
flagged a training document sharing any 13-gram with a test example; datatrove
(``decont/n_grams.py``, 12-grams), Dolma (a Bloom filter of paragraphs) and Llama 2
(token n-grams) do variants of the same. Here:

* **Benchmarks**: files, directories, globs or ``{name: path}`` (JSONL or Parquet, local or
  ``s3://``); which strings of a record are read: the README's *decontaminate* section.
* **Normalisation** (both sides, the same code): lowercase (Unicode, Arrow's
  ``utf8_lower``); every punctuation mark, symbol and non-space control character
  (Unicode P, S, Cc but ``\\t\\n\\v\\f\\r``) deleted, as GPT-3 and datatrove do
  ("don't" -> "dont", "e-mail" -> "email"); words are the runs between white space
  (Unicode Z and the space controls). Digits and diacritics are kept.
* **Matching**: a text of at least ``n`` (13) words contributes all its word n-grams; a
  text of ``min_words`` (8, GPT-3's floor) to n-1 words is matched whole, as a word
  sequence anywhere in a document (``match_short``); shorter texts (answer letters,
  "True", a number) are not indexed - they would match most of the corpus. A document
  holding at least ``min_matches`` distinct indexed n-grams of one benchmark is rejected
  ``decontaminate/<benchmark>`` (the benchmark with most; ties by name);
  ``decontaminate_record`` names the record of that benchmark with most of them and
  ``decontaminate_ngrams`` counts them (also on kept documents with fewer matches).
* **Hashing**: a word's hash is the polynomial byte hash of :mod:`minhash` (read off one
  prefix sum over the batch's UTF-8 buffer); a k-gram's key is the position-weighted sum
  of its k word hashes (minhash's coefficients), mixed with k (splitmix64) - 64 bits, so
  with 5 M keys a document n-gram collides by chance with probability 3e-13 (about one
  false n-gram in 3 x 10^12). All n-grams of a batch are hashed at once; a bitmap over the
  keys' top bits (~6 % full) answers most lookups, the rest go to one ``np.searchsorted``.

**The index** is built once per run, on the driver of the global phase, from every
benchmark: sorted (key uint64, record int32) pairs, 12 bytes per distinct (n-gram,
record), saved as ``.npy`` under the run's work directory and memory-mapped by every
worker (one copy in the page cache per machine), plus a 2^k-bit bitmap each worker
builds on load. A dozen common benchmarks (MMLU, HellaSwag, ARC, GSM8K, TriviaQA,
BoolQ, PIQA, WinoGrande, HumanEval, MBPP, ...: ~100k records of 10-300 words) make a
few million 13-grams (an estimate from their sizes, not a measurement): 3 M n-grams hold 36 MB
of index and an 8 MB bitmap.

Outputs ``OUT/decontamination.json``, the leak report (its fields: the README).
"""

from __future__ import annotations

import gzip
import json
import posixpath
from dataclasses import dataclass
from typing import Literal, Optional, Union

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import storage
from datacurate.phases import layout
from datacurate.core.coerce import ConfigError, opt
from datacurate.core.schema import ORD, REJECT_REASON, TEXT
from datacurate.stages.base import GlobalStage
from datacurate.text.charclass import RegexClass, removed
from datacurate.text import words as wordseg
from datacurate.text.minhash import COEF, MAX_NGRAM, spans_by_runs, word_hashes
from datacurate.text.textstats import mix

RECORD, NGRAMS = "decontaminate_record", "decontaminate_ngrams"
REPORT = "decontamination.json"
# deleted before splitting: punctuation, symbols, control characters but the white-space ones
PUNCT = RegexClass(r"[\p{P}\p{S}\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")


@dataclass
class DecontaminateConfig:
    benchmarks: Union[list[str], dict[str, str]] = opt(list, "files, directories or globs; or {name: path}")
    fields: Optional[list[str]] = opt(None, "top-level record fields to index; null = every string")
    id_field: str = opt("id", "the record's id (never indexed); without it, its 0-based position")
    format: Literal["auto", "jsonl", "parquet"] = "auto"
    n: int = opt(13, "words per n-gram (GPT-3: 13)")
    min_words: int = opt(8, "texts shorter than this are not indexed (GPT-3's floor for short tasks)")
    match_short: bool = opt(True, "texts of min_words..n-1 words are matched whole; false: not indexed")
    min_matches: int = opt(1, "distinct n-grams of one benchmark that make a document contaminated")

    def validate(self) -> None:
        if not self.benchmarks:
            raise ValueError("benchmarks: give benchmark files, directories or globs (JSONL or Parquet)")
        if not 1 <= self.n <= MAX_NGRAM:
            raise ValueError(f"n must be within 1..{MAX_NGRAM}")
        if not 1 <= self.min_words <= self.n:
            raise ValueError("min_words must be within 1..n")
        if self.min_matches < 1:
            raise ValueError("min_matches must be at least 1")


# ----------------------------------------------------------------------------- words and keys
def words(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every normalised word, (D+1,) word offsets per text).

    Words in every script: runs of Chinese, Japanese, Thai ... are cut into words first
    (:func:`datacurate.text.words.spaced`). The segmenter follows the run's script, not a
    document's ``lang``: a benchmark record has no language, and an n-gram matches only
    when both sides cut the same text into the same words."""
    return spans_by_runs(removed(pc.utf8_lower(pc.fill_null(wordseg.spaced(texts), "")), PUNCT), word_hashes)


def ngram_keys(h: np.ndarray, off: np.ndarray, lengths) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Key of every k-gram (k in ``lengths``) inside each text: (keys, text, first word, k).

    One pass of position-weighted sums: after adding word i the sums are the (i+1)-grams."""
    lengths = sorted(set(int(k) for k in lengths))
    counts = np.diff(off)
    doc = np.repeat(np.arange(len(counts)), counts)
    pos = np.arange(len(h))
    remaining = counts[doc] - (pos - off[:-1][doc])  # words from this one to the end of its text
    acc = np.zeros(len(h), np.uint64)
    out = [], [], [], []
    with np.errstate(over="ignore"):
        for i in range(min(max(lengths, default=0), len(h))):  # longer k-grams: none fits
            acc[: len(h) - i] += h[i:] * COEF[i]
            if i + 1 in lengths:
                ok = remaining >= i + 1
                for lst, v in zip(out, (mix(acc[ok], np.uint64(i + 1)), doc[ok], pos[ok],
                                        np.full(int(ok.sum()), i + 1, np.int16))):
                    lst.append(v)
    empty = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int16))
    return tuple(np.concatenate(lst) if lst else e for lst, e in zip(out, empty))


# ----------------------------------------------------------------------------- benchmarks
def _suffixless(name: str) -> str:
    from datacurate.formats.io import JSONL_SUFFIXES, PARQUET_SUFFIXES

    low = name.lower()
    for s in sorted(JSONL_SUFFIXES + PARQUET_SUFFIXES, key=len, reverse=True):
        if low.endswith(s):
            return name[: -len(s)]
    return name


def benchmark_files(cfg: DecontaminateConfig) -> dict[str, list[str]]:
    """{benchmark name: its files}, named by file stem or by the mapping; one-line errors."""
    from datacurate.formats.io import InputError, expand_inputs

    specs = cfg.benchmarks.items() if isinstance(cfg.benchmarks, dict) else [(None, p) for p in cfg.benchmarks]
    out: dict[str, list[str]] = {}
    for name, spec in specs:
        try:
            files = expand_inputs([spec], cfg.format)
        except InputError as e:
            raise ConfigError(f"decontaminate.benchmarks: {str(e).replace('input ', 'benchmark ', 1)}") from None
        for path, _ in files:
            key = name or _suffixless(posixpath.basename(path))
            if name is None and key in out:
                raise ConfigError(f"decontaminate.benchmarks: two files make benchmark '{key}' ({out[key][0]}, {path});"
                                  " name them with a {name: path} mapping")
            out.setdefault(key, []).append(path)
    return dict(sorted(out.items()))


def read_records(path: str, fmt: str) -> list[dict]:
    """The records of one benchmark file (JSONL, possibly .gz / .zst, or Parquet)."""
    from datacurate.formats.io import detect_format

    if detect_format(path, fmt) == "parquet":
        try:
            return storage.read_parquet(path).to_pylist()
        except Exception as e:  # noqa: BLE001 - any unreadable file is one line
            raise ConfigError(f"decontaminate: benchmark {path} is not a Parquet file ({type(e).__name__})") from None
    raw = storage.read_bytes(path)
    try:
        if path.lower().endswith(".gz"):
            raw = gzip.decompress(raw)
        elif path.lower().endswith((".zst", ".zstd")):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    except Exception as e:  # noqa: BLE001
        raise ConfigError(f"decontaminate: benchmark {path} cannot be decompressed ({e})") from None
    records = []
    for i, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise ConfigError(f"decontaminate: benchmark {path} is not JSONL (line {i} is not JSON)") from None
        if not isinstance(rec, dict):
            raise ConfigError(f"decontaminate: benchmark {path} is not JSONL of objects (line {i})")
        records.append(rec)
    return records


def _strings(value, out: list) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)


def record_texts(rec: dict, cfg: DecontaminateConfig) -> list[str]:
    out: list[str] = []
    for k, v in rec.items():
        if k != cfg.id_field and (cfg.fields is None or k in cfg.fields):
            _strings(v, out)
    return out


# ----------------------------------------------------------------------------- the index
@dataclass
class Index:
    keys: np.ndarray  # (P,) uint64, sorted: one per distinct (n-gram, record) pair
    rec: np.ndarray  # (P,) int32 record of each pair
    rec_bench: np.ndarray  # (R,) int32 benchmark of each record
    rec_ids: list  # (R,) record ids (str)
    names: list  # benchmark names, sorted
    lengths: list  # k-gram lengths to look up: n, and the lengths of short texts matched whole
    info: dict  # per benchmark: records, indexed, too short, n-grams, files
    _bitmap: Optional[np.ndarray] = None

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.rec.nbytes)

    def bitmap(self) -> tuple[np.ndarray, int]:
        """(bits, shift): bit ``key >> shift`` is set for every key (16 bits per key, 2^16..2^32 bits)."""
        bits = int(min(32, max(16, np.ceil(np.log2(max(len(self.keys), 1) * 16)))))
        if self._bitmap is None:
            top = np.unique(np.asarray(self.keys) >> np.uint64(64 - bits))
            bm = np.zeros((1 << bits) // 8, np.uint8)
            np.bitwise_or.at(bm, top >> np.uint64(3), np.left_shift(1, (top & np.uint64(7)).astype(np.uint8)))
            self._bitmap = bm
        return self._bitmap, 64 - bits

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``keys``, record) of every pair whose key is listed."""
        bm, shift = self.bitmap()
        top = keys >> np.uint64(shift)
        cand = np.flatnonzero((bm[top >> np.uint64(3)] >> (top & np.uint64(7)).astype(np.uint8)) & 1)
        q = keys[cand]
        lo = np.searchsorted(self.keys, q)
        hit = lo < len(self.keys)
        hit[hit] = self.keys[lo[hit]] == q[hit]
        cand, q, lo = cand[hit], q[hit], lo[hit]
        reps = np.searchsorted(self.keys, q, side="right") - lo
        first = np.repeat(lo - np.concatenate([[0], np.cumsum(reps)[:-1]]), reps)
        return np.repeat(cand, reps), np.asarray(self.rec[first + np.arange(int(reps.sum()))])

    def save(self, d: str) -> str:
        storage.save_npy(storage.join(d, "keys.npy"), np.asarray(self.keys))
        storage.save_npy(storage.join(d, "rec.npy"), np.asarray(self.rec))
        storage.write_text(storage.join(d, "index.json"), json.dumps({
            "rec_bench": self.rec_bench.tolist(), "rec_ids": self.rec_ids, "names": self.names,
            "lengths": self.lengths, "info": self.info}))
        return d

    @classmethod
    def load(cls, d: str) -> "Index":
        meta = json.loads(storage.read_text(storage.join(d, "index.json")))
        arrays = [storage.load_npy(storage.join(d, f)) if storage.is_remote(d)
                  else np.load(storage.join(d, f), mmap_mode="r") for f in ("keys.npy", "rec.npy")]
        return cls(arrays[0], arrays[1], np.asarray(meta["rec_bench"], np.int32), meta["rec_ids"], meta["names"],
                   meta["lengths"], meta["info"])


def build_index(cfg: DecontaminateConfig) -> Index:
    """Read every benchmark and hash its texts (on one process: benchmarks are megabytes)."""
    texts, owner, rec_bench, rec_ids, names, info = [], [], [], [], [], {}
    for b, (name, files) in enumerate(benchmark_files(cfg).items()):
        names.append(name)
        n_records = 0
        for path in files:
            for i, rec in enumerate(read_records(path, cfg.format)):
                rid = rec.get(cfg.id_field)
                rec_ids.append(str(rid) if rid is not None and not isinstance(rid, (dict, list)) else str(n_records))
                rec_bench.append(b)
                strs = record_texts(rec, cfg)
                texts += strs
                owner += [len(rec_ids) - 1] * len(strs)
                n_records += 1
        if not n_records:
            raise ConfigError(f"decontaminate: benchmark '{name}' ({', '.join(files)}) has no records")
        info[name] = {"files": [layout.side_origin(f) for f in files], "records": n_records}
    owner, rec_bench = np.asarray(owner, np.int64), np.asarray(rec_bench, np.int32)
    h, off = words(pa.array(texts, pa.large_string()))
    counts = np.diff(off)
    keys, doc, _, _ = ngram_keys(h, off, [cfg.n])
    short = (counts >= cfg.min_words) & (counts < cfg.n) if cfg.match_short else np.zeros(len(counts), bool)
    lengths = sorted({cfg.n} | set(counts[short].tolist()))
    if short.any():  # whole short texts: the k-gram at a text's first word, k = its length
        sk, sd, sp, sl = ngram_keys(h, off, counts[short])
        whole = (sp == off[:-1][sd]) & (sl == counts[sd]) & short[sd]
        keys, doc = np.concatenate([keys, sk[whole]]), np.concatenate([doc, sd[whole]])
    rec = owner[doc].astype(np.int32)
    order = np.lexsort((rec, keys))
    keys, rec = keys[order], rec[order]
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]) | (rec[1:] != rec[:-1])
    keys, rec = keys[first], rec[first]
    indexed = np.bincount(rec_bench[np.unique(rec)], minlength=len(names))
    for b, name in enumerate(names):
        n_keys = len(np.unique(keys[rec_bench[rec] == b]))
        if not n_keys:
            what = f"fields {cfg.fields}" if cfg.fields else "strings"
            raise ConfigError(f"decontaminate: benchmark '{name}' has no text of at least {cfg.min_words} words "
                              f"in its {what}; is it a benchmark file?")
        info[name].update(records_indexed=int(indexed[b]), records_too_short=info[name]["records"] - int(indexed[b]),
                          ngrams=n_keys)
    return Index(keys, rec, rec_bench, rec_ids, names, lengths, info)


# ----------------------------------------------------------------------------- documents
def contamination(texts: pa.Array, index: Index, min_matches: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per document with a match: its benchmark, record and n-gram count; the
    (document, benchmark, record) rows of contaminated documents, for the leak report)."""
    h, off = words(texts)
    keys, doc, _, _ = ngram_keys(h, off, index.lengths)
    at, rec = index.lookup(keys)
    hits = pd.DataFrame({"doc": doc[at], "key": keys[at], "rec": rec}).drop_duplicates()
    hits["bench"] = index.rec_bench[hits["rec"].to_numpy()]
    per_bench = hits.drop_duplicates(["doc", "bench", "key"]).groupby(["doc", "bench"]).size().rename("ngrams")
    per_rec = hits.groupby(["doc", "bench", "rec"]).size().rename("n").reset_index()
    # the benchmark with most distinct n-grams (ties: first by name), then its record with most
    best = per_bench.reset_index().sort_values(["doc", "ngrams", "bench"], ascending=[True, False, True])
    best = best.drop_duplicates("doc")
    top = per_rec.sort_values(["doc", "bench", "n", "rec"], ascending=[True, True, False, True])
    top = top.drop_duplicates(["doc", "bench"])
    docs = best.merge(top[["doc", "bench", "rec"]], on=["doc", "bench"])
    docs["contaminated"] = docs["ngrams"] >= min_matches
    dirty = per_bench[per_bench >= min_matches].reset_index()[["doc", "bench"]]
    return docs, per_rec.merge(dirty, on=["doc", "bench"])[["doc", "bench", "rec"]]


def decisions(table: pa.Table, index: Index, min_matches: int) -> tuple[pa.Table, dict]:
    """Decision rows (documents with a match) and the leak counts {benchmark: {record: docs}}."""
    docs, leaks = contamination(table.column(TEXT).combine_chunks(), index, min_matches)
    ords = np.asarray(table.column(ORD), dtype=np.int64)
    names = np.asarray(index.names, dtype=object)
    reason = np.where(docs["contaminated"], "decontaminate/" + names[docs["bench"].to_numpy()], None)
    dec = pa.table({ORD: pa.array(ords[docs["doc"].to_numpy()], pa.int64()), REJECT_REASON: pa.array(reason, pa.string()),
                    RECORD: pa.array([index.rec_ids[r] for r in docs["rec"]], pa.string()),
                    NGRAMS: pa.array(docs["ngrams"].to_numpy(), pa.int32())})
    found: dict = {}
    for (b, r), n in leaks.groupby(["bench", "rec"]).size().items():
        found.setdefault(index.names[b], {})[index.rec_ids[r]] = int(n)
    per_doc = leaks.drop_duplicates(["doc", "bench"]).groupby("bench").size()
    return dec, {"found": found, "documents": {index.names[b]: int(n) for b, n in per_doc.items()}}


def leak_report(index: Index, counts: list[dict], cfg: DecontaminateConfig) -> dict:
    """OUT/decontamination.json from the per-part counts."""
    found: dict = {name: {} for name in index.names}
    documents = dict.fromkeys(index.names, 0)
    for c in counts:
        for name, recs in c["found"].items():
            for r, n in recs.items():
                found[name][r] = found[name].get(r, 0) + n
        for name, n in c["documents"].items():
            documents[name] += n
    return {
        "n": cfg.n, "min_words": cfg.min_words, "match_short": cfg.match_short, "min_matches": cfg.min_matches,
        "index": {"pairs": len(index.keys), "mb": round(index.nbytes / 2**20, 2)},
        "benchmarks": {name: {**index.info[name], "records_found": len(found[name]), "documents": documents[name],
                              "found": dict(sorted(found[name].items(), key=lambda kv: -kv[1]))}
                       for name in index.names},
    }


# ----------------------------------------------------------------------------- distributed
# 1. index: the driver of the global phase reads the benchmarks and saves the index
#    under the run's work directory (keys.npy, rec.npy, index.json);
# 2. match: one task per part file memory-maps it (once per worker process), hashes the
#    part's n-grams batch by batch, writes the decisions and returns its leak counts;
# 3. the driver adds the counts into OUT/decontamination.json.
_LOADED: dict[str, Index] = {}


def _phase_match(path: str, c: DecontaminateConfig, index_dir: str, out_dir: str, compression: str) -> dict:
    from datacurate.formats.io import write_atomic

    if index_dir not in _LOADED:
        _LOADED.clear()
        _LOADED[index_dir] = Index.load(index_dir)
    dec, counts = decisions(storage.read_parquet(path, columns=[ORD, TEXT]), _LOADED[index_dir], c.min_matches)
    if dec.num_rows:
        write_atomic(dec, storage.join(out_dir, posixpath.basename(path)), compression)
    return counts


class Decontaminate(GlobalStage):
    name = "decontaminate"
    side_inputs = ("benchmarks",)  # files, folders or globs; a list or a {name: path} mapping
    Config = DecontaminateConfig
    uses_words = True
    default_outputs = (REPORT,)
    columns = {RECORD: pa.string(), NGRAMS: pa.int32()}

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        benchmark_files(self.config)  # a missing file or an empty directory: one line before any work

    def preflight(self, cfg, index: int) -> None:
        """Every benchmark reads and holds text to index (before any work)."""
        build_index(self.config)

    def run_global(self, ctx) -> dict:
        c = self.config
        index = build_index(c)
        index_dir = index.save(ctx.scratch("decontaminate"))
        counts = ctx.map_files("match", _phase_match, c=c, index_dir=index_dir, out_dir=ctx.decisions_dir,
                               compression=ctx.compression) if ctx.files else []
        rep = leak_report(index, counts, c)
        storage.write_text(storage.join(ctx.out, REPORT), json.dumps(rep, indent=2))
        return {"index_pairs": rep["index"]["pairs"], "index_mb": rep["index"]["mb"],
                "benchmarks": {k: {"records": v["records"], "records_found": v["records_found"],
                                   "documents": v["documents"]} for k, v in rep["benchmarks"].items()}}

    def apply(self, table: pa.Table, dec: pa.Table):
        cols, reasons = super().apply(table, dec)
        cols[NGRAMS] = pc.fill_null(cols[NGRAMS], 0)
        return cols, reasons
