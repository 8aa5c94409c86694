"""Stage ``export_tokens``: the kept documents' token ids in a format other trainers read.

* ``format: megatron`` — Megatron-LM's indexed dataset (:mod:`datacurate.formats.megatron`),
  what Megatron-LM / NeMo's ``--data-path`` takes (NeMo Curator and datatrove write the
  same): one document per sequence, its ids as ``tokenize`` made them (EOS included, BOS
  with ``add_bos``). ``split_by: domain`` writes one prefix per domain, since Megatron
  blends datasets by prefix and weight, and the blend string
  (``data_path.txt``: ``w1 prefix1 w2 prefix2 ...``) with each domain's share of the
  tokens (the natural mixture) or the weights of a DoReMi ``domain_weights.json``.
* ``format: hf`` — Parquet files ``data/train-<k>.parquet`` with ``id``, ``domain`` and
  ``input_ids`` (``list<int32>``), which ``datasets.load_dataset("parquet",
  data_dir=...)`` loads as a ``train`` split, beside the tokenizer (``tokenizer.json`` +
  ``tokenizer_config.json``: ``AutoTokenizer`` opens the directory). No
  ``attention_mask``: every row is one unpadded document, so it would be all ones.

Both write ``export.json`` last (what was written, with counts and the tokenizer), so its
presence marks a complete export. The stage annotates nothing and drops nothing: it
exports what reaches it, so it goes after every stage that rejects (after
``decompose``) for the export to hold exactly the kept documents.

Phases (a global stage: it needs every part written first): ``write``, one task per
work part, writes that part's pieces into the run's work directory (journaled: a
resumed run does not write them again, and they stay until the run ends); then the
driver merges them in part order into a bounded number of files (one ``.bin`` + ``.idx``
per prefix; Parquet files of at most ``target_file_bytes`` of token ids), each written
under a temporary name and renamed, so a merge run twice writes the same bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import groupby
from typing import Iterator, Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import megatron, storage
from datacurate.core.coerce import opt
from datacurate.core.schema import DOMAIN, ID
from datacurate.stages import mixture
from datacurate.stages.base import GlobalStage
from datacurate.stages.tokenize import TOKENS, Tokenize

MANIFEST = "export.json"
OWNS = (MANIFEST, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "data_path.txt", "data",
        "*.bin", "*.idx")


@dataclass
class ExportTokensConfig:
    format: Literal["megatron", "hf"] = opt("megatron", "megatron: indexed dataset .bin/.idx; hf: Parquet + tokenizer")
    path: Optional[str] = opt(None, "export directory, local or s3://; null = OUT/<format>")
    split_by: Optional[Literal["domain"]] = opt(None, "megatron: one prefix per domain (+ the --data-path weights)")
    weights_file: Optional[str] = opt(None, "split_by domain: DoReMi weights JSON for the blend; null = token shares")
    prefix: str = opt("text_document", "megatron file names: <prefix>.bin, or <domain>_<prefix>.bin with split_by")
    target_file_bytes: int = opt(256 << 20, "hf: token id bytes (int32) per Parquet file at most (one row at least)")

    def validate(self) -> None:
        if self.weights_file and self.split_by != "domain":
            raise ValueError("weights_file needs split_by: domain (one prefix per domain to weigh)")
        if self.split_by and self.format != "megatron":
            raise ValueError("split_by is for format: megatron (the hf export has a domain column)")
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.prefix):
            raise ValueError(f"prefix {self.prefix!r}: use letters, digits, '.', '_' or '-'")
        if self.target_file_bytes < 1:
            raise ValueError("target_file_bytes must be positive")


def safe_name(domain: str) -> str:
    """A domain as a file name part (Megatron prefixes are paths)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", domain) or "_"


def _tokens(table: pa.Table, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(flat uint32 ids, int64 lengths) of the ``_tokens`` of ``rows`` (all by default)."""
    tok = table.column(TOKENS).combine_chunks()
    if rows is not None:
        tok = tok.take(pa.array(rows, pa.int64()))
    return np.asarray(tok.flatten(), dtype=np.uint32), np.diff(np.asarray(tok.offsets, dtype=np.int64))


def write_megatron_part(table: pa.Table, cfg: ExportTokensConfig, part: str, piece_dir: str,
                        dtype: np.dtype) -> list[dict]:
    """One part's documents -> one piece per prefix (per domain with ``split_by``)."""
    if cfg.split_by is None:
        groups = {"": None}
    else:
        domains = pc.fill_null(table.column(DOMAIN), "unknown").to_numpy(zero_copy_only=False).astype(str)
        groups = {d: np.flatnonzero(domains == d) for d in sorted(set(domains))}
    pieces = []
    for domain, rows in groups.items():
        flat, lengths = _tokens(table, rows)
        stem = storage.join(piece_dir, safe_name(domain) if domain else "all", f"part-{part}")
        pieces.append({**megatron.write_piece(stem, flat, lengths, dtype), "domain": domain})
    return pieces


def hf_table(table: pa.Table) -> pa.Table:
    """``id``, ``domain``, ``input_ids`` (list<int32>) of a part."""
    flat, lengths = _tokens(table)
    if len(flat) and int(flat.max()) > np.iinfo(np.int32).max:
        raise ValueError(f"token id {int(flat.max())} does not fit int32")
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.astype(np.int32)))
    return pa.table({ID: table.column(ID).cast(pa.string()), DOMAIN: table.column(DOMAIN).cast(pa.string()),
                     "input_ids": ids})


def _phase_write(path: str, cfg: ExportTokensConfig, piece_dir: str, dtype: str) -> dict:
    part = path.rsplit("/", 1)[-1].removeprefix("part-").removesuffix(".parquet")
    table = storage.read_parquet(path, columns=[ID, DOMAIN, TOKENS])
    if cfg.format == "megatron":
        return {"pieces": write_megatron_part(table, cfg, part, piece_dir, np.dtype(dtype))}
    out = hf_table(table)
    stem = storage.join(piece_dir, f"part-{part}.parquet")
    storage.write_parquet(out, stem)
    tokens = int(pc.sum(pc.list_value_length(out.column("input_ids"))).as_py() or 0)
    return {"pieces": [{"stem": stem, "documents": out.num_rows, "tokens": tokens}]}


def blend(tokens: dict[str, int], weights: Optional[dict[str, float]]) -> dict[str, float]:
    """Megatron's blend weight per domain: given ``weights`` (renormalised over the
    domains exported; a domain without one gets none), else each domain's token share."""
    src = {d: (weights or {}).get(d, 0.0) if weights is not None else n for d, n in tokens.items()}
    total = sum(v for d, v in src.items() if tokens[d])
    if total <= 0:
        raise ValueError("export_tokens: no exported domain has a weight in weights_file")
    return {d: v / total for d, v in sorted(src.items()) if v > 0 and tokens[d]}


def finish_megatron(out_dir: str, final: str, cfg: ExportTokensConfig, pieces: list[dict], dtype: np.dtype,
                    weights: Optional[dict]) -> dict:
    by_domain: dict[str, list[str]] = {}
    for p in sorted(pieces, key=lambda p: p["stem"]):
        by_domain.setdefault(p["domain"], []).append(p["stem"])
    prefixes = {}
    for domain, stems in sorted(by_domain.items()):
        name = f"{safe_name(domain)}_{cfg.prefix}" if domain else cfg.prefix
        prefixes[name] = {"domain": domain or None, **megatron.merge(storage.join(out_dir, name), stems, dtype)}
    out = {"prefixes": prefixes}
    if cfg.split_by == "domain":
        w = blend({p["domain"]: p["tokens"] for p in prefixes.values()}, weights)
        names = {p["domain"]: n for n, p in prefixes.items()}
        out["data_path"] = " ".join(f"{w[d]:.6g} {storage.join(final, names[d])}" for d in w)
        out["weights"] = w
        storage.write_text(storage.join(out_dir, "data_path.txt"), out["data_path"] + "\n")
    return out


def _file_slices(pieces: list[dict], budget: int) -> Iterator[tuple[int, pa.Table]]:
    """(file number, rows) over the pieces in order: a file takes whole rows while its
    tokens stay within ``budget`` (one row at least)."""
    k, held = 0, 0
    for p in sorted(pieces, key=lambda p: p["stem"]):
        table = storage.read_parquet(p["stem"])
        lengths = pc.list_value_length(table.column("input_ids")).to_numpy()
        start = 0
        while start < table.num_rows:
            room = np.cumsum(lengths[start:]) + held  # tokens held after each next row
            n = int(np.searchsorted(room, budget, side="right"))
            if n == 0 and held:  # the next row does not fit: a new file
                k, held = k + 1, 0
                continue
            n = max(n, 1)
            yield k, table.slice(start, n)
            held, start = int(room[n - 1]), start + n


def finish_hf(out_dir: str, cfg: ExportTokensConfig, pieces: list[dict]) -> dict:
    """The parts' Parquet pieces, in order, into ``data/train-<k>.parquet`` files of at
    most ``target_file_bytes`` of int32 ids (whole rows, one at least)."""
    import pyarrow.parquet as pq

    files = []
    for k, group in groupby(_file_slices(pieces, max(1, cfg.target_file_bytes // 4)), key=lambda s: s[0]):
        files.append(f"data/train-{k:05d}.parquet")
        with storage.atomic_file(storage.join(out_dir, files[-1])) as f:
            writer = None
            for _, rows in group:
                writer = writer or pq.ParquetWriter(f, rows.schema, compression="zstd")
                writer.write_table(rows)
            writer.close()
    return {"files": files}


class ExportTokens(GlobalStage):
    name = "export_tokens"
    Config = ExportTokensConfig
    columns: dict = {}
    requires = ("tokenize",)
    default_outputs = ("megatron", "hf")
    output_key = "path"
    output_metrics = ("exported_to",)

    @classmethod
    def stats_key(cls, config: ExportTokensConfig) -> str:
        return f"{cls.name}:{config.format}" + (f":{config.path}" if config.path else "")

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        self.weights = None
        if self.config.weights_file:
            self.weights, _ = mixture.load_weights(None, self.config.weights_file)

    @classmethod
    def output_dir(cls, config: ExportTokensConfig, out: str) -> str:
        return storage.abspath(config.path or storage.join(out, config.format))

    def tokenizer_for(self, before: list):
        """The tokenizer of the last stage before this one that makes tokens (on one table,
        ``stage(table)``: the tokenize stage's default, the shipped one)."""
        src = next((s for s in reversed(before) if s.cls.makes_tokens), None)
        return Tokenize.tokenizer_of(Tokenize.Config()) if src is None else src.cls.tokenizer_of(src.config)

    def preflight(self, cfg, index: int) -> None:
        from datacurate.core.coerce import ConfigError

        self.tokenizer_for(cfg.stages[:index])
        mine = self.output_dir(self.config, cfg.output.path)
        for j, s in enumerate(cfg.stages):
            if j != index and s.name == self.name and self.output_dir(s.config, cfg.output.path) == mine:
                raise ConfigError(f"stages[{index}].{self.name}: stages[{j}] exports to the same path {mine}; "
                                  "give one of them another path")
        names = storage.listdir(mine) if storage.isdir(mine) else []
        if names and not storage.exists(storage.join(mine, MANIFEST)):
            raise ConfigError(f"stages[{index}].{self.name}: path {mine} exists, is not empty and holds no export; "
                              "give another path")
        if names and not cfg.output.overwrite:
            raise ConfigError(f"stages[{index}].{self.name}: path {mine} already holds an export; "
                              "set output.overwrite: true")

    def run_global(self, ctx) -> dict:
        c = self.config
        info = self.tokenizer_for(ctx.stages_before)
        dtype = megatron.token_dtype(info.vocab_size) if c.format == "megatron" else np.dtype(np.int32)
        final = self.output_dir(c, ctx.final_out)
        out_dir = ctx.stage_output(final, owns=OWNS)
        piece_dir = ctx.scratch("export")  # under the run's _work: journaled pieces stay until the run ends
        pieces = [p for res in ctx.map_files("write", _phase_write, cfg=c, piece_dir=piece_dir, dtype=dtype.name)
                  for p in res["pieces"]]
        if c.format == "megatron":
            written = finish_megatron(out_dir, final, c, pieces, dtype, self.weights)
        else:
            written = finish_hf(out_dir, c, pieces)
        from datacurate.formats.tokenizer import hf_tokenizer_files

        for name, data in hf_tokenizer_files(info).items():
            storage.write_bytes(storage.join(out_dir, name), data)
        documents, tokens = sum(p["documents"] for p in pieces), sum(p["tokens"] for p in pieces)
        manifest = {"format": c.format, "version": 1, "dtype": dtype.name, "documents": documents, "tokens": tokens,
                    "tokenizer": info.to_dict(), **written, "source_run": ctx.final_out}
        storage.write_text(storage.join(out_dir, MANIFEST), json.dumps(manifest, indent=2))  # last: complete
        return {"format": c.format, "documents": documents, "tokens": tokens, "exported_to": final}
