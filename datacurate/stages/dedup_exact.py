"""Stage ``exact_dedup``: Bloom-filter deduplication of documents or paragraphs.

Text is normalised (lowercase, whitespace collapsed), hashed with xxh3-128 and looked
up in a Bloom filter (Bloom 1970) sized for ``expected_items`` at
``false_positive_rate``: m = -n ln p / (ln 2)^2 bits and k = (m/n) ln 2 hash functions
(double hashing, Kirsch & Mitzenmacher 2006). For n = 10^7 and p = 10^-6 that is
36 MB and k = 20. The hash space is split into ``num_shards`` slices; the engine keeps
each slice in its own Ray actor, so no process sees every document.

Survivors are deterministic: each shard's keys are processed in priority order
(highest ``priority_column`` first, then input order), in chunks; inside a chunk
repeats are found exactly by hash, across chunks and runs by the filter. The filter
can be saved and loaded, so a new crawl is deduplicated against an earlier one.

Keys: the (normalised) ``text``, or with ``key: url`` the document's URL in one form (scheme
and host lowercased; default port, fragment and user info dropped; an invalid port or host:
no key. :func:`datacurate.text.urls.canonical`, the grammar ``url_filter`` uses too), so
the captures of one URL across crawls become one document: keep the newest with
``priority_column: date`` (dates compare as times, whatever their form:
:func:`datacurate.text.dates.microseconds`). A row without a parseable URL has no key and
is never a duplicate.

The live capture wins: with ``status_column: http_status`` captures rank by HTTP status
first: a 2xx, then a capture without a status (a ``resource`` record, a WET conversion),
then any other (3xx, 4xx, 5xx), and only then by ``priority_column``. Across crawls the
newest capture of a URL is often a 404, a redirect or a 5xx that shadowed an older 200;
ranked by date alone the page would be lost (the 404 survives URL dedup, then ``extract``
rejects it). The web recipe (``pipelines/commoncrawl.yaml``) ranks rather than filtering
by status first, so every capture keeps a row with its reason (a dead capture that lost
is ``exact_dedup:url/duplicate``; a URL only ever captured dead keeps its newest capture, which
``extract`` rejects as ``extract/http_status``).

Modes:
* ``document``: later copies of a document are rejected (``exact_dedup/duplicate``,
  or ``exact_dedup/seen_before`` when the copy is in a loaded filter; with ``key: url``
  ``exact_dedup:url/duplicate`` and ``exact_dedup:url/seen_before``, in ``reject_stage``
  ``exact_dedup:url``, as ``stats.json`` names the stage: which dedup removed a page).
* ``paragraph`` (as Dolma, Soldaini et al. 2024): lines already seen are removed from
  kept documents (count in ``paragraphs_removed``); a document whose characters are at
  least ``paragraph_threshold`` in already-seen paragraphs is rejected
  (``exact_dedup/paragraphs_seen``).
  Paragraphs end at any line break of any script (CR LF, CR, LF, NEL, U+2028, U+2029 ...)
  and their keys collapse every Unicode space (U+3000 that indents CJK paragraphs, no-break
  spaces), not only the ASCII ones of RE2's class.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datacurate.formats import storage
from datacurate.core.coerce import opt
from datacurate.core.schema import ORD, REJECT_REASON, TEXT, WPART
from datacurate.text import dates, textstats as ts
from datacurate.text import urls as url_forms
from datacurate.stages.base import GlobalStage


@dataclass
class ExactDedupConfig:
    mode: Literal["document", "paragraph"] = "document"
    expected_items: int = opt(10_000_000, "documents (or paragraphs) the filter is sized for")
    false_positive_rate: float = 1e-6
    num_shards: int = opt(4, "filter slices, one Ray actor each")
    chunk: int = opt(65_536, "keys checked per step inside a shard (exact within, Bloom across)")
    key: Literal["text", "url"] = opt("text", "what makes two documents the same: their text, or their normalised URL")
    url_field: str = opt("url", "key: url: the column holding the URL")
    priority_column: Optional[str] = opt(None, "survivor = highest value (numbers, or dates: the newest); "
                                               "default first in input order")
    status_column: Optional[str] = opt(None, "key: url: HTTP status column; 2xx captures rank first, then "
                                             "those without a status, then the rest (before priority_column)")
    normalize: bool = opt(True, "lowercase and collapse whitespace before hashing")
    paragraph_threshold: float = opt(0.8, "paragraph mode: reject when this share of characters was seen")
    load_filter: Optional[str] = opt(None, "directory of a saved filter: dedup against an earlier run")
    save_filter: Optional[str] = opt(None, "directory to save this run's filter (with the loaded one merged)")

    def validate(self) -> None:
        if not 0 < self.false_positive_rate < 1:
            raise ValueError("false_positive_rate must be within (0, 1)")
        if self.expected_items < 1 or self.num_shards < 1 or self.chunk < 1:
            raise ValueError("expected_items, num_shards and chunk must be positive")
        if not 0 < self.paragraph_threshold <= 1:
            raise ValueError("paragraph_threshold must be within (0, 1]")
        if self.key == "url" and self.mode == "paragraph":
            raise ValueError("key: url works with mode: document only")
        if self.status_column and self.key != "url":
            raise ValueError("status_column ranks the captures of a URL: it needs key: url")


def bloom_size(n: int, p: float) -> tuple[int, int]:
    """(bits, hash functions) for n items at false-positive rate p."""
    m = math.ceil(-n * math.log(p) / math.log(2) ** 2)
    k = max(1, round(m / n * math.log(2)))
    return m, k


class BloomFilter:
    """A plain NumPy Bloom filter over 128-bit hashes, given as (hi, lo) uint64 arrays."""

    def __init__(self, bits: int, k: int, data: np.ndarray | None = None):
        self.m, self.k = int(bits), int(k)
        self.data = data if data is not None else np.zeros((self.m + 7) // 8, dtype=np.uint8)

    def _index(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        i = np.arange(self.k, dtype=np.uint64)
        with np.errstate(over="ignore"):
            return (hi[:, None] + i[None, :] * (lo[:, None] | np.uint64(1))) % np.uint64(self.m)  # (N, k)

    def contains(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        idx = self._index(hi, lo)
        bits = (self.data[idx >> np.uint64(3)] >> (idx & np.uint64(7)).astype(np.uint8)) & 1
        return bits.all(axis=1)

    def add(self, hi: np.ndarray, lo: np.ndarray) -> None:
        idx = self._index(hi, lo).ravel()
        np.bitwise_or.at(self.data, idx >> np.uint64(3), (np.uint8(1) << (idx & np.uint64(7)).astype(np.uint8)))

    def fill_ratio(self) -> float:
        return float(np.unpackbits(self.data).sum()) / self.m

    def save(self, path: str) -> None:
        """``path.npy`` and ``path.json``: a local path or an ``s3://`` URL."""
        storage.save_npy(path + ".npy", self.data)
        storage.write_text(path + ".json", json.dumps({"bits": self.m, "k": self.k}))

    @classmethod
    def load(cls, path: str) -> "BloomFilter":
        meta = json.loads(storage.read_text(path + ".json"))
        return cls(meta["bits"], meta["k"], storage.load_npy(path + ".npy"))


class ShardFilter:
    """One slice of the hash space: the filter of this run plus, optionally, a loaded one.

    With ``remember_live_only`` (URL dedup ranking captures by HTTP status) the filter saved
    for later runs holds only the URLs of live captures (2xx, or no status): a URL that this
    run saw only dead (a 404, a redirect) must not make a later run reject its live capture as
    ``seen_before``. Its dead captures still deduplicate each other within the run (``current``)."""

    def __init__(self, bits: int, k: int, previous: BloomFilter | None = None, remember_live_only: bool = False):
        self.current = BloomFilter(bits, k)
        self.previous = previous
        self.live = BloomFilter(bits, k) if remember_live_only else None  # what is saved: live captures' keys

    def check_add(self, hi: np.ndarray, lo: np.ndarray, chunk: int, live: np.ndarray | None = None) -> np.ndarray:
        """Keys in survivor order -> 0 new, 1 repeat in this run, 2 seen in the loaded filter
        (``live``: each key's status rank, 0 a dead capture; what ``remember_live_only`` saves)."""
        if self.live is not None and live is not None:
            up = np.flatnonzero(np.asarray(live) > 0)
            self.live.add(hi[up], lo[up])
        out = np.zeros(len(hi), dtype=np.int8)
        for s in range(0, len(hi), chunk):
            h, l = hi[s:s + chunk], lo[s:s + chunk]
            repeat = pd.DataFrame({"h": h, "l": l}).duplicated(keep="first").to_numpy()
            first = np.flatnonzero(~repeat)
            seen = self.current.contains(h[first], l[first])
            status = np.where(repeat, 1, 0).astype(np.int8)
            status[first[seen]] = 1
            if self.previous is not None:
                old = self.previous.contains(h, l)
                status[old] = 2
            self.current.add(h[first[~seen]], l[first[~seen]])
            out[s:s + chunk] = status
        return out

    def merged(self) -> BloomFilter:
        """What is saved for later runs: this run's keys (live ones only, with ``remember_live_only``)
        and the loaded filter's."""
        mine = self.live if self.live is not None else self.current
        if self.previous is None:
            return mine
        return BloomFilter(mine.m, mine.k, mine.data | self.previous.data)


def normalized(texts: pa.Array, normalize: bool, spaces: str = r"\s+") -> pa.Array:
    if not normalize:
        return texts
    return pc.utf8_trim_whitespace(pc.replace_substring_regex(pc.utf8_lower(texts), spaces, " "))


# Paragraph (line) breaks in every script: CR LF, CR, LF, VT, FF, NEL, U+2028 LINE
# SEPARATOR, U+2029 PARAGRAPH SEPARATOR (Python's str.splitlines set, less the ASCII
# information separators), in RE2 syntax for Arrow's kernels
_BREAKS = r"\r\n|[\r\x{0b}\x{0c}\x{85}\x{2028}\x{2029}]"
# A paragraph's key collapses every Unicode space (RE2's \s is ASCII only): the ideographic
# space U+3000 that indents Japanese and Chinese paragraphs, no-break spaces, thin spaces
_SPACES = r"[\s\p{Z}\x{85}]+"


def paragraphs(texts: pa.Array) -> ts.Pieces:
    """Every line of every document (blank ones included, in order), split at any of
    :data:`_BREAKS`; a document whose lines come back joined by "\n" has LF breaks."""
    return ts.split_pattern(pc.replace_substring_regex(texts, _BREAKS, "\n"), "\n", drop_blank=False)


def hash128(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    values = [xxhash.xxh3_128_intdigest(t.encode("utf-8")) for t in texts.to_pylist()]
    hi = np.fromiter((v >> 64 for v in values), dtype=np.uint64, count=len(values))
    lo = np.fromiter((v & 0xFFFFFFFFFFFFFFFF for v in values), dtype=np.uint64, count=len(values))
    return hi, lo


def keys(table: pa.Table, cfg: ExactDedupConfig) -> pa.Table:
    """Phase 1 (per batch): one row per document (or non-blank line) to look up."""
    ords = np.asarray(table.column(ORD), dtype=np.int64)
    prio, live = _priority(table, cfg), _live(table, cfg)
    if cfg.key == "url":  # no text read: a page's HTML is most of a crawl's bytes (nchars: unused in mode document)
        if cfg.url_field not in table.column_names:
            raise KeyError(f"exact_dedup: key: url, but url_field '{cfg.url_field}' is not a column")
        urls = url_forms.canonical(table.column(cfg.url_field))
        doc = np.flatnonzero(np.asarray(pc.is_valid(urls)))  # no URL: no key, never a duplicate
        hi, lo = hash128(urls.take(pa.array(doc, pa.int64())))
        para, nchars = np.zeros(len(doc), np.int32), np.zeros(len(doc), np.int64)
        return _keys_table(ords[doc], para, hi, lo, prio[doc], live[doc], nchars, cfg)
    texts = table.column(TEXT).combine_chunks()
    if cfg.mode == "document":
        hi, lo = hash128(normalized(texts, cfg.normalize))
        doc, para, nchars = np.arange(len(texts)), np.zeros(len(texts), np.int32), np.asarray(pc.utf8_length(texts))
    else:
        lines = paragraphs(texts)
        index = np.arange(len(lines.doc)) - lines.offsets[lines.doc]
        blank = np.asarray(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(lines.values)), 0))
        keep = np.flatnonzero(~blank)
        hi, lo = hash128(normalized(lines.values.take(pa.array(keep)), cfg.normalize, _SPACES))
        doc, para = lines.doc[keep], index[keep].astype(np.int32)
        nchars = np.asarray(pc.utf8_length(lines.values.take(pa.array(keep))))
    return _keys_table(ords[doc], para, hi, lo, prio[doc], live[doc], nchars, cfg)


def _keys_table(ords, para, hi, lo, prio, live, nchars, cfg: ExactDedupConfig) -> pa.Table:
    return pa.table({
        ORD: ords, "para": para, "hi": hi, "lo": lo, "prio": prio, "live": live,
        "nchars": nchars.astype(np.int64), "shard": (hi % np.uint64(cfg.num_shards)).astype(np.int32),
    })


def _priority(table: pa.Table, cfg: ExactDedupConfig) -> np.ndarray:
    if cfg.priority_column is None:
        return np.zeros(table.num_rows)
    if cfg.priority_column not in table.column_names:
        raise KeyError(f"exact_dedup: priority_column '{cfg.priority_column}' is not a column "
                       f"(have: {', '.join(c for c in table.column_names if not c.startswith('_'))})")
    col = table.column(cfg.priority_column).combine_chunks()
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):  # dates (WARC-Date, ARC): as times
        return dates.microseconds(col)
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        col = col.cast(pa.timestamp("s")).cast(pa.int64()) if pa.types.is_date(col.type) else col.cast(pa.int64())
    return np.asarray(pc.fill_null(col.cast(pa.float64()), -np.inf))


def _live(table: pa.Table, cfg: ExactDedupConfig) -> np.ndarray:
    """The status rank of each row: 2 a 2xx, 1 no status, 0 any other (all 0 without
    ``status_column``). Input that has no such column (JSONL records beside WARC files)
    ranks as "no status": it cannot say a capture was dead."""
    if cfg.status_column is None:
        return np.zeros(table.num_rows, np.int8)
    if cfg.status_column not in table.column_names:
        return np.ones(table.num_rows, np.int8)
    status = table.column(cfg.status_column).combine_chunks()
    if not (pa.types.is_integer(status.type) or pa.types.is_floating(status.type)):  # "200" from JSONL: a number
        status = pa.array([int(v) if str(v).strip().isdigit() else None for v in status.to_pylist()], pa.int64())
    ok = pc.and_(pc.greater_equal(status, 200), pc.less(status, 300))
    return np.asarray(pc.fill_null(pc.if_else(ok, 2, 0), 1), np.int8)


def survivor_order(k: pa.Table) -> np.ndarray:
    """Live first (the status rank), then highest priority, then input order, then paragraph order."""
    live = np.asarray(k["live"]).astype(np.int16)
    return np.lexsort((np.asarray(k["para"]), np.asarray(k[ORD]), -np.asarray(k["prio"]), -live))


def decisions(status: pa.Table, cfg: ExactDedupConfig) -> pa.Table:
    """Phase 3 (per part file): the statuses of ALL keys of some documents -> one decision
    row per document with a repeat."""
    totals = pd.DataFrame({"o": np.asarray(status[ORD]), "n": np.asarray(status["nchars"])}).groupby("o")["n"].sum()
    st = status.filter(pc.greater(status["status"], 0))
    if st.num_rows == 0:
        return pa.table({ORD: pa.array([], pa.int64()), REJECT_REASON: pa.array([], pa.string()),
                         "paragraphs_removed": pa.array([], pa.int32()), "_drop_paras": pa.array([], pa.list_(pa.int32()))})
    if cfg.mode == "document":
        label = ExactDedup.stats_key(cfg)  # exact_dedup, or exact_dedup:url: which dedup removed the page
        reason = np.where(np.asarray(st["status"]) == 2, f"{label}/seen_before", f"{label}/duplicate")
        return pa.table({ORD: st[ORD], REJECT_REASON: pa.array(reason, pa.string())})
    df = st.to_pandas()
    grouped = df.groupby(ORD, sort=True)
    seen_chars = grouped["nchars"].sum()
    drop = grouped["para"].apply(lambda s: sorted(s.tolist()))
    ords = seen_chars.index.to_numpy()
    frac = seen_chars.to_numpy() / np.maximum(totals.loc[ords].to_numpy(), 1)
    reason = np.where(frac >= cfg.paragraph_threshold, "exact_dedup/paragraphs_seen", None)
    return pa.table({
        ORD: pa.array(ords, pa.int64()), REJECT_REASON: pa.array(reason, pa.string()),
        "paragraphs_removed": pa.array([len(d) for d in drop], pa.int32()),
        "_drop_paras": pa.array(drop.tolist(), pa.list_(pa.int32())),
    })


class FilterShard:
    """One slice of the filter, held by a long-lived worker (an actor) for a whole run.

    A task the engine runs again (its worker died after the filter answered, or Ray
    rebuilt a lost output) asks again with the same ``key`` and the same keys: it gets
    the first answer back, not "all duplicates" from a filter that already holds them.
    """

    def __init__(self, bits: int, k: int, load: str | None, shard: int, n: int, remember_live_only: bool = False):
        self.filter = ShardFilter(bits, k, load_shard(load, shard, n), remember_live_only)
        self.answers: dict = {}

    @staticmethod
    def _fingerprint(hi: np.ndarray, lo: np.ndarray) -> tuple:
        with np.errstate(over="ignore"):
            return len(hi), int(np.sum(hi * np.uint64(0x9E3779B97F4A7C15) + lo, dtype=np.uint64))

    def check_add(self, key: str, hi: np.ndarray, lo: np.ndarray, chunk: int, live: np.ndarray | None = None) -> np.ndarray:
        fp = self._fingerprint(hi, lo)
        if key in self.answers:
            seen, status = self.answers[key]
            if seen != fp:
                raise RuntimeError(f"exact_dedup: task {key} asked again with other keys")
            return status
        status = self.filter.check_add(hi, lo, chunk, live)
        self.answers[key] = (fp, status)
        return status

    def save(self, path: str) -> float:
        merged = self.filter.merged()
        merged.save(path)
        return merged.fill_ratio()


def _phase_keys(batch: pa.Table, cfg: ExactDedupConfig) -> pa.Table:
    k = keys(batch, cfg)
    pos = pc.index_in(k[ORD], value_set=batch[ORD])
    return k.append_column(WPART, pc.take(batch[WPART], pos))


def _phase_decide(group: pa.Table, actors, chunk: int) -> pa.Table:
    shard = group["shard"][0].as_py()
    group = group.take(survivor_order(group))
    status = actors[shard].call("check_add", f"shard-{shard}", group["hi"].to_numpy(), group["lo"].to_numpy(), chunk,
                                group["live"].to_numpy())
    return pa.table({ORD: group[ORD], "para": group["para"], "nchars": group["nchars"],
                     "status": pa.array(status, pa.int8()), WPART: group[WPART]})


def _phase_write(group: pa.Table, cfg: ExactDedupConfig, out_dir: str, compression: str) -> pa.Table:
    from datacurate.formats.io import write_atomic

    name = group[WPART][0].as_py()
    dec = decisions(group.drop_columns([WPART]), cfg)
    if dec.num_rows:
        write_atomic(dec, storage.join(out_dir, name), compression)
    return pa.table({"n": [dec.num_rows]})


class ExactDedup(GlobalStage):
    name = "exact_dedup"
    side_inputs = ("load_filter",)  # a saved filter's folder, read by the filter actors on any node
    default_outputs = ("exact_dedup_filter", "exact_dedup_url_filter")
    output_metrics = ("filter_saved_to",)
    Config = ExactDedupConfig
    columns = {"paragraphs_removed": pa.int32()}

    @classmethod
    def stats_key(cls, config: ExactDedupConfig) -> str:
        """A web recipe runs two: by URL before extraction, by text after (``exact_dedup:url``, ``exact_dedup``)."""
        return cls.name if config.key == "text" else f"{cls.name}:{config.key}"

    @classmethod
    def needs_columns(cls, config: ExactDedupConfig) -> dict[str, str]:
        need = {config.url_field: "key: url"} if config.key == "url" else {}
        if config.priority_column:
            need[config.priority_column] = f"priority_column: {config.priority_column}"
        return need  # status_column is not needed: rows without one rank as "no HTTP status" (_live)

    @classmethod
    def output_dir(cls, config: ExactDedupConfig, out: str) -> str:
        default = "exact_dedup_filter" if config.key == "text" else f"exact_dedup_{config.key}_filter"
        return storage.abspath(config.save_filter or storage.join(out, default))

    @classmethod
    def rewrites_text(cls, config) -> bool:
        return config.mode == "paragraph"

    def filter_size(self) -> tuple[int, int]:
        bits, k = bloom_size(self.config.expected_items, self.config.false_positive_rate)
        return math.ceil(bits / self.config.num_shards), k

    def run_global(self, ctx) -> dict:
        """Distributed: keys per batch -> one task per filter slice, feeding its actor in
        survivor order -> decisions per part file. The filter is saved with the run."""
        c = self.config
        bits, k = self.filter_size()
        metrics = {"filter_bits": bits * c.num_shards, "filter_mb": round(bits * c.num_shards / 8 / 2**20, 2),
                   "hash_functions": k, "num_shards": c.num_shards, "expected_items": c.expected_items,
                   "target_false_positive_rate": c.false_positive_rate}
        if not ctx.files:
            return metrics
        live_only = c.status_column is not None  # save only live captures' URLs (ShardFilter)
        actors = ctx.actors(FilterShard, [(bits, k, c.load_filter, s, c.num_shards, live_only)
                                          for s in range(c.num_shards)])
        cols = [ORD] + ([c.url_field] if c.key == "url" else [TEXT]) + ([c.priority_column] if c.priority_column else [])
        cols += [c.status_column] if c.status_column and c.status_column not in cols else []
        status = (ctx.read(ctx.files, cols).map("keys", _phase_keys, cfg=c)
                  .groupby("decide", "shard", c.num_shards, _phase_decide, concurrency=c.num_shards,
                           actors=actors, chunk=c.chunk))
        written = status.groupby("write", WPART, max(1, min(len(ctx.files), 32)), _phase_write, cfg=c,
                                 out_dir=ctx.decisions_dir, compression=ctx.compression)
        metrics["documents_with_repeats"] = int(sum(r["n"] for r in written.rows()))
        final = self.output_dir(c, ctx.final_out)
        save = ctx.stage_output(final)
        fills = [a.call("save", storage.join(save, f"shard-{s:04d}")) for s, a in enumerate(actors)]
        save_meta(save, c, bits, k)
        ctx.release(actors)
        fill = sum(fills) / len(fills)
        metrics.update({"filter_saved_to": storage.abspath(final), "fill_ratio": round(fill, 6),
                        "estimated_false_positive_rate": fill ** k})
        return metrics

    def apply(self, table: pa.Table, dec: pa.Table):
        cols, reasons = super().apply(table, dec)
        cols["paragraphs_removed"] = pc.fill_null(cols["paragraphs_removed"], 0)
        if self.config.mode == "paragraph" and dec.num_rows:
            # kept documents lose their seen lines; rejected ones keep the text they had
            cols[TEXT] = pc.if_else(pc.is_valid(reasons), table.column(TEXT).combine_chunks(), remove_lines(table, dec))
        return cols, reasons


def remove_lines(table: pa.Table, dec: pa.Table) -> pa.Array:
    """Drop the already-seen lines of each document (vectorised over the batch); a document
    that loses none keeps its text as it was (one that does has its breaks as LF)."""
    texts = table.column(TEXT).combine_chunks()
    lines = paragraphs(texts)
    index = np.arange(len(lines.doc)) - lines.offsets[lines.doc]
    pos = np.asarray(pc.index_in(table.column(ORD), value_set=dec.column(ORD)).fill_null(-1))
    drop_lists = dec.column("_drop_paras").combine_chunks()
    flat = np.asarray(drop_lists.flatten(), dtype=np.int64)
    owner = np.repeat(np.arange(len(drop_lists)), np.diff(np.asarray(drop_lists.offsets)))
    dec_to_doc = np.full(len(drop_lists), -1)
    dec_to_doc[pos[pos >= 0]] = np.flatnonzero(pos >= 0)
    doc_of = dec_to_doc[owner]
    ok = doc_of >= 0
    key_drop = doc_of[ok].astype(np.int64) << 32 | flat[ok]
    key_line = lines.doc.astype(np.int64) << 32 | index
    edited = np.zeros(len(texts), dtype=bool)
    edited[doc_of[ok]] = True
    return pc.if_else(pa.array(edited), lines.select(~np.isin(key_line, key_drop)).rejoin("\n"), texts)


def _load_shards(path: str | None, n: int) -> list[BloomFilter] | None:
    if not path:
        return None
    meta_path = storage.join(path, "filter.json")
    if not storage.exists(meta_path):
        raise FileNotFoundError(f"exact_dedup: no saved filter in {path}")
    meta = json.loads(storage.read_text(meta_path))
    if meta["num_shards"] != n:
        raise ValueError(f"exact_dedup: saved filter has {meta['num_shards']} shards, config has {n}")
    return [BloomFilter.load(storage.join(path, f"shard-{s:04d}")) for s in range(n)]


def load_shard(path: str | None, shard: int, n: int) -> BloomFilter | None:
    shards = _load_shards(path, n)
    return shards[shard] if shards else None


def save_meta(path: str, cfg: ExactDedupConfig, bits: int, k: int) -> None:
    storage.write_text(storage.join(path, "filter.json"), json.dumps({
        "num_shards": cfg.num_shards, "bits_per_shard": bits, "k": k, "mode": cfg.mode,
        "normalize": cfg.normalize, "hash": "xxh3_128"}))
