"""``OUT/report.html``: one self-contained page per run, from raw documents to training curves.

It reads what a run leaves behind and nothing else: ``stats.json`` and ``config.yaml``
(funnel, stage metrics, thresholds), ``kept/`` and ``rejected/`` Parquet (score columns,
language and domain mix, cluster sizes, token counts, sample rejects), the shards
manifest, and the training / DoReMi outputs (``metrics.jsonl``, ``weights.jsonl``). A
part that a run did not produce (no dsir stage, no training) is left out, never an error.

Figures are inline SVG written here, with no plotting library and no script: the page
opens offline, weighs tens of kilobytes, its labels are text that a browser can search
and a test can read, and every string from the data (document text, domain names)
goes through one escape (:func:`esc`). The Parquet files are read column by column and
batch by batch: histograms and counts are accumulated, never the corpus; the sample
rejects stop reading once every reason has its five documents.
"""

from __future__ import annotations

import html
import json
import math
import posixpath
import re
from collections import Counter, defaultdict

import numpy as np
import pyarrow.compute as pc
import yaml

from datacurate import storage

SAMPLES = 5  # documents shown per reject reason
SAMPLE_CHARS = 300  # characters shown per document
SCORES = {  # column -> (stage, title)
    "lang_score": ("langid", "langid: top-1 language probability"),
    "quality_score": ("quality", "quality: P(hq)"),
    "toxicity_score": ("toxicity", "toxicity: document score"),
}
KEPT, REJECTED = "#4c78a8", "#e45756"
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d", "#ff9da6",
           "#bab0ac"]


def esc(value) -> str:
    """The one escape for data in the page: text and attribute values alike."""
    return html.escape(str(value), quote=True)


# ----------------------------------------------------------------------------- reading


def _json(path: str):
    try:
        return json.loads(storage.read_text(path))
    except (OSError, ValueError):
        return None


def _jsonl(path: str) -> list[dict]:
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


def _stage_configs(config: dict | None) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for spec in (config or {}).get("stages") or []:
        if isinstance(spec, dict):
            for name, cfg in spec.items():
                out.setdefault(name, cfg or {})
        elif isinstance(spec, str):
            out.setdefault(spec, {})
    return out


def _thresholds(stages: dict[str, dict]) -> dict[str, tuple[float, str]]:
    """Score column -> (threshold, how it is applied), from the resolved config."""
    out = {}
    lid = stages.get("langid")
    if lid and lid.get("languages") is not None:
        out["lang_score"] = (lid.get("min_score", 0.65), "reject below")
    q = stages.get("quality")
    if q and q.get("mode", "threshold") == "threshold":
        out["quality_score"] = (q.get("min_score", 0.5), "reject below")
    clf = (stages.get("toxicity") or {}).get("classifier") or {}
    if "toxicity" in stages and clf.get("enabled", True):
        out["toxicity_score"] = (clf.get("max_score", 0.1), "reject above")
    return out


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


class Scan:
    """Counts and histograms over every kept and rejected row, one batch at a time."""

    COLUMNS = ["domain", "lang", "reject_stage", "cluster_size", "n_tokens", "dsir_log_weight", *SCORES]

    def __init__(self, out_dir: str, bins: int = 40):
        self.kept, self.rejected = _files(out_dir, "kept"), _files(out_dir, "rejected")
        edges = {c: np.linspace(0.0, 1.0, bins + 1) for c in SCORES}
        rng = _value_range(self.kept + self.rejected, "dsir_log_weight")
        if rng is not None:
            lo, hi = rng
            edges["dsir_log_weight"] = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
        self.edges = edges
        self.hist = {c: {"kept": np.zeros(bins, np.int64), "rejected": np.zeros(bins, np.int64)} for c in edges}
        self.domain = {"before": Counter(), "after": Counter()}
        self.lang = {"before": Counter(), "after": Counter()}
        self.cluster_rows: Counter = Counter()  # cluster_size -> rows
        self.tokens = {"kept": 0, "rejected": Counter()}  # rejected: by reject_stage
        self.has_tokens = False
        for path in self.kept + self.rejected:
            self._file(path, path in self.rejected)

    def _file(self, path: str, rejected: bool) -> None:
        pf = storage.parquet_file(path)
        cols = [c for c in self.COLUMNS if c in pf.schema_arrow.names]
        status = "rejected" if rejected else "kept"
        for batch in pf.iter_batches(batch_size=65_536, columns=cols):
            b = {c: batch.column(i) for i, c in enumerate(cols)}
            for name, counts in (("domain", self.domain), ("lang", self.lang)):
                if name in b:
                    vc = _counts(b[name])
                    counts["before"].update(vc)
                    if not rejected:
                        counts["after"].update(vc)
            for col, edges in self.edges.items():
                if col in b:
                    vals = b[col].drop_null().to_numpy(zero_copy_only=False).astype(np.float64)
                    vals = vals[np.isfinite(vals)]
                    self.hist[col][status] += np.histogram(np.clip(vals, edges[0], edges[-1]), edges)[0]
            if "cluster_size" in b:
                self.cluster_rows.update(_counts(b["cluster_size"]))
            if "n_tokens" in b and b["n_tokens"].null_count < len(b["n_tokens"]):
                self.has_tokens = True
                if rejected:
                    for stage, n in _sum_by(b["reject_stage"], b["n_tokens"]).items():
                        self.tokens["rejected"][stage] += n
                else:
                    self.tokens["kept"] += pc.sum(b["n_tokens"]).as_py() or 0


def _counts(arr) -> Counter:
    return Counter({v["values"].as_py(): v["counts"].as_py() for v in pc.value_counts(arr) if v["values"].is_valid})


def _sum_by(keys, values) -> dict:
    import pyarrow as pa

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


# ----------------------------------------------------------------------------- SVG


def _num(v: float) -> str:
    if isinstance(v, (int, np.integer)) or float(v).is_integer() and abs(v) >= 1:
        return f"{int(v):,}"
    return f"{v:.3g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _svg(w: int, h: int, body: str, title: str) -> str:
    return (f'<figure><figcaption>{esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" class="fig" '
            f'width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{esc(title)}</title>{body}</svg></figure>')


def _legend(names: list[str], colors: list[str], x: int, y: int) -> str:
    out = []
    for i, (name, c) in enumerate(zip(names, colors)):
        out.append(f'<rect x="{x}" y="{y + 16 * i}" width="10" height="10" fill="{c}"/>'
                   f'<text x="{x + 14}" y="{y + 16 * i + 9}">{esc(name)}</text>')
    return "".join(out)


def hbars(title: str, rows: list[tuple[str, list[float]]], series: list[str], stacked: bool = False,
          pct: bool = False, colors: list[str] | None = None) -> str:
    """Horizontal bars, one row per label: grouped (one bar per series) or stacked."""
    colors = colors or PALETTE
    label_w, bar_w, bar_h = 230, 380, 12
    per_row = bar_h if stacked else bar_h * len(series)
    top = 8 + (16 * len(series) if len(series) > 1 else 0)
    h = top + len(rows) * (per_row + 8) + 8
    vmax = max([sum(v) if stacked else max(v, default=0) for _, v in rows] + [1e-12])
    body = [_legend(series, colors, label_w, 4) if len(series) > 1 else ""]
    for r, (label, vals) in enumerate(rows):
        y = top + r * (per_row + 8)
        body.append(f'<text x="{label_w - 6}" y="{y + per_row / 2 + 4}" text-anchor="end">{esc(label)}</text>')
        x = label_w
        for s, v in enumerate(vals):
            w = bar_w * v / vmax
            by = y if stacked else y + s * bar_h
            body.append(f'<rect x="{x:.1f}" y="{by}" width="{w:.1f}" height="{bar_h - 1}" fill="{colors[s % len(colors)]}">'
                        f'<title>{esc(label)} / {esc(series[s])}: {_num(v)}{"%" if pct else ""}</title></rect>')
            if not stacked:
                body.append(f'<text x="{x + w + 4:.1f}" y="{by + bar_h - 2}" class="v">'
                            f'{_num(v)}{"%" if pct else ""}</text>')
            else:
                x += w
        if stacked:
            body.append(f'<text x="{x + 4:.1f}" y="{y + bar_h - 2}" class="v">{_num(sum(vals))}</text>')
    return _svg(label_w + bar_w + 90, h, "".join(body), title)


def histogram(title: str, edges: np.ndarray, counts: dict[str, np.ndarray], threshold: float | None = None,
              note: str = "", log_y: bool = False) -> str:
    """Stacked vertical bars over ``edges`` (kept below rejected), a dashed threshold line."""
    w, h, left, bottom, top = 620, 240, 56, 40, 24
    pw, ph = w - left - 16, h - top - bottom
    total = sum(counts.values())
    tr = (lambda c: math.log10(1 + c)) if log_y else (lambda c: c)
    vmax = max(tr(total.max()), 1e-12)
    lo, hi = float(edges[0]), float(edges[-1])
    sx = lambda v: left + pw * (v - lo) / (hi - lo)  # noqa: E731
    body = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" class="ax"/>']
    for t in _ticks(lo, hi, 6):
        body.append(f'<text x="{sx(t):.1f}" y="{top + ph + 14}" text-anchor="middle">{_num(round(t, 6))}</text>')
    body.append(f'<text x="4" y="{top - 8}">documents{" (log scale)" if log_y else ""}; max bin {_num(total.max())}'
                f'</text>')
    for i in range(len(edges) - 1):
        x0, x1, base = sx(edges[i]), sx(edges[i + 1]), 0
        for k, (name, c) in enumerate(counts.items()):
            if not c[i]:
                continue
            y0 = top + ph - ph * tr(base + c[i]) / vmax
            y1 = top + ph - ph * tr(base) / vmax
            body.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}" height="{y1 - y0:.1f}" '
                        f'fill="{(KEPT, REJECTED)[k % 2]}"><title>{esc(name)} {edges[i]:.3g}..{edges[i + 1]:.3g}: '
                        f'{c[i]:,}</title></rect>')
            base += c[i]
    if threshold is not None and lo <= threshold <= hi:
        x = sx(threshold)
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + ph}" class="thr"/>'
                    f'<text x="{x + 4:.1f}" y="{top + 8}" class="thrlabel">{esc(note)} {threshold:g}</text>')
    body.append(_legend(list(counts), [KEPT, REJECTED], w - 90, 4))
    return _svg(w, h, "".join(body), title)


def lines(title: str, series: dict[str, tuple[list, list]], xlabel: str, ylabel: str) -> str:
    """Line chart: {name: (xs, ys)}; None values are gaps."""
    w, h, left, bottom, top = 620, 260, 56, 40, 24
    pw, ph = w - left - 120, h - top - bottom
    pts = [(x, y) for xs, ys in series.values() for x, y in zip(xs, ys) if y is not None]
    if not pts:
        return ""
    xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
    ylo, yhi = min(p[1] for p in pts), max(p[1] for p in pts)
    xhi, yhi = (xhi if xhi > xlo else xlo + 1), (yhi if yhi > ylo else ylo + 1)
    sx = lambda v: left + pw * (v - xlo) / (xhi - xlo)  # noqa: E731
    sy = lambda v: top + ph - ph * (v - ylo) / (yhi - ylo)  # noqa: E731
    body = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" class="ax"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" class="ax"/>',
            f'<text x="{left + pw / 2}" y="{h - 6}" text-anchor="middle">{esc(xlabel)}</text>'
            f'<text x="4" y="{top - 8}">{esc(ylabel)}</text>']
    for t in _ticks(xlo, xhi, 6):
        body.append(f'<text x="{sx(t):.1f}" y="{top + ph + 14}" text-anchor="middle">{_num(t)}</text>')
    for t in _ticks(ylo, yhi, 5):
        body.append(f'<text x="{left - 4}" y="{sy(t) + 4:.1f}" text-anchor="end">{_num(round(t, 6))}</text>'
                    f'<line x1="{left}" y1="{sy(t):.1f}" x2="{left + pw}" y2="{sy(t):.1f}" class="grid"/>')
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(series))]
    for (name, (xs, ys)), c in zip(series.items(), colors):
        seg: list[str] = []
        segs = [seg]
        for x, y in zip(xs, ys):
            if y is None:
                seg = []
                segs.append(seg)
            else:
                seg.append(f"{sx(x):.1f},{sy(y):.1f}")
        for s in segs:
            if len(s) == 1:
                x, y = s[0].split(",")
                body.append(f'<circle cx="{x}" cy="{y}" r="2.5" fill="{c}"/>')
            elif s:
                body.append(f'<polyline points="{" ".join(s)}" fill="none" stroke="{c}" stroke-width="1.5">'
                            f'<title>{esc(name)}</title></polyline>')
    body.append(_legend(list(series), colors, left + pw + 10, top))
    return _svg(w, h, "".join(body), title)


# ----------------------------------------------------------------------------- sections


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(_num(c) if isinstance(c, (int, float)) else c)}</td>" for c in r)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _section(title: str, *parts: str) -> str:
    inner = "".join(p for p in parts if p)
    return f'<section><h2>{esc(title)}</h2>{inner}</section>' if inner else ""


def funnel_section(stats: dict, scan: Scan, manifest: dict | None) -> str:
    stages = stats.get("stages", {})
    t = stats.get("totals", {})
    docs = [(name, [st.get("kept", 0), st.get("rejected_total", 0)]) for name, st in stages.items()]
    parts = [f'<p>read {t.get("read", 0):,} = kept {t.get("kept", 0):,} + rejected {t.get("rejected", 0):,} '
             f'({"ok" if t.get("accounted") else "MISMATCH"}); {t.get("wall_seconds", 0):.1f} s wall</p>',
             hbars("documents kept and rejected by each stage", docs, ["kept", "rejected"], stacked=True,
                   colors=[KEPT, REJECTED])]
    order = list(stages)
    if scan.has_tokens and "tokenize" in order:
        remaining = scan.tokens["kept"] + sum(scan.tokens["rejected"].values())
        rows = [("tokenize", [remaining])]
        for name in order[order.index("tokenize") + 1:]:
            remaining -= scan.tokens["rejected"].get(name, 0)
            rows.append((name, [remaining]))
        tot = (manifest or {}).get("totals") or {}
        if "tokens_written" in tot:
            rows.append(("shards written", [tot["tokens_written"]]))
        parts.append("<h3>tokens</h3>" + hbars("tokens left after each stage", rows, ["tokens"]))
    return _section("Funnel", *parts)


def _sample_html(samples: list[tuple[str, str, str]]) -> str:
    items = []
    for id_, reason, text in samples:
        more = "…" if len(text) > SAMPLE_CHARS else ""
        items.append(f'<li><span class="id">{esc(id_)}</span> <span class="reason">{esc(reason)}</span>'
                     f'<div class="doc"><bdi>{esc(text[:SAMPLE_CHARS])}</bdi>{more}</div></li>')
    return f"<ol>{''.join(items)}</ol>"


def rejects_section(stats: dict, samples: dict) -> str:
    parts = []
    for name, st in stats.get("stages", {}).items():
        reasons = st.get("rejected") or {}
        if not reasons:
            continue
        parts.append(f"<h3>{esc(name)}: {st.get('rejected_total', 0):,} rejected</h3>")
        parts.append(hbars(f"{name}: rejects by reason", [(r, [c]) for r, c in reasons.items()], ["documents"],
                           colors=[REJECTED]))
        for reason, count in reasons.items():
            got = samples.get((name, reason), [])
            parts.append(f'<details><summary>{esc(reason)}: {count:,} documents, {len(got)} shown</summary>'
                         f'{_sample_html(got)}</details>')
    return _section("Rejects by stage and reason", *parts)


def scores_section(scan: Scan, stage_cfgs: dict, stats: dict) -> str:
    thr = _thresholds(stage_cfgs)
    parts = []
    for col, (_, title) in SCORES.items():
        h = scan.hist.get(col)
        if h is None or not (h["kept"].sum() + h["rejected"].sum()):
            continue
        t, how = thr.get(col, (None, ""))
        parts.append(histogram(title, scan.edges[col], h, t, how))
    h = scan.hist.get("dsir_log_weight")
    if h is not None and h["kept"].sum() + h["rejected"].sum():
        dsir = (stats.get("stages", {}).get("dsir") or {}).get("metrics") or {}
        key = dsir.get("threshold_key")
        parts.append(histogram("dsir: log importance weight per document", scan.edges["dsir_log_weight"], h,
                               log_y=True))
        if key is not None:
            parts.append(f"<p class=note>DSIR selects per unit (chunk), by the Gumbel key log w + G; the k-th "
                         f"key, the cut-off, was {key:.3f}. A document's weight sums its chunks, so no single "
                         f"threshold applies to this histogram.</p>")
    return _section("Scores (kept and rejected rows with a score)", *parts)


def _mix(title: str, counts: dict[str, Counter], top: int = 15) -> str:
    before, after = counts["before"], counts["after"]
    nb, na = max(sum(before.values()), 1), max(sum(after.values()), 1)
    names = [k for k, _ in before.most_common(top)]
    rows = [(k, [100 * before[k] / nb, 100 * after[k] / na]) for k in names]
    rest = len(before) - len(names)
    if rest > 0:
        rows.append((f"{rest} more", [100 * sum(before[k] for k in before if k not in names) / nb,
                                      100 * sum(after[k] for k in after if k not in names) / na]))
    return hbars(title, rows, [f"before ({nb:,} docs)", f"after ({sum(after.values()):,} kept)"], pct=True,
                 colors=["#bab0ac", KEPT])


def mix_section(scan: Scan) -> str:
    parts = []
    if scan.lang["before"]:
        parts.append("<h3>language (documents langid saw)</h3>" + _mix("language mix", scan.lang))
    if scan.domain["before"]:
        parts.append("<h3>domain (all documents read)</h3>" + _mix("domain mix", scan.domain))
    return _section("Language and domain mix, before and after (% of documents)", *parts)


def dedup_section(scan: Scan, stats: dict) -> str:
    if not scan.cluster_rows:
        return ""
    rows = [(f"size {s}", [r // s]) for s, r in sorted(scan.cluster_rows.items())]
    m = (stats.get("stages", {}).get("near_dedup") or {}).get("metrics") or {}
    keys = ["threshold", "bands", "rows", "candidate_pairs", "verified_pairs", "clustered_documents", "duplicates"]
    return _section("Near-dedup clusters", hbars("near-dedup clusters by size", rows, ["clusters"]),
                    _table(["metric", "value"], [[k, m[k]] for k in keys if k in m]))


def pii_section(stats: dict) -> str:
    m = ((stats.get("stages", {}).get("pii") or {}).get("metrics") or {}).get("pii") or {}
    if not m:
        return ""
    rows = [[kind, v.get("matches", 0), v.get("docs", 0)] for kind, v in m.items()]
    return _section("PII redacted (in the documents the pii stage saw)",
                    hbars("pii: matches replaced, by kind", [(k, [n]) for k, n, _ in rows], ["matches"]),
                    _table(["kind", "matches replaced", "documents"], rows))


def dsir_section(stats: dict) -> str:
    m = (stats.get("stages", {}).get("dsir") or {}).get("metrics") or {}
    if "kl_target_raw" not in m:
        return ""
    kl = [("raw pool", [m["kl_target_raw"]]), ("selected", [m["kl_target_selected"]]),
          ("random selection", [m.get("kl_target_random", 0.0)])]
    parts = [hbars("KL divergence from the target (lower is closer)", kl, ["KL (nats)"]),
             f'<p>KL reduction {m.get("kl_reduction", 0):.4f} (a random selection of the same size: '
             f'{m.get("kl_reduction_random", 0):.4f})</p>']
    doms = m.get("domains") or {}
    if doms:
        parts.append(hbars("share of each domain's units selected", [(d, [100 * v.get("fraction", 0)])
                                                                    for d, v in doms.items()], ["selected"], pct=True))
    return _section("DSIR", *parts)


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


def shards_section(shards_dir: str | None, manifest: dict | None) -> str:
    if not manifest:
        return ""
    try:
        counts = shard_counts(shards_dir, manifest)
    except OSError:  # a moved or partial shard set: fall back to the manifest's per-domain counts
        counts = defaultdict(Counter)
        for d, v in (manifest.get("per_domain") or {}).items():
            for L, n in (v.get("sequences_in_buckets") or {}).items():
                counts[int(L)][d] += n * int(L)
    domains = sorted({d for c in counts.values() for d in c})
    rows = [(f"{L} tokens", [counts[L][d] for d in domains]) for L in sorted(counts)]
    tot = manifest.get("totals") or {}
    note = (f"<p>{tot.get('sequences_written', 0):,} sequences, {tot.get('tokens_written', 0):,} tokens written; "
            f"{tot.get('tokens_dropped', 0):,} tokens dropped (tails below the smallest bucket); mixture "
            f"{esc((manifest.get('mixture') or {}).get('source', 'natural'))}</p>")
    return _section("Token shards: buckets by domain (tokens)",
                    hbars("tokens per bucket and domain", rows, domains, stacked=True), note)


def _curve(recs: list[dict], key: str) -> tuple[list, list]:
    recs = [r for r in recs if key in r]
    return [r["step"] for r in recs], [r[key] for r in recs]


def train_section(title: str, d: str) -> str:
    recs = _jsonl(storage.join(d, "metrics.jsonl"))
    if not recs:
        return ""
    evals = [r for r in recs if "eval_loss" in r]
    doms = sorted({k for r in evals for k in r["eval_loss"]})
    parts = [lines(f"{title}: training loss", {"train loss": _curve(recs, "loss")}, "step", "loss")]
    if evals:
        parts.append(lines(f"{title}: eval loss per domain",
                           {k: ([r["step"] for r in evals], [r["eval_loss"].get(k) for r in evals]) for k in doms},
                           "step", "held-out loss"))
        last = evals[-1]["eval_loss"]
        parts.append(_table(["domain", f"eval loss at step {evals[-1]['step']}"], [[k, last[k]] for k in doms]))
    parts.append(lines(f"{title}: throughput", {"tokens/s": _curve(recs, "tokens_per_s")}, "step", "tokens/s"))
    steps, mfu = _curve(recs, "mfu")
    if any(v is not None for v in mfu):
        parts.append(lines(f"{title}: MFU", {"MFU %": (steps, [None if v is None else 100 * v for v in mfu])},
                           "step", "MFU (%)"))
    else:
        parts.append("<p class=note>MFU not measured (no known accelerator peak, e.g. on CPU).</p>")
    return _section(title, *parts)


def doremi_section(d: str) -> str:
    parts = []
    files = storage.walk_files(d)
    rel = {f: f[len(storage.abspath(d)) + 1:] for f in files}
    weight_files = [f for f in files if re.fullmatch(r"(round-[^/]*/)?weights\.jsonl", rel[f])]
    for path in weight_files:
        recs = _jsonl(path)
        doms = sorted({k for r in recs for k in r.get("alpha", {})})
        where = posixpath.dirname(rel[path]) or "."
        label = "" if where == "." else f" ({where})"
        parts.append(lines(f"DoReMi domain weights{label}",
                           {k: _curve([{"step": r["step"], "w": r["alpha"].get(k)} for r in recs], "w") for k in doms},
                           "proxy step", "domain weight (alpha)"))
    final = _json(storage.join(d, "domain_weights.json"))
    if isinstance(final, dict) and final:
        parts.append(hbars("DoReMi final domain weights (average over proxy steps)",
                           [(k, [v]) for k, v in final.items()], ["weight"]))
    for sub in sorted(f for f in files if rel[f].endswith("metrics.jsonl") and rel[f] != "metrics.jsonl"):
        parts.append(train_section(f"DoReMi {posixpath.dirname(rel[sub])}", posixpath.dirname(sub)))
    return _section("DoReMi", *parts)


def _pm(e: dict) -> str:
    lo, hi = e["ci"]
    return f"{e['mean']:.4f}" if lo is None else f"{e['mean']:.4f} ± {(hi - lo) / 2:.4f}"


def _interval(e: dict, signed: bool = False) -> str:
    lo, hi = e["ci"]
    return "n/a" if lo is None else (f"[{lo:+.4f}, {hi:+.4f}]" if signed else f"[{lo:.4f}, {hi:.4f}]")


def ablation_section(out_dir: str, summary: dict) -> str:
    """``datacurate ablate``'s results: per eval set and arm the mean ± the half-width of
    the 95 % interval over seeds, the paired difference to the baseline with its interval,
    data kept and epochs; the training loss of every arm (mean over seeds) on one plot."""
    base, parts = summary["baseline"], []
    tok = summary.get("tokenizer") or {}
    parts.append(f"<p class=note>Baseline: {esc(base)}. Seeds {esc(summary['seeds'])}; "
                 f"{esc(summary['interval'])}. Text losses in nats per token with "
                 + (f"one tokenizer for all arms ({esc(tok.get('path'))})" if tok.get("mode") == "fixed"
                    else "each arm's own tokenizer") + ".</p>")
    for name, unit in summary["units"].items():
        low = summary["lower_is_better"][name]
        rows = []
        for arm, a in summary["arms"].items():
            e, d = a["eval"][name], summary["diffs"].get(arm, {}).get(name)
            verdict = ("baseline" if d is None else ("better" if d["better"] else "worse") + ", outside seed noise"
                       if d["distinguishable"] else "within seed noise")
            rows.append([arm, _pm(e), _interval(e), "—" if d is None else f"{d['mean']:+.4f}",
                         "—" if d is None else _interval(d, signed=True), verdict, a["kept_tokens"],
                         a.get("kept_docs") if a.get("kept_docs") is not None else "—", round(a["epochs"], 3)])
        parts.append(f"<h3>{esc(name)} ({esc(unit)}, {'lower' if low else 'higher'} is better)</h3>")
        parts.append(_table(["arm", "mean ± CI half-width", "95% CI", f"diff vs {base}", "diff 95% CI (paired)",
                             "verdict", "kept tokens", "kept docs", "epochs"], rows))
    curves = {}
    for arm in summary["arms"]:
        per_seed = [_jsonl(storage.join(out_dir, arm, f"seed-{k}", "metrics.jsonl")) for k in summary["seeds"]]
        by_step: dict = defaultdict(list)
        for recs in per_seed:
            for r in recs:
                if "loss" in r:
                    by_step[r["tokens"]].append(r["loss"])
        xs = sorted(by_step)
        curves[arm] = (xs, [sum(by_step[x]) / len(by_step[x]) for x in xs])
    parts.append(lines("training loss of every arm (mean over seeds; each on its own data)", curves,
                       "training tokens", "loss (nats/token)"))
    links = "".join(f'<li><a href="{esc(a["curated"])}/report.html">{esc(arm)}</a></li>'
                    for arm, a in summary["arms"].items() if a.get("curated"))
    parts.append(f"<p class=note>Each arm's curation report:</p><ul>{links}</ul>")
    return _section("Ablation", *parts)


def write_ablation_report(out_dir: str, path: str | None = None) -> str:
    """``OUT/report.html`` of a ``datacurate ablate`` output (from its ``ablation.json``)."""
    summary = _json(storage.join(out_dir, "ablation.json"))
    if not isinstance(summary, dict) or "arms" not in summary:
        raise ValueError(f"{out_dir}: no ablation.json")
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>datacurate ablation: {esc(storage.abspath(out_dir))}</title><style>{CSS}</style></head><body>'
            f'<h1>datacurate ablation report</h1><p class=note>{esc(storage.abspath(out_dir))}</p>'
            + ablation_section(out_dir, summary) + "</body></html>")
    path = path or storage.join(out_dir, "report.html")
    storage.write_bytes(path, page.encode("utf-8", errors="replace"))
    return path


CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:16px 0 4px}svg.fig{display:block;margin:8px 0}svg text{font:11px sans-serif;fill:#333}
svg text.v{fill:#555}.ax{stroke:#888}.grid{stroke:#eee}.thr{stroke:#111;stroke-dasharray:4 3}
figure{margin:12px 0}figcaption{font-weight:600;font-size:13px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.doc{white-space:pre-wrap;unicode-bidi:isolate;font:12px monospace;background:#f6f6f6;padding:4px;margin:2px 0 8px}
.id{font-family:monospace;color:#555}.reason{color:#b22}.note{color:#555;font-size:13px}summary{cursor:pointer}"""

def write_report(out_dir: str, train_dir: str | None = None, path: str | None = None) -> str:
    """Write the run report of ``out_dir`` (default ``out_dir/report.html``); return its path."""
    stats = _json(storage.join(out_dir, "stats.json")) or {}
    try:
        config = yaml.safe_load(storage.read_text(storage.join(out_dir, "config.yaml"))) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    stage_cfgs = _stage_configs(config)
    scan = Scan(out_dir)
    shards_dir = (stage_cfgs.get("decompose") or {}).get("output") or storage.join(out_dir, "shards")
    if not storage.isfile(storage.join(shards_dir, "manifest.json")):
        shards_dir = storage.join(out_dir, "shards")
    manifest = _json(storage.join(shards_dir, "manifest.json"))
    wanted = {s: st.get("rejected") or {} for s, st in stats.get("stages", {}).items()}
    samples = sample_rejects(out_dir, wanted)
    models = find_training(out_dir, config, train_dir)
    sections = [funnel_section(stats, scan, manifest), rejects_section(stats, samples),
                scores_section(scan, stage_cfgs, stats), pii_section(stats), mix_section(scan),
                dedup_section(scan, stats), dsir_section(stats), shards_section(shards_dir, manifest)]
    if "train" in models:
        sections.append(train_section("Training", models["train"]))
    if "doremi" in models:
        sections.append(doremi_section(models["doremi"]))
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>datacurate report: {esc(storage.abspath(out_dir))}</title><style>{CSS}</style></head><body>'
            f'<h1>datacurate run report</h1><p class=note>{esc(storage.abspath(out_dir))}</p>'
            + "".join(sections) + "</body></html>")
    path = path or storage.join(out_dir, "report.html")
    storage.write_bytes(path, page.encode("utf-8", errors="replace"))
    return path
