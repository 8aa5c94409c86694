"""The report's data: what a run left behind (``stats.json``, ``config.yaml``, JSONL logs,
the shard manifest) and one scan over ``kept/`` and ``rejected/`` Parquet. The files are
read column by column and batch by batch: histograms and counts are accumulated, never
the corpus; the sample rejects stop reading once every reason has its five documents."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate import storage
from datacurate.schema import DOMAIN, N_TOKENS, REJECT_STAGE, TEXT
from datacurate.stages.base import value_counts

SAMPLES = 5  # documents shown per reject reason
SAMPLE_CHARS = 300  # characters shown per document


def read_json(path: str):
    try:
        return json.loads(storage.read_text(path))
    except (OSError, ValueError):
        return None


def read_jsonl(path: str) -> list[dict]:
    """The records of a JSONL log; a line cut short by a crash is skipped."""
    out = []
    try:
        text = storage.read_text(path)
    except (OSError, UnicodeDecodeError):
        return out
    for ln in text.splitlines():
        try:
            rec = json.loads(ln)
        except ValueError:
            continue
        if isinstance(rec, dict) and "step" in rec:
            out.append(rec)
    return out


def _files(out_dir: str, part: str) -> list[str]:
    return storage.list_files(storage.join(out_dir, part), ".parquet")


def _value_range(files: list[str], col: str) -> tuple[float, float] | None:
    """Min and max of a column from the row-group statistics (a read of the column where absent)."""
    lo, hi = math.inf, -math.inf
    for path in files:
        pf = storage.parquet_file(path)
        if col not in pf.schema_arrow.names:
            continue
        idx = pf.schema_arrow.names.index(col)
        for rg in range(pf.metadata.num_row_groups):
            chunk = pf.metadata.row_group(rg).column(idx)
            st = chunk.statistics
            if st is not None and st.null_count == chunk.num_values:
                continue
            if st is None or not st.has_min_max:
                mm = pc.min_max(pf.read_row_group(rg, columns=[col]).column(0)).as_py()
                if mm["min"] is None:
                    continue
                st_min, st_max = mm["min"], mm["max"]
            else:
                st_min, st_max = st.min, st.max
            lo, hi = min(lo, st_min), max(hi, st_max)
    return (lo, hi) if lo <= hi else None


KEPT, HERE, LATER = "kept", "here", "later"  # a score histogram's series (see :class:`Scan`)


class Scan:
    """Counts and histograms over every kept and rejected row, one batch at a time.

    * ``hist[col]``: the histogram of each score column (``scores``: column -> histogram
      range, None: the data's) in three series: ``kept``, ``here`` (rejected by the stage
      that owns the column, ``owners[col]``) and ``later`` (rejected by another stage: one
      that ran after it, as rows a stage rejects never reach the stages after it).
    * ``counts[col]``: counts by value of the domain and the ``counted`` columns (before:
      every row, after: the kept ones).
    * ``removed[col]`` for the domain and the ``by`` columns: {(reject stage or None for
      kept, value): [documents, tokens, unknown, unknown bytes]}: the ``n_tokens`` of the
      rows that have it, and the count and UTF-8 bytes of those that do not (rows rejected
      before tokenization), which :meth:`tokens` turns into an estimate.
    * ``tokens``: kept and rejected (by reject stage).
    """

    def __init__(self, out_dir: str, scores: dict | None = None, counted=(), bins: int = 40,
                 owners: dict | None = None, by=()):
        self.kept, self.rejected = _files(out_dir, "kept"), _files(out_dir, "rejected")
        self.edges, self.owners = {}, owners or {}
        for col, bounds in (scores or {}).items():
            lo, hi = bounds or _value_range(self.kept + self.rejected, col) or (None, None)
            if lo is not None:
                self.edges[col] = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
        self.hist = {c: {k: np.zeros(bins, np.int64) for k in (KEPT, HERE, LATER)} for c in self.edges}
        self.counts = {c: {"before": Counter(), "after": Counter()} for c in (DOMAIN, *counted)}
        self.removed = {c: defaultdict(lambda: np.zeros(4, np.int64)) for c in (DOMAIN, *by)}
        self.tokens = {"kept": 0, "rejected": Counter()}  # rejected: by reject_stage
        self.has_tokens = False
        self.token_bytes = np.zeros(2, np.int64)  # tokens and UTF-8 bytes of the rows with n_tokens
        self.columns = list(dict.fromkeys([REJECT_STAGE, N_TOKENS, TEXT, *self.counts, *self.removed, *self.edges]))
        for path in self.kept + self.rejected:
            self._file(path, path in self.rejected)

    def _file(self, path: str, rejected: bool) -> None:
        pf = storage.parquet_file(path)
        cols = [c for c in self.columns if c in pf.schema_arrow.names]
        for batch in pf.iter_batches(batch_size=65_536, columns=cols):
            b = {c: batch.column(i) for i, c in enumerate(cols)}
            stage = b.get(REJECT_STAGE) if rejected else None
            for name, counts in self.counts.items():
                if name in b:
                    vc = value_counts(b[name])
                    counts["before"].update(vc)
                    if not rejected:
                        counts["after"].update(vc)
            for col, edges in self.edges.items():
                if col in b:
                    self._hist(col, edges, b[col], stage)
            self._removed(b, stage, batch.num_rows)
            if N_TOKENS in b and b[N_TOKENS].null_count < len(b[N_TOKENS]):
                self.has_tokens = True
                if rejected:
                    for st, n in _sum_by(b[REJECT_STAGE], b[N_TOKENS]).items():
                        self.tokens["rejected"][st] += n
                else:
                    self.tokens["kept"] += pc.sum(b[N_TOKENS]).as_py() or 0

    def _hist(self, col: str, edges: np.ndarray, values, stage) -> None:
        vals = pc.fill_null(values.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)  # nulls: NaN
        ok = np.isfinite(vals)
        if stage is None:
            series = {KEPT: ok}
        else:
            here = np.asarray(pc.fill_null(pc.equal(stage, self.owners.get(col, "")), False))
            series = {HERE: ok & here, LATER: ok & ~here}
        for key, mask in series.items():
            self.hist[col][key] += np.histogram(np.clip(vals[mask], edges[0], edges[-1]), edges)[0]

    def _removed(self, b: dict, stage, n: int) -> None:
        """Documents, tokens and bytes of tokens unknown, by (reject stage, value) of each ``removed`` column."""
        if not self.removed:
            return
        ntok = b.get(N_TOKENS, pa.nulls(n, pa.int64()))
        size = pc.fill_null(pc.binary_length(b[TEXT]), 0) if TEXT in b else pa.array(np.zeros(n, np.int64))
        known = pc.is_valid(ntok)
        self.token_bytes += [pc.sum(ntok).as_py() or 0, pc.sum(pc.if_else(known, size, 0)).as_py() or 0]
        cols = {"s": stage if stage is not None else pa.nulls(n, pa.string()), "d": pa.array(np.ones(n, np.int64)),
                "t": pc.fill_null(ntok, 0), "u": pc.cast(pc.invert(known), pa.int64()), "b": pc.if_else(known, 0, size)}
        for col, acc in self.removed.items():
            v = b.get(col, pa.nulls(n, pa.string()))
            t = pa.table({**cols, "v": v}).group_by(["s", "v"]).aggregate([(k, "sum") for k in "dtub"])
            for row in t.to_pylist():
                acc[(row["s"], row["v"])] += [row["d_sum"], row["t_sum"], row["u_sum"], row["b_sum"]]

    @property
    def tokens_per_byte(self) -> float:
        """Of the rows with ``n_tokens``: their tokens per UTF-8 byte of text."""
        return self.token_bytes[0] / self.token_bytes[1] if self.token_bytes[1] else 0.0

    def tokens_of(self, counts) -> tuple[int, bool]:
        """Tokens of a ``removed`` entry, and whether they are estimated: the rows without
        ``n_tokens`` count their bytes at :attr:`tokens_per_byte`."""
        docs, tokens, unknown, size = (int(x) for x in counts)
        if not unknown:
            return tokens, False
        return tokens + round(size * self.tokens_per_byte), True


def _sum_by(keys, values) -> dict:
    t = pa.table({"k": keys, "v": values}).group_by("k").aggregate([("v", "sum")])
    return {k: v or 0 for k, v in zip(t.column("k").to_pylist(), t.column("v_sum").to_pylist())}


def sample_rejects(out_dir: str, wanted: dict[str, dict[str, int]] | None = None,
                   n: int = SAMPLES) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """Up to ``n`` (id, full reason, text prefix) per (stage, rule) from ``rejected/``.

    Reads the reason columns of a row group first and its text only when it holds a
    sample still wanted; stops once every rule of ``wanted`` ({stage: {rule: count}},
    from stats.json) has its samples.
    """
    need = {(s, r): min(c, n) for s, rules in (wanted or {}).items() for r, c in rules.items() if c}
    out: dict[tuple[str, str], list] = defaultdict(list)

    def done() -> bool:
        return bool(need) and all(len(out[k]) >= v for k, v in need.items())

    for path in _files(out_dir, "rejected"):
        pf = storage.parquet_file(path)
        if not {"reject_stage", "reject_reason", "id", "text"} <= set(pf.schema_arrow.names):
            continue
        for rg in range(pf.metadata.num_row_groups):
            if done():
                return dict(out)
            rs = pf.read_row_group(rg, columns=["reject_stage", "reject_reason"])
            stages, reasons = rs.column(0).to_pylist(), rs.column(1).to_pylist()
            take, taking = [], Counter()
            for i, (stage, reason) in enumerate(zip(stages, reasons)):
                key = (stage, re.sub(r":.*$", "", reason or ""))
                if len(out[key]) + taking[key] < n:
                    take.append((i, key))
                    taking[key] += 1
            if not take:
                continue
            rows = pf.read_row_group(rg, columns=["id", "text"]).take([i for i, _ in take])
            texts = pc.utf8_slice_codeunits(rows.column("text").fill_null(""), 0, SAMPLE_CHARS + 1).to_pylist()
            for (i, key), id_, text in zip(take, rows.column("id").to_pylist(), texts):
                out[key].append((id_, reasons[i], text))
    return dict(out)


def find_training(out_dir: str, config: dict | None, train_dir: str | None) -> dict[str, str]:
    """{"train": dir, "doremi": dir} of the outputs that exist: ``--train DIR`` (either kind),
    the run's configured train/doremi outputs, else OUT/train and OUT/doremi."""
    found = {}
    for kind in ("train", "doremi"):
        section = (config or {}).get(kind) or {}
        for d in (section.get("output"), storage.join(out_dir, kind)):
            if d and storage.isdir(d) and kind not in found:
                found[kind] = d
    if train_dir:
        kind = "doremi" if [f for f in storage.walk_files(train_dir) if f.endswith("/weights.jsonl")] else "train"
        found[kind] = train_dir
    return found


def shard_counts(shards_dir: str, manifest: dict) -> dict[int, Counter]:
    """{bucket length: Counter(domain -> tokens)} from the per-sequence domain ids (uint16, small)."""
    domains = manifest.get("domains") or []
    out: dict[int, Counter] = {}
    for key, b in (manifest.get("buckets") or {}).items():
        L, c = int(b.get("seq_len", key)), Counter()
        for f in b.get("files") or []:
            ids = np.frombuffer(storage.read_bytes(storage.join(shards_dir, f["domains"])), dtype="<u2")
            for d, n in enumerate(np.bincount(ids, minlength=len(domains))):
                if n:
                    c[domains[d] if d < len(domains) else str(d)] += int(n) * L
        out[L] = c
    return out

