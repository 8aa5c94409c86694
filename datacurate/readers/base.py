"""The read-task contract every format module follows, and what they share.

A format module has ``SUFFIXES`` (what ``input.format: auto`` recognises), ``plan(path,
source, size, cfg) -> FilePlan`` (run on the driver: the file's read tasks, and the
amount of it they must consume together) and ``read(task, cfg, counters, tally)``
(run anywhere: yields Arrow batches of what only the format knows: ``id``, ``text``,
``domain``, the extra fields and an ``input/...`` ``reject_reason`` (:func:`make_batch`),
counting what it consumed in ``tally``). :func:`datacurate.formats.io.read_task` is the one place
that adds the columns every reader would otherwise repeat (``source``, ``reject_stage``,
``_ord``: :func:`datacurate.formats.io.frame`) and each task's tally to
``counters["files"][source]``, and the run checks per file that its tasks consumed the
whole file and that every record became a row (:func:`datacurate.formats.io.check_consumed`).
"""

from __future__ import annotations

import io
import itertools
from dataclasses import asdict, dataclass, field

import pyarrow as pa

from datacurate.formats import fields
from datacurate.configs.input import InputConfig
from datacurate.core.schema import BASE_COLUMNS, DOMAIN, ID, REJECT_REASON, TEXT


class InputError(ValueError):
    """An input path that cannot be read (reported before any work starts), or a run whose
    read tasks did not consume their files whole (reported instead of its funnel)."""


@dataclass
class ReadTask:
    path: str  # absolute path
    source: str  # the name written to the `source` column and used in derived ids
    fmt: str  # a key of datacurate.formats.io.READERS: "jsonl" | "json" | "parquet" | "warc" | "arc"
    index: int = 0  # task number: names the part files
    start: int = 0  # byte offset (parquet: first row group)
    end: int = -1  # byte end, exclusive (parquet: row group end); a stream read whole: the file size
    first_line: int = 1  # jsonl: line number of the first line in the range; parquet: first row
    size: int = 0  # bytes to read (for progress)
    whole: bool = False  # a compressed stream, read from start to its end (no byte ranges)
    taken: list[str] | None = None  # raw field names a record may not hold; None: keep no extra fields
    json_fields: list[str] = field(default_factory=list)  # parquet: fields kept as JSON text (types differ)
    # warc: row ids ``<source>#<WARC-Record-ID>``: a run reading several archive files, which may
    # hold the same records (copies, overlapping crawls), gives every row its own id
    qualify_ids: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FilePlan:
    """One input file's read tasks and what they must consume of it together: ``total``
    in ``unit`` ("bytes" of the file as stored, or "rows" of a Parquet file)."""

    tasks: list[ReadTask]
    total: int
    unit: str = "bytes"
    schema: object = None  # parquet: the file's Arrow schema (the run's field types)


@dataclass
class Tally:
    """What one read task consumed: ``consumed`` in its file's unit (bytes of the stored
    file; for a compressed stream counted only once it was read to its end), ``bytes``
    of text read (decompressed), ``lines``, ``records`` found and ``rows`` yielded."""

    consumed: int = 0
    bytes: int = 0
    lines: int = 0
    records: int = 0
    rows: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


SAMPLE_RECORDS = 1000  # records per file that the text-field check reads


class FieldStats:
    """What the first records of a file hold: how many, how many lack each field, and the
    mean length of each field's string values (the longest is most likely the text)."""

    def __init__(self):
        self.records, self.fields = 0, {}  # field -> [records with it, string values, their chars]

    def add(self, name: str, value, n: int = 1, chars: int | None = None) -> None:
        f = self.fields.setdefault(name, [0, 0, 0])
        f[0] += n
        if chars is not None or isinstance(value, str):
            f[1] += n
            f[2] += chars if chars is not None else len(value)

    def longest_text(self, exclude: tuple[str, ...] = ()) -> str | None:
        strings = [(f[2] / f[1], name) for name, f in self.fields.items() if f[1] and name not in exclude]
        return max(strings)[1] if strings else None


def check_text_field(st: FieldStats, cfg: InputConfig, source: str, text_key: str = "input.text_field") -> None:
    """Fail when more than half of a file's first records lack the text field: a run that
    rejects nearly everything as input/missing_text is almost always a misnamed field.
    The suggestion is the string field (other than the id and domain fields) with the
    longest values."""
    text_field = cfg.text_field
    have = st.fields.get(text_field, [0])[0]
    if not st.records or 2 * (st.records - have) <= st.records:
        return
    best = st.longest_text(exclude=(cfg.id_field, cfg.domain_field))
    seen = ", ".join(st.fields) or "none"
    hint = f"set {text_key}={best}" if best and best != text_field else f"set {text_key}=NAME"
    raise InputError(f"input: no '{text_field}' field in {round(100 * (st.records - have) / st.records)}% of records "
                     f"of {source}; fields seen: {seen}; {hint}")


NO_FIELDS: dict = {}  # the record of a row whose line is no JSON object: every extra field null


class Batcher:
    """Accumulates rows and emits Arrow tables of ``rows`` rows (or ~64 MB of text).

    With ``keep`` it also keeps each row's parsed record and, at flush, builds one column
    per other field seen in the batch (first-seen order; :func:`fields.jsonl_column`)."""

    def __init__(self, task: ReadTask, rows: int, cfg: InputConfig | None = None):
        self.task, self.rows = task, rows
        self.keep = task.taken is not None and cfg is not None
        if self.keep:
            self.own, self.rename = {cfg.text_field, cfg.id_field, cfg.domain_field}, cfg.rename
        self._reset()

    def _reset(self):
        self.ids, self.texts, self.domains, self.reasons, self.nbytes, self.records = [], [], [], [], 0, []

    def add(self, id_, text, domain, reason=None, record=NO_FIELDS):
        self.ids.append(id_)
        self.texts.append(text)
        self.domains.append(domain)
        self.reasons.append(reason)
        self.nbytes += len(text)
        if self.keep:
            self.records.append(record)

    def _extras(self) -> dict[str, pa.Array]:
        if not self.keep:
            return {}
        n, records = len(self.records), self.records
        seen = dict.fromkeys(itertools.chain.from_iterable(records))  # every key, first-seen order, in C
        return {self.rename.get(k, k): fields.jsonl_column(list(map(dict.get, records, itertools.repeat(k, n))))
                for k in seen if k not in self.own}

    def full(self) -> bool:
        return len(self.ids) >= self.rows or self.nbytes >= 64 << 20

    def flush(self, extras: dict | None = None) -> pa.Table | None:
        n = len(self.ids)
        if n == 0:
            return None
        table = make_batch(pa.array(self.ids, BASE_COLUMNS[ID]), pa.array(self.texts, BASE_COLUMNS[TEXT]),
                           pa.array(self.domains, BASE_COLUMNS[DOMAIN]), {**self._extras(), **(extras or {})},
                           pa.array(self.reasons, pa.string()))
        self._reset()
        return table


def make_batch(ids: pa.Array, texts: pa.Array, domains: pa.Array, extras: dict, reasons: pa.Array) -> pa.Table:
    """What a reader yields: ``id``, ``text``, ``domain``, the extra fields, and the reject
    reason (``input/...``, null for a good row); the read seam adds the rest (module docstring)."""
    return pa.table({
        ID: ids.cast(BASE_COLUMNS[ID]),
        TEXT: texts.cast(BASE_COLUMNS[TEXT]),
        DOMAIN: domains.cast(BASE_COLUMNS[DOMAIN]),
        **extras,
        REJECT_REASON: reasons.cast(pa.string()),
    })


def field_str(value, default):
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def count(counters: dict, key: str, n: int = 1) -> None:
    counters[key] = counters.get(key, 0) + n


COMPRESSED = (".gz", ".zst", ".zstd")  # streams read whole, from start to end: no byte ranges


class Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from ``f`` (``n``), and stops at ``limit``
    bytes (None: at ``f``'s end): what a decompressor or a WARC parser consumed of a file.
    With a ``limit`` it is a seekable window of ``f`` from its current position."""

    def __init__(self, f, limit: int | None = None):
        self.f, self.n, self.limit = f, 0, limit
        self.base = f.tell() if limit is not None else 0  # a window of a seekable file starts here

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.limit is not None

    def tell(self) -> int:
        return self.n

    def seek(self, offset: int, whence: int = 0) -> int:
        if not self.seekable():
            raise io.UnsupportedOperation("seek")
        to = {0: offset, 1: self.n + offset, 2: self.limit + offset}[whence]
        self.n = max(0, min(to, self.limit))
        self.f.seek(self.base + self.n)
        return self.n

    def readinto(self, b) -> int:
        want = len(b) if self.limit is None else min(len(b), self.limit - self.n)
        data = self.f.read(want) if want > 0 else b""
        b[:len(data)] = data
        self.n += len(data)
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            data = self.f.read() if self.limit is None else self.f.read(max(self.limit - self.n, 0))
        else:
            want = size if self.limit is None else min(size, self.limit - self.n)
            data = self.f.read(want) if want > 0 else b""
        self.n += len(data)
        return data

    def close(self) -> None:  # the caller closes ``f`` (a reader may close its stream early)
        super().close()
