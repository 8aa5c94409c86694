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

from datacurate.formats import storage
from datacurate.core.dicts import merge
from datacurate.report import profile as pf
from datacurate.core.schema import DOMAIN, N_TOKENS, REJECT_STAGE, TEXT
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
    """What the report shows of the rows, from the run's profile and one scan of small columns.

    * ``profile``: stats.json's (:mod:`datacurate.report.profile`: documents, tokens and
      bytes by stage and by domain, host, HTTP status and the columns stages count with a
      heading); for a run without one (an earlier version's), made here from the parts
      batch by batch (their text then is read).
    * ``hist[col]``: the histogram of each score column (``scores``: column -> histogram
      range, None: the data's) in three series: ``kept``, ``here`` (rejected by the stage
      that owns the column, ``owners[col]``) and ``later`` (rejected by another stage: one
      that ran after it, as rows a stage rejects never reach the stages after it).
    * ``counts[col]``: counts by value (before: every row, after: the kept ones) of the
      domain and the ``counted`` columns (from the profile where it has them).
    * ``removed[col]``: the profile's {value: {stage: cell}} of the domain and the ``by`` columns.
    * ``tokens``: kept and rejected (by reject stage); ``rates``: the run's token estimates.
    """

    def __init__(self, out_dir: str, scores: dict | None = None, counted=(), bins: int = 40,
                 owners: dict | None = None, by=(), profile: dict | None = None, raw_stages=()):
        self.kept, self.rejected = _files(out_dir, "kept"), _files(out_dir, "rejected")
        self.edges, self.owners = {}, owners or {}
        for col, bounds in (scores or {}).items():
            lo, hi = bounds or _value_range(self.kept + self.rejected, col) or (None, None)
            if lo is not None:
                self.edges[col] = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
        self.hist = {c: {k: np.zeros(bins, np.int64) for k in (KEPT, HERE, LATER)} for c in self.edges}
        self.made = profile is None  # no profile in stats.json: made from the parts here
        self.profile = {} if profile is None else profile
        from_parts = [c for c in counted if c not in by]  # small columns the profile does not hold
        self.counts = {c: {"before": Counter(), "after": Counter()} for c in from_parts}
        self.columns = list(dict.fromkeys([REJECT_STAGE, *from_parts, *self.edges]))
        self.raw_stages, self.by = tuple(raw_stages), tuple(by)
        for path in self.kept + self.rejected:
            self._file(path, path in self.rejected)
        if self.made and pf.HOST in self.profile:
            self.profile[pf.HOST] = pf.trim(self.profile[pf.HOST])
        self.rates = pf.Rates(self.profile.get("_rates"))
        self.has_tokens = self.rates.has_tokens
        self.removed = {c: self.profile[c] for c in (DOMAIN, pf.HOST, *by) if self.profile.get(c)}
        for col in (DOMAIN, *by):
            got = self.profile.get(col) or {}
            self.counts[col] = {"before": Counter({v: pf.docs(st) for v, st in got.items()}),
                                "after": Counter({v: st[pf.KEPT]["docs"] for v, st in got.items() if pf.KEPT in st})}
        self.tokens = {"kept": 0, "rejected": Counter()}  # rejected: by reject_stage
        for st, c in _by_stage(self.profile.get(DOMAIN) or {}).items():
            if st == pf.KEPT:
                self.tokens["kept"] += c["tokens"]
            else:
                self.tokens["rejected"][st] += c["tokens"]

    def _file(self, path: str, rejected: bool) -> None:
        pfile = storage.parquet_file(path)
        names = pfile.schema_arrow.names
        cols = [c for c in self.columns if c in names]
        if self.made:  # what the profile reads
            cols += [c for c in (TEXT, N_TOKENS, DOMAIN, "url", pf.STATUS, "html_bytes", *self.by)
                     if c in names and c not in cols]
        if not cols:
            return
        for batch in pfile.iter_batches(batch_size=65_536, columns=cols):
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
            if self.made:
                t = pa.Table.from_batches([batch])
                if not rejected and REJECT_STAGE in t.column_names:
                    t = t.drop_columns([REJECT_STAGE])
                merge(self.profile, pf.profile(t, self.raw_stages, self.by))

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

    @property
    def tokens_per_byte(self) -> float:
        """Of the rows with ``n_tokens``: their tokens per UTF-8 byte of text."""
        return self.rates.tokens_per_byte


def _by_stage(acc: dict) -> dict:
    """{stage: cell} summed over the values of a profile column."""
    out: dict = {}
    for per_stage in acc.values():
        merge(out, per_stage)
    return out


SAMPLE_FIELDS = ("url", "content_type", "http_status")  # shown with a sample where the parts have them


def sample_rejects(out_dir: str, wanted: dict[str, dict[str, int]] | None = None,
                   n: int = SAMPLES) -> dict[tuple[str, str], list[dict]]:
    """Up to ``n`` samples per (stage, rule) from ``rejected/``: {"id", "reason", "text"
    (its first characters), and "url", "content_type", "http_status" where the input had them}.

    Reads the reason columns of a row group first and the rest only when it holds a
    sample still wanted; stops once every rule of ``wanted`` ({stage: {rule: count}},
    from stats.json) has its samples.
    """
    need = {(s, r): min(c, n) for s, rules in (wanted or {}).items() for r, c in rules.items() if c}
    out: dict[tuple[str, str], list] = defaultdict(list)

    def done() -> bool:
        return bool(need) and all(len(out[k]) >= v for k, v in need.items())

    for path in _files(out_dir, "rejected"):
        pfile = storage.parquet_file(path)
        names = pfile.schema_arrow.names
        if not {"reject_stage", "reject_reason", "id", "text"} <= set(names):
            continue
        extra = [c for c in SAMPLE_FIELDS if c in names]
        for rg in range(pfile.metadata.num_row_groups):
            if done():
                return dict(out)
            rs = pfile.read_row_group(rg, columns=["reject_stage", "reject_reason"])
            stages, reasons = rs.column(0).to_pylist(), rs.column(1).to_pylist()
            take, taking = [], Counter()
            for i, (stage, reason) in enumerate(zip(stages, reasons)):
                key = (stage, re.sub(r"^([^/]*/[^:]*):.*$", r"\1", reason or ""))  # as stats.json counts it
                if len(out[key]) + taking[key] < n:
                    take.append((i, key))
                    taking[key] += 1
            if not take:
                continue
            rows = pfile.read_row_group(rg, columns=["id", "text", *extra]).take([i for i, _ in take])
            texts = pc.utf8_slice_codeunits(rows.column("text").fill_null(""), 0, SAMPLE_CHARS + 1).to_pylist()
            more = {c: rows.column(c).to_pylist() for c in extra}
            for j, ((i, key), id_, text) in enumerate(zip(take, rows.column("id").to_pylist(), texts)):
                out[key].append({"id": id_, "reason": reasons[i], "text": text,
                                 **{c: v[j] for c, v in more.items() if v[j] is not None}})
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

