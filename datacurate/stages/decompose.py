"""Stage ``decompose``: dataset decomposition into power-of-two length buckets, token shards.

Dataset decomposition (Pouransari et al. 2024, "Dataset Decomposition: Faster LLM
Training with Variable Sequence Length Curriculum", NeurIPS 2024): a document of
``l`` tokens is cut, by the binary representation of ``l``, into chunks of ``2^i``
tokens, largest first; chunk ``2^i`` goes to bucket ``D_i``. Every sequence comes from
one document, so no attention is spent across unrelated documents, and training
batches take one bucket at a time with ``batch size x 2^i`` constant. The paper trained
an 8k-context model at the cost of a 2k baseline and reached target accuracy up to 3x
faster. Here ``min_log2 .. max_log2`` bound the buckets (sample: 2^6 .. 2^11): a
document longer than ``2^max_log2`` is first split into max-size chunks, and the
remainder below ``2^min_log2`` (the document's tail, its EOS included) is dropped and
counted. A document with no token in any bucket is rejected (``decompose/too_short``).

``mode: pack`` is the usual baseline: the documents of each domain are concatenated
(each ends with EOS) and cut into ``seq_len`` sequences; the last partial sequence of
each (work part, domain) is dropped and counted. Sequences span documents.

Domains are the values of ``domain_column`` (``domain``; ``lang`` mixes languages). The
mixture's weights come from ``mixture`` / ``mixture_file`` (DoReMi's output), or from
temperature sampling, ``alpha`` (:mod:`datacurate.core.temperature`; XLM-R and mT5: 0.3).
``weight_column`` (``upsampling_weight``: near_dedup's FineWeb-2 rehydration) multiplies each
document's rate, and the mixture counts its tokens that many times.

Phases (the engine runs 1 and 3 once per work part on Ray, 2 and 4 on the driver):
1. :func:`count_part` — tokens per (domain, bucket) from ``n_tokens``; too-short rejects.
2. :func:`datacurate.stages.mixture.plan` — per-domain sampling rates from the weights.
3. :func:`write_part` — cut, sample and write each part's pieces atomically.
4. :func:`finish` — compact each bucket's pieces into files of ``target_file_bytes``
   (a reader then opens a few large files, not one per part and bucket), then
   ``manifest.json`` (:mod:`datacurate.formats.shards` documents the format).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import shards
from datacurate.core.coerce import opt
from datacurate.core.dicts import merge
from datacurate.core.temperature import temperature
from datacurate.core.schema import DOMAIN, ID, N_TOKENS, ORD, REJECT_REASON, TOKENS
from datacurate.stages import mixture
from datacurate.stages.base import GlobalStage

TOO_SHORT = "decompose/too_short"


@dataclass
class DecomposeConfig:
    mode: Literal["decompose", "pack"] = opt("decompose", "pack: concat-and-chunk baseline")
    min_log2: int = opt(6, "smallest bucket 2^min_log2 tokens; shorter tails are dropped (counted)")
    max_log2: int = opt(11, "largest bucket; longer documents are first cut into 2^max_log2 chunks")
    seq_len: int = opt(2048, "pack mode: sequence length")
    domain_column: str = opt("domain", "the column whose values are the mixture's domains (lang: languages)")
    mixture: Optional[dict[str, float]] = opt(None, "{domain: weight}; null = natural mixture")
    weight_column: Optional[str] = opt(None, "each document's sequences are written this many times over its domain's "
                                             "rate (upsampling_weight: near_dedup's rehydration, as FineWeb-2)")
    alpha: Optional[float] = opt(None, "temperature sampling: domain d weighs tokens_d^alpha (mT5, XLM-R: 0.3); "
                                       "null = mixture / mixture_file / natural")
    mixture_file: Optional[str] = opt(None, 'JSON {domain: weight} or {"domain_weights": {...}} (DoReMi)')
    total_tokens: Optional[int] = opt(None, "tokens the shards hold after mixing; null = all bucketed tokens")
    seed: int = opt(0, "sampling coins: hash of (seed, document id, position)")
    output: Optional[str] = opt(None, "shard directory; null = OUT/shards")
    tokenizer: Optional[str] = opt(None, "null: the tokenize stage's tokenizer (in-process: the shipped one)")
    target_file_bytes: int = opt(256 << 20, "bytes of token ids per shard file at most (whole sequences, one at least)")

    def validate(self) -> None:
        if not 0 <= self.min_log2 <= self.max_log2 <= 24:
            raise ValueError("need 0 <= min_log2 <= max_log2 <= 24")
        if self.seq_len < 1:
            raise ValueError("seq_len must be positive")
        if self.total_tokens is not None and self.total_tokens < 1:
            raise ValueError("total_tokens must be positive")
        if not 0 <= self.seed < 2**64:
            raise ValueError("seed must be within [0, 2**64)")
        if self.target_file_bytes < 1:
            raise ValueError("target_file_bytes must be positive")
        if self.alpha is not None and not 0.0 < self.alpha <= 1.0:
            raise ValueError("alpha must be within (0, 1]: 1 is the natural mixture, smaller flattens it")
        if self.weight_column and self.mode == "pack":
            raise ValueError("weight_column needs mode: decompose (packed sequences span documents)")
        if self.alpha is not None and (self.mixture or self.mixture_file):
            raise ValueError("set alpha (temperature sampling) or mixture / mixture_file, not both")


def plan(lengths: np.ndarray, domain_codes: np.ndarray, cfg: DecomposeConfig):
    """Where each sequence comes from, from document lengths alone.

    Returns (stream order or None, {seq_len: (doc, pos, start)}): ``doc`` the document
    (row) of each sequence, ``pos`` its first token's offset in that document (the
    sampling key), ``start`` its first token's index in the token *stream* — the
    documents' tokens concatenated in input order, or (pack mode) in ``stream order``.
    """
    lengths = lengths.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    out = {}
    if cfg.mode == "pack":
        order = np.argsort(domain_codes, kind="stable")
        soff = np.concatenate([[0], np.cumsum(lengths[order])])
        codes = domain_codes[order]
        edges = np.flatnonzero(np.diff(codes)) + 1
        starts = []
        for a, b in zip(np.concatenate([[0], edges]), np.concatenate([edges, [len(order)]])):
            n_seq = (soff[b] - soff[a]) // cfg.seq_len
            starts.append(soff[a] + np.arange(n_seq, dtype=np.int64) * cfg.seq_len)
        s = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        j = np.searchsorted(soff, s, side="right") - 1
        out[cfg.seq_len] = (order[j], s - soff[j], s)
        return order, out
    big = 1 << cfg.max_log2
    n_full, rest = lengths // big, lengths % big
    doc = np.repeat(np.arange(len(lengths)), n_full)
    first = np.concatenate([[0], np.cumsum(n_full)])[:-1]
    pos = (np.arange(len(doc)) - first[doc]) * big
    out[big] = (doc, pos, offsets[doc] + pos)
    for i in range(cfg.max_log2 - 1, cfg.min_log2 - 1, -1):
        d = np.flatnonzero((rest >> i) & 1)
        pos = n_full[d] * big + ((rest[d] >> (i + 1)) << (i + 1))  # after the larger chunks
        out[1 << i] = (d, pos, offsets[d] + pos)
    return None, out


def _codes(domains: pa.Array | pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    enc = pc.fill_null(domains, "unknown").cast(pa.string()).combine_chunks().dictionary_encode()
    return enc.dictionary.to_pylist(), np.asarray(enc.indices, dtype=np.int64)


def _doc_weights(table: pa.Table, cfg: DecomposeConfig) -> np.ndarray:
    """Each document's whole-number weight (1 without ``weight_column``; a missing value is 1)."""
    if not cfg.weight_column:
        return np.ones(table.num_rows, dtype=np.int64)
    w = np.asarray(pc.fill_null(table.column(cfg.weight_column).cast(pa.int64()), 1), dtype=np.int64)
    if len(w) and w.min() < 0:
        raise ValueError(f"decompose: {cfg.weight_column} has a negative weight")
    return w


def count_part(table: pa.Table, cfg: DecomposeConfig) -> tuple[dict, pa.Table]:
    """Phase 1 (one part: ``_ord``, ``domain``, ``n_tokens``): per-domain counts and the
    decisions (too-short documents)."""
    lengths = np.asarray(table.column(N_TOKENS), dtype=np.int64)
    names, codes = _codes(table.column(cfg.domain_column))
    _, buckets = plan(lengths, codes, cfg)
    weights = _doc_weights(table, cfg)
    counts: dict = {}
    for c, name in enumerate(names):
        counts[name] = {"documents": int(np.sum(codes == c)), "tokens_in": int(lengths[codes == c].sum()),
                        "tokens_in_buckets": 0, "weighted_tokens": 0, "too_short": 0, "buckets": {}}
    for seq_len, (doc, _, _) in buckets.items():
        per = np.bincount(codes[doc], minlength=len(names))
        wper = np.bincount(codes[doc], weights=weights[doc], minlength=len(names))
        for c, name in enumerate(names):
            if per[c]:
                counts[name]["buckets"][str(seq_len)] = int(per[c])
                counts[name]["tokens_in_buckets"] += int(per[c]) * seq_len
                counts[name]["weighted_tokens"] += int(wper[c]) * seq_len
    short = (lengths < (1 << cfg.min_log2)) if cfg.mode == "decompose" else np.zeros(len(lengths), bool)
    for c, name in enumerate(names):
        counts[name]["too_short"] = int(np.sum(short & (codes == c)))
    decisions = pa.table({ORD: table.column(ORD).filter(pa.array(short)),
                          REJECT_REASON: pa.array([TOO_SHORT] * int(short.sum()), pa.string())})
    return counts, decisions


def write_part(table: pa.Table, cfg: DecomposeConfig, part: str, out_dir: str, rates: dict[str, float],
               domain_ids: dict[str, int], dtype: np.dtype) -> tuple[list[dict], dict]:
    """Phase 3 (one part: ``id``, ``domain``, ``n_tokens``, ``_tokens``): cut, sample and
    write this part's sequences; return its piece entries and written counts per domain."""
    tok = table.column(TOKENS).combine_chunks()
    flat = np.asarray(tok.flatten(), dtype=np.uint32)
    lengths = np.diff(np.asarray(tok.offsets, dtype=np.int64))
    if not np.array_equal(lengths, np.asarray(table.column(N_TOKENS), dtype=np.int64)):
        raise ValueError(f"decompose: part {part}: _tokens and n_tokens disagree")
    names, codes = _codes(table.column(cfg.domain_column))
    order, buckets = plan(lengths, codes, cfg)
    if order is not None:  # pack: the stream is the documents in domain order
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        starts = offsets[:-1][order] - np.concatenate([[0], np.cumsum(lengths[order])])[:-1]
        flat = flat[np.repeat(starts, lengths[order]) + np.arange(len(flat))]
    if len(flat) and int(flat.max()) > np.iinfo(dtype).max:  # check before the cast wraps it
        raise ValueError(f"decompose: token id {int(flat.max())} does not fit {np.dtype(dtype).name}; "
                         "the shards' tokenizer is not the one that made these tokens")
    flat = flat.astype(dtype)
    part_rates = np.array([rates.get(n, 0.0) for n in names])
    part_ids = np.array([domain_ids[n] for n in names], dtype=np.uint16)
    ids = table.column(ID).combine_chunks()
    weights = _doc_weights(table, cfg)
    if order is not None:  # pack mode: sequences span documents, so a document weight cannot apply
        weights = np.ones(table.num_rows, dtype=np.int64)
    pieces, written = [], {}
    for seq_len, (doc, pos, start) in sorted(buckets.items()):
        k = mixture.repeats(mixture.sequence_keys(ids, doc, pos, cfg.seed), part_rates[codes[doc]] * weights[doc])
        keep = np.repeat(np.arange(len(doc)), k)
        if not len(keep):
            continue
        windows = np.lib.stride_tricks.sliding_window_view(flat, seq_len)  # (T - L + 1, L) view
        entry = shards.write_piece(out_dir, part, windows[start[keep]], part_ids[codes[doc[keep]]], dtype)
        pieces.append({**entry, "seq_len": seq_len})
        per = np.bincount(codes[doc[keep]], minlength=len(names))
        for c, name in enumerate(names):
            if per[c]:
                w = written.setdefault(name, {"sequences": 0, "tokens": 0})
                w["sequences"] += int(per[c])
                w["tokens"] += int(per[c]) * seq_len
    return pieces, written


def finish(out_dir: str, cfg: DecomposeConfig, info, counts: dict, mix: dict, source: str,
           pieces: list[dict], written: dict, run: Optional[dict] = None) -> dict:
    """Phase 4: compact the pieces into the bucket files, write the manifest (and a copy of
    the tokenizer); return stage metrics."""
    per_domain = {}
    for name, c in sorted(counts.items()):
        m = mix["domains"].get(name, {"weight": 0.0, "target_tokens": 0.0, "rate": 0.0})
        w = written.get(name, {"sequences": 0, "tokens": 0})
        per_domain[name] = {**{k: c[k] for k in ("documents", "too_short", "tokens_in", "tokens_in_buckets",
                                                  "weighted_tokens")},
                            "tokens_dropped": c["tokens_in"] - c["tokens_in_buckets"],
                            "sequences_in_buckets": c["buckets"], "weight": m["weight"],
                            "target_tokens": round(m["target_tokens"], 1), "rate": m["rate"],
                            "sequences_written": w["sequences"], "tokens_written": w["tokens"]}
    totals = {k: sum(d[k] for d in per_domain.values()) for k in
              ("documents", "too_short", "tokens_in", "tokens_in_buckets", "tokens_dropped",
               "sequences_written", "tokens_written")}
    files = shards.compact(out_dir, pieces, cfg.target_file_bytes, info.dtype.itemsize)
    man = shards.build_manifest(
        files, mode=cfg.mode, min_log2=cfg.min_log2, max_log2=cfg.max_log2,
        seq_len=cfg.seq_len if cfg.mode == "pack" else None, dtype=info.dtype.name,
        tokenizer={**info.to_dict(), "path": "tokenizer.json", "source_path": info.path},
        domains=sorted(counts), per_domain=per_domain, totals=totals,
        mixture={"source": source, "seed": cfg.seed, "total_tokens": mix["total_tokens"],
                 "missing_domains": mix["missing_domains"]},
        source_run=run or {})
    shards.copy_tokenizer(out_dir, info.path)
    shards.write_manifest(out_dir, man)
    return {**totals, "shards": out_dir, "mixture_source": source,
            "sequences_per_bucket": {k: b["sequences"] for k, b in man["buckets"].items()},
            "files_per_bucket": {k: len(b["files"]) for k, b in man["buckets"].items()}}


def _weight(cfg: DecomposeConfig) -> list[str]:
    return [cfg.weight_column] if cfg.weight_column else []


def _phase_count(path: str, cfg: DecomposeConfig, dec_dir: str, compression: str) -> dict:
    from datacurate.formats import storage
    from datacurate.formats.io import write_atomic

    counts, decisions = count_part(storage.read_parquet(path, columns=[ORD, cfg.domain_column, N_TOKENS, *_weight(cfg)]), cfg)
    if decisions.num_rows:
        write_atomic(decisions, storage.join(dec_dir, path.rsplit("/", 1)[-1]), compression)
    return counts


def _phase_write(path: str, cfg: DecomposeConfig, out_dir: str, rates: dict, domain_ids: dict, dtype: str) -> dict:
    from datacurate.formats import storage

    part = path.rsplit("/", 1)[-1].removeprefix("part-").removesuffix(".parquet")
    table = storage.read_parquet(path, columns=[ID, cfg.domain_column, N_TOKENS, TOKENS, *_weight(cfg)])
    pieces, written = write_part(table, cfg, part, out_dir, rates, domain_ids, np.dtype(dtype))
    return {"pieces": pieces, "written": written}


class Decompose(GlobalStage):
    name = "decompose"
    side_inputs = ("mixture_file",)
    Config = DecomposeConfig
    columns: dict = {}
    requires = ("tokenize",)
    writes_shards = True
    default_outputs = ("shards",)
    output_key = "output"
    output_metrics = ("shards",)

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        self.weights, self.source = mixture.load_weights(self.config.mixture, self.config.mixture_file)
        if self.config.alpha is not None:
            self.source = f"temperature alpha={self.config.alpha:g} over {self.config.domain_column}"

    @classmethod
    def needs_columns(cls, config: DecomposeConfig) -> dict[str, str]:
        need = {} if config.domain_column == DOMAIN else {config.domain_column: f"domain_column: {config.domain_column}"}
        if config.weight_column:
            need[config.weight_column] = f"weight_column: {config.weight_column}"
        return need

    def tokenizer_info(self, path: Optional[str] = None):
        from datacurate.formats.tokenizer import load_tokenizer

        return load_tokenizer(path or self.config.tokenizer)[1]

    def tokenizer_for(self, before: list):
        """The tokenizer of the shards: that of the last stage before this one that makes
        tokens, else the ``tokenizer`` key (a different one is a one-line error)."""
        from datacurate.core.coerce import ConfigError

        src = next((s for s in reversed(before) if s.cls.makes_tokens), None)
        if src is None:
            return self.tokenizer_info()
        info = src.cls.tokenizer_of(src.config)
        if self.config.tokenizer and self.tokenizer_info().sha256 != info.sha256:
            raise ConfigError(f"decompose.tokenizer ({self.config.tokenizer}) is not the tokenizer the {src.name} "
                              "stage uses; leave it null")
        return info

    @classmethod
    def output_dir(cls, config: DecomposeConfig, out: str) -> str:
        from datacurate.formats import storage

        return storage.abspath(config.output or storage.join(out, "shards"))

    def preflight(self, cfg, index: int) -> None:
        self.tokenizer_for(cfg.stages[:index])
        shards.check_dir(self.output_dir(self.config, cfg.output.path), cfg.output.overwrite)

    def run_global(self, ctx) -> dict:
        """Phases 1 and 3 as one task per part file, 2 and 4 on the driver; the shard set
        replaces an earlier one only when the run completes."""
        c = self.config
        info = self.tokenizer_for(ctx.stages_before)
        final = self.output_dir(c, ctx.final_out)
        out_dir = ctx.stage_output(final, owns=(shards.MANIFEST, "tokenizer.json", "len*"))
        counts: dict = {}
        for part_counts in ctx.map_files("count", _phase_count, cfg=c, dec_dir=ctx.decisions_dir,
                                         compression=ctx.compression):
            merge(counts, part_counts)
        if len(counts) > np.iinfo(shards.DOMAIN_DTYPE).max + 1:
            raise ValueError(f"decompose: {len(counts)} domains do not fit uint16 domain ids")
        tokens = {d: n["weighted_tokens"] for d, n in counts.items()}  # after rehydration, if any
        weights = temperature(tokens, c.alpha) if c.alpha is not None else self.weights
        mix = mixture.plan(tokens, weights, c.total_tokens)
        rates = {d: m["rate"] for d, m in mix["domains"].items()}
        domain_ids = {d: i for i, d in enumerate(sorted(counts))}
        shards.prepare_dir(out_dir, overwrite=True)  # pieces are compacted away: a resumed run writes them again
        pieces, written = [], {}
        for res in ctx.map_files("write", _phase_write, journal=False, cfg=c, out_dir=out_dir, rates=rates,
                                 domain_ids=domain_ids, dtype=info.dtype.name):
            pieces += res["pieces"]
            merge(written, res["written"])
        run = {"output": ctx.final_out, "config": ctx.run_config_dict} if ctx.run_config_dict else {}  # {}: one table
        return {**finish(out_dir, c, info, counts, mix, self.source, pieces, written, run), "shards": final}

    def run_table(self, table: pa.Table, out: Optional[str] = None):
        if not (self.config.output or out):  # else the shards would go to a temporary directory
            raise ValueError("decompose: set output (the shard directory) to run outside the engine")
        return super().run_table(table, out)
