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

# Engine-internal columns: never written to kept/ or rejected/.
PART = "_part"  # read task + batch number: names the part file deterministically
ROW = "_row"  # row number within the part
SECONDS_PREFIX = "_sec_"  # per-row share of a stage's batch time, summed into stats.json

INPUT_STAGE = "input"


def is_internal(name: str) -> bool:
    return name.startswith("_")
