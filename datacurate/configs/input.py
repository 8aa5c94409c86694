"""The ``input:`` section's dataclass, in a leaf module: the readers, the pipeline config
and stages with side inputs (DSIR's target) all use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from datacurate.core.coerce import opt


@dataclass
class InputConfig:
    path: list[str] = opt(list, "files, directories or globs")
    format: Literal["auto", "jsonl", "json", "parquet", "warc"] = opt(
        "auto", "auto: by file extension (.json: an array of records or JSON lines, by its first byte); "
        "json: a JSON array of records; warc: WARC, WET or ARC")
    text_field: str = "text"
    id_field: str = opt("id", 'when absent in a record, id = "<source>:<line>"')
    domain_field: str = "domain"
    default_domain: str = opt("unknown", "domain for records without one")
    max_doc_chars: int = opt(10_000_000, "longer documents are rejected as input/doc_too_large")
    invalid_utf8: Literal["reject", "replace"] = opt("reject", "replace: decode with U+FFFD and keep")
    chunk_bytes: int = opt(64 << 20, "plain JSONL and .warc.gz files are split into read tasks of about this size")
    batch_rows: int = opt(2048, "rows per Arrow batch flowing through the stages")
    rename: dict[str, str] = opt(dict, "every other field of a record is kept under its own name; this renames "
                                 "some first ({source: orig_source}) when one would collide with a column the run adds")
