"""Extra input fields: every field of a record other than its text, id and domain is
carried through the stages into kept/ and rejected/ under its own name (or the name
``input.rename`` gives it), with the types the README's "Every other field is kept" gives:
Parquet's own, a JSONL field's native type while its values are all of one JSON kind,
else JSON text (one ``orjson.dumps`` per value; 5 and 5.5 are two kinds, so an integer
never turns into 5.0).

The same value always gives the same JSON text, whichever batch it came in, so the
outcome does not depend on how the input was cut into batches: each part is written
with the kinds of its own batch, and :func:`unify_plan` (end of curation, Parquet
footers only) finds the parts of kept/ and rejected/ that differ from the run's schema
(column order = first seen in input order; type = the common one, JSON text on any
disagreement; null columns where a part lacks a field), which :func:`conform` rewrites.

In a run a JSON-text column has Arrow's ``arrow.json`` extension type, so the kind
travels with the column through stages and intermediate parts. Output parts store it
as plain strings and list such columns in the schema metadata key
``datacurate.json_fields`` (a JSON list, ``[]`` when none).
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
from typing import TYPE_CHECKING, Iterable

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import storage
from datacurate.core.coerce import ConfigError
from datacurate.configs.input import InputConfig
from datacurate.core.schema import BASE_COLUMNS

if TYPE_CHECKING:
    import numpy as np

JSON = pa.json_(pa.string())
JSON_FIELDS_KEY = b"datacurate.json_fields"
RESERVED_REASON = "input/reserved_field"

_NATIVE = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


_dumps = functools.partial(orjson.dumps, default=str, option=orjson.OPT_NON_STR_KEYS)


def json_text(values: list, dumps=_dumps) -> pa.Array:
    """Python values -> a JSON-text column (null stays null). ``dumps``: plain
    ``orjson.dumps`` for values parsed from JSON (the same text, 30 % faster)."""
    text = pa.array(list(map(dumps, values)), pa.binary()).cast(pa.string())  # one C call per value
    text = pc.if_else(pc.equal(text, "null"), pa.scalar(None, pa.string()), text)  # only None dumps to null
    return pa.ExtensionArray.from_storage(JSON, text)


def to_json(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Any Arrow column as JSON text (the same text :func:`jsonl_column` gives its values)."""
    return col if col.type == JSON else json_text(col.to_pylist())


def jsonl_column(values: list) -> pa.Array:
    """One field of a JSONL batch (see the module docstring for the rule)."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds:
        return pa.nulls(len(values))
    if len(kinds) == 1:
        typ = _NATIVE.get(next(iter(kinds)))
        if typ is not None:
            try:
                return pa.array(values, typ)
            except (OverflowError, pa.ArrowInvalid):  # an integer past int64
                pass
    return json_text(values, orjson.dumps)


# ----------------------------------------------------------------------------- names


def check_rename(cfg: InputConfig) -> None:
    own = {cfg.text_field: "input.text_field", cfg.id_field: "input.id_field", cfg.domain_field: "input.domain_field"}
    targets: dict[str, str] = {}
    for old, new in cfg.rename.items():
        if old in own:
            raise ConfigError(f"input.rename: '{old}' is {own[old]}, not an extra field; it cannot be renamed")
        if not new:
            raise ConfigError(f"input.rename: '{old}' is renamed to an empty name")
        if new in targets:
            raise ConfigError(f"input.rename: '{targets[new]}' and '{old}' are both renamed to '{new}'")
        targets[new] = old


def taken(cfg: InputConfig, reserved: dict[str, str]) -> dict[str, str]:
    """Raw field names a record may not hold, each with why (one line's tail): those whose
    name (after ``input.rename``) is a column the run adds (``reserved``: name -> who adds
    it), and those named as another field is renamed."""
    own = {cfg.text_field, cfg.id_field, cfg.domain_field}
    out = {}
    for name, who in reserved.items():
        if name not in own and name not in cfg.rename:
            out[name] = (f"collides with the column '{name}' that {who}; rename it with "
                         f"input.rename: {{{name}: orig_{name.lstrip('_')}}}")
    for old, new in cfg.rename.items():
        if new in reserved:
            out[old] = (f"renamed to '{new}' by input.rename, collides with the column '{new}' that "
                        f"{reserved[new]}; choose another name")
        if new not in cfg.rename and new not in own:
            out[new] = f"is also the name input.rename gives '{old}'; choose another name"
    return out


def check_names(names: Iterable[str], bad: dict[str, str], source: str) -> None:
    """A one-line ConfigError for the first field of ``source`` (a file) in ``bad``."""
    for name in names:
        if name in bad:
            raise ConfigError(f"input: field '{name}' of {source} {bad[name]}")


def parquet_json_fields(schemas: list[pa.Schema], cfg: InputConfig) -> list[str]:
    """Fields (as renamed) whose type differs between Parquet inputs (null aside)."""
    own = {cfg.text_field, cfg.id_field, cfg.domain_field}
    types: dict[str, pa.DataType] = {}
    mixed = []
    for schema in schemas:
        for f in schema:
            name = cfg.rename.get(f.name, f.name)
            if f.name in own or pa.types.is_null(f.type):
                continue
            if types.setdefault(name, f.type) != f.type and name not in mixed:
                mixed.append(name)
    return mixed


# ----------------------------------------------------------------------------- output parts


def json_fields(schema: pa.Schema) -> list[str]:
    raw = (schema.metadata or {}).get(JSON_FIELDS_KEY)
    return json.loads(raw) if raw else []


def for_output(table: pa.Table) -> pa.Table:
    """JSON-text columns as plain strings, named in the schema metadata."""
    names = [f.name for f in table.schema if f.type == JSON]
    for name in names:
        i = table.schema.get_field_index(name)
        col = table.column(i)
        table = table.set_column(i, name, pa.chunked_array([c.storage for c in col.chunks], pa.string()))
    return table.replace_schema_metadata({JSON_FIELDS_KEY: json.dumps(names)})


def _input_order(path: str) -> tuple:
    """part-s<seg>-<task>-<row>.parquet -> (task, row, seg): the input order of its rows."""
    m = re.match(r"part-s(\d+)-(\d+)-(\d+)\.parquet$", posixpath.basename(path))
    return (int(m[2]), int(m[3]), int(m[1]), path) if m else (1 << 62, 0, 0, path)


def unify_plan(files: list[str], known: Iterable[str]) -> dict[str, pa.Schema]:
    """{part: the schema it must have} for the parts of ``files`` whose extra fields differ
    from the run's (order, type, presence); ``known``: the run's own columns."""
    known = set(known)
    schemas = {f: storage.parquet_file(f).schema_arrow for f in files}
    run: dict[str, pa.DataType] = {}  # field -> type (JSON for JSON text), in first-seen order
    for f in sorted(files, key=_input_order):
        js = set(json_fields(schemas[f]))
        for field in schemas[f]:
            if field.name in known:
                continue
            kind = JSON if field.name in js else field.type
            have = run.setdefault(field.name, kind)
            if pa.types.is_null(have):
                run[field.name] = kind
            elif not pa.types.is_null(kind) and kind != have:
                run[field.name] = JSON
    plan = {}
    for f, schema in schemas.items():
        base = [fl for fl in schema if fl.name in BASE_COLUMNS]
        rest = [fl for fl in schema if fl.name in known and fl.name not in BASE_COLUMNS]
        extras = [pa.field(n, pa.string() if t == JSON else t) for n, t in run.items()]
        target = pa.schema(base + extras + rest).with_metadata(
            {JSON_FIELDS_KEY: json.dumps([n for n, t in run.items() if t == JSON])})
        if not schema.equals(target, check_metadata=False) or json_fields(schema) != json_fields(target):
            plan[f] = target
    return plan


def conform(path: str, target: pa.Schema, compression: str = "zstd") -> None:
    """Rewrite one part (atomically) to ``target`` (from :func:`unify_plan`): missing
    fields as nulls, fields the run keeps as JSON text converted; idempotent."""
    table = storage.read_parquet(path)
    js, want = set(json_fields(table.schema)), set(json_fields(target))
    cols = []
    for f in target:
        if f.name not in table.column_names:
            cols.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if f.name in want and f.name not in js:
            col = to_json(col).storage
        cols.append(col.cast(f.type))
    storage.write_parquet(pa.Table.from_arrays(cols, schema=target), path, compression)


def string_values(col: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, "np.ndarray"]:
    """A user field as a stage that wants text reads it: (strings, not_a_string mask).

    A string column is itself. A JSON-text column (records that mixed kinds, e.g. a URL
    here and a number there) gives its JSON strings decoded and null elsewhere; its
    numbers, lists and objects, like every value of a non-string column, are flagged."""
    import numpy as np

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return col, np.zeros(len(col), dtype=bool)
    if col.type != JSON:
        return pa.nulls(len(col), pa.string()), np.asarray(pc.is_valid(col))
    text = col.storage
    is_str = pc.fill_null(pc.starts_with(text, '"'), False)
    values = [orjson.loads(t) if s else None for t, s in zip(text.to_pylist(), is_str.to_pylist())]
    return pa.array(values, pa.string()), np.asarray(pc.is_valid(text)) & ~np.asarray(is_str)
