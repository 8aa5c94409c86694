"""The report's counts, made where the rows are processed: each map task profiles the rows
it writes to ``kept/`` and ``rejected/`` (:func:`profile`), the engine sums the tasks'
profiles into ``stats.json`` (``profile``), and the report reads that instead of pulling
every row's text (HTML included) to the driver. For a run whose ``stats.json`` has none
(an earlier version's), :class:`datacurate.report.scan.Scan` profiles the Parquet parts
the same way, batch by batch.

``profile[column][value][stage]`` (stage: the reject stage, ``kept`` for kept rows) holds
``docs``; ``tokens`` (the ``n_tokens`` of the rows that have it) and, of the rows without,
``unknown`` (how many) and their UTF-8 ``bytes`` of extracted text and ``raw`` bytes (rows
whose text is still the input payload: rejected by the reader, by the stage that rewrites
the text — ``extract`` — or by one before it). The columns: ``domain``, ``host`` (the
registered domain of the ``url``, :mod:`datacurate.text.urls`), ``http_status`` and the
columns stages count (the language). ``profile["_rates"]``: the tokens and bytes of the
tokenized rows (tokens per byte) and the payload and extracted bytes of the rows the
rewriting stage kept (extracted bytes per payload byte), so that the tokens of a document
rejected before tokenization are estimated from its extracted text, never from its HTML.

A task's statistics keep its :data:`TOP_HOSTS` largest hosts and sum the rest under
:data:`OTHER` (:func:`trim`, at the end of the task: what a task keeps depends on its rows
only, never on batch size, worker count or a resume); the run's sum is trimmed the same
way. A host large in the run is large in the tasks that read it, so the table's top hosts
are exact unless a host's pages are spread thinly over very many large tasks; the driver
holds at most TOP_HOSTS hosts a task.

Cost (one core): ~18 ms of CPU a 10,000-row batch of 49 MB of pages with 2,000 hosts
(~560k rows/s; the host names go through Python once per distinct host), against the
~50-700 pages/s a core extracts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.schema import DOMAIN, N_TOKENS, REJECT_STAGE, TEXT
from datacurate.text import urls

KEPT = "kept"
NONE = "(none)"  # a row without a value (a column set by a stage it never reached)
OTHER = "(other hosts)"
HOST, STATUS = "host", "http_status"
TOP_HOSTS = 1000
FIELDS = ("docs", "tokens", "unknown", "bytes", "raw")


def _values(table: pa.Table, col: str) -> pa.Array | None:
    if col == HOST:
        typ = table.schema.field("url").type if "url" in table.column_names else None
        if typ is None or not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
            return None
        return pc.fill_null(urls.registered_domains(urls.hosts(table.column("url"))), NONE)
    if col not in table.column_names:
        return None
    v = table.column(col)
    v = v.cast(pa.string()) if not pa.types.is_string(v.type) else v
    return pc.fill_null(v, NONE)


def profile(table: pa.Table, raw_stages=(), counted=()) -> dict:
    """The profile (module docstring) of ``table``'s rows, final ones: rejected rows carry
    their ``reject_stage``, the others count as kept. ``raw_stages``: the stages whose rejects
    still hold the input payload as their text."""
    n = table.num_rows
    if n == 0:
        return {}
    names = table.column_names
    stage = pc.fill_null(table.column(REJECT_STAGE).cast(pa.string()), KEPT) if REJECT_STAGE in names else \
        pa.array([KEPT] * n, pa.string())
    ntok = table.column(N_TOKENS).cast(pa.int64()) if N_TOKENS in names else pa.nulls(n, pa.int64())
    size = pc.fill_null(pc.binary_length(table.column(TEXT).cast(pa.large_binary())), 0).cast(pa.int64()) \
        if TEXT in names else pa.array(np.zeros(n, np.int64))
    known = pc.is_valid(ntok)
    raw = pc.is_in(stage, pa.array(list(raw_stages), pa.string())) if raw_stages else pa.array(np.zeros(n, bool))
    unknown = pc.invert(known)
    cols = {"s": stage, "docs": pa.array(np.ones(n, np.int64)), "tokens": pc.fill_null(ntok, 0),
            "unknown": unknown.cast(pa.int64()), "bytes": pc.if_else(pc.and_(unknown, pc.invert(raw)), size, 0),
            "raw": pc.if_else(pc.and_(unknown, raw), size, 0)}
    out: dict = {"_rates": _rates(table, stage, known, ntok, size, raw, bool(raw_stages))}
    for col in (DOMAIN, HOST, STATUS, *counted):
        v = _values(table, col)
        if v is None:
            continue
        t = pa.table({**cols, "v": v}).group_by(["v", "s"]).aggregate([(k, "sum") for k in FIELDS])
        acc: dict = {}
        for row in t.to_pylist():
            acc.setdefault(row["v"], {})[row["s"]] = {k: row[f"{k}_sum"] for k in FIELDS}
        out[col] = acc
    return out


def _rates(table, stage, known, ntok, size, raw, rewritten: bool) -> dict:
    """Tokens per byte of the tokenized rows; payload bytes -> extracted bytes of the rows the
    rewriting stage kept (``html_bytes``: what it read)."""
    out = {"tokens": pc.sum(ntok).as_py() or 0, "token_bytes": pc.sum(pc.if_else(known, size, 0)).as_py() or 0}
    if rewritten and "html_bytes" in table.column_names:
        done = pc.and_(pc.is_valid(table.column("html_bytes")), pc.invert(raw))
        out["payload_bytes"] = pc.sum(pc.if_else(done, table.column("html_bytes").cast(pa.int64()), 0)).as_py() or 0
        out["text_bytes"] = pc.sum(pc.if_else(done, size, 0)).as_py() or 0
    return out


def docs(by_stage: dict) -> int:
    return sum(c["docs"] for c in by_stage.values())


def trim(acc: dict, top: int = TOP_HOSTS) -> dict:
    """The ``top`` values with the most documents; the rest summed under :data:`OTHER`."""
    if len(acc) <= top:
        return acc
    ranked = sorted(acc, key=lambda v: (v == OTHER, -docs(acc[v]), v))
    out = {v: acc[v] for v in ranked[:top]}
    other: dict = {}
    for v in ranked[top:]:
        for s, c in acc[v].items():
            mine = other.setdefault(s, dict.fromkeys(FIELDS, 0))
            for k in FIELDS:
                mine[k] += c.get(k, 0)
    out[OTHER] = other
    return out


class Rates:
    """Token estimates from a profile's ``_rates``."""

    def __init__(self, rates: dict):
        r = rates or {}
        self.tokens_per_byte = r.get("tokens", 0) / r["token_bytes"] if r.get("token_bytes") else 0.0
        self.text_per_payload = r.get("text_bytes", 0) / r["payload_bytes"] if r.get("payload_bytes") else 1.0
        self.has_tokens = bool(r.get("tokens"))

    def tokens(self, c: dict) -> tuple[int, bool]:
        """Tokens of a profile cell, and whether estimated: the rows without ``n_tokens`` at
        the run's tokens per byte of extracted text (a payload's bytes first scaled to the
        extracted text they would give)."""
        if not c.get("unknown"):
            return int(c.get("tokens", 0)), False
        text = c.get("bytes", 0) + c.get("raw", 0) * self.text_per_payload
        return int(c.get("tokens", 0)) + round(text * self.tokens_per_byte), True
