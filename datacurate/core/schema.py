"""Column names and Arrow types that every stage, reader and writer agrees on.

Base columns come from the reader; each stage declares the annotation columns it
adds (``Stage.columns``); the engine adds the two reject columns. Rejected rows
travel with the kept ones until the writer splits them, so a document is never lost
between stages.
"""

import pyarrow as pa

ID = "id"
TEXT = "text"
DOMAIN = "domain"
SOURCE = "source"
REJECT_STAGE = "reject_stage"
REJECT_REASON = "reject_reason"
LANG = "lang"  # the language of each document (langid adds it; an input may carry it): picks the word segmenter
LANG_SCRIPT = "lang_script"  # its writing system (ISO 15924; langid adds it): picks per-language rules with LANG
N_TOKENS = "n_tokens"  # tokens of each document: the column a stage that makes tokens adds (the report counts it)

BASE_COLUMNS: dict[str, pa.DataType] = {
    ID: pa.string(),
    TEXT: pa.large_string(),  # large: one batch may hold documents summing past 2 GiB
    DOMAIN: pa.string(),
    SOURCE: pa.string(),
}
REJECT_COLUMNS: dict[str, pa.DataType] = {
    REJECT_STAGE: pa.string(),
    REJECT_REASON: pa.string(),
}

# Engine-internal columns: never written to kept/ or rejected/ (an input field may not take
# these names; any other name, ``_id`` or ``__index_level_0__`` included, is the user's).
ORD = "_ord"  # input order: read task << 32 | row within the task; names part files, orders survivors
TOKENS = "_tokens"  # the token ids of each document (tokenize -> decompose)
WPART = "_wpart"  # in a global stage's reads: the basename of the part file a row came from
INTERNAL_COLUMNS = (ORD, TOKENS, WPART)

INPUT_STAGE = "input"


def is_internal(name: str) -> bool:
    return name in INTERNAL_COLUMNS


def part_name(first_ord: int) -> str:
    """Deterministic part-file stem for a batch starting at ``first_ord``."""
    return f"{first_ord >> 32:06d}-{first_ord & 0xFFFFFFFF:09d}"
