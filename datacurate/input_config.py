"""The ``input:`` section's dataclass, in a leaf module: the readers, the pipeline config
and stages with side inputs (DSIR's target) all use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class InputConfig:
    path: list[str] = field(default_factory=list)  # files, directories or globs
    format: Literal["auto", "jsonl", "parquet"] = "auto"  # auto: by file extension
    text_field: str = "text"
    id_field: str = "id"  # when absent in a record, id = "<source>:<line>"
    domain_field: str = "domain"
    default_domain: str = "unknown"  # domain for records without one
    max_doc_chars: int = 10_000_000  # longer documents are rejected as input/doc_too_large
    invalid_utf8: Literal["reject", "replace"] = "reject"  # replace: decode with U+FFFD and keep
    chunk_bytes: int = 64 << 20  # plain JSONL files are split into read tasks of about this size
    batch_rows: int = 2048  # rows per Arrow batch flowing through the stages
    # every other field of a record is kept under its own name; this renames some first
    # ({source: orig_source}) when one would collide with a column the run adds
    rename: dict[str, str] = field(default_factory=dict)
