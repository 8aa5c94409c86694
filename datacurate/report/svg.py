"""The report's drawing: inline SVG figures and HTML tables, with no plotting library and
no script, so the page opens offline, weighs tens of kilobytes, and its labels are text a
browser can search and a test can read. Every string from the data (document text,
domain names) goes through one escape, :func:`esc`."""

from __future__ import annotations

import html
import math

import numpy as np

KEPT, REJECTED, LATER = "#4c78a8", "#e45756", "#c9c2bd"  # LATER: rejected by another (a later) stage
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d", "#ff9da6",
           "#bab0ac"]


def esc(value) -> str:
    """The one escape for data in the page: text and attribute values alike."""
    return html.escape(str(value), quote=True)


def plural(n: int, word: str) -> str:
    """``1 document``, ``2 documents``."""
    return f"{_num(n)} {word}{'' if n == 1 else 's'}"


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


def _legend_row(names: list[str], colors: list[str], x: float, y: int) -> str:
    """A legend on one line (about 6 px per character of 11 px text)."""
    out = []
    for name, c in zip(names, colors):
        out.append(f'<rect x="{x:.0f}" y="{y}" width="10" height="10" fill="{c}"/>'
                   f'<text x="{x + 14:.0f}" y="{y + 9}">{esc(name)}</text>')
        x += 14 + 6 * len(name) + 16
    return "".join(out)


def hbars(title: str, rows: list[tuple[str, list[float]]], series: list[str], stacked: bool = False,
          pct: bool = False, colors: list[str] | None = None, ends: list[str] | None = None) -> str:
    """Horizontal bars, one row per label: grouped (one bar per series) or stacked. ``ends``:
    the text after each stacked row (default: its total)."""
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
            end = ends[r] if ends else _num(sum(vals))
            body.append(f'<text x="{x + 4:.1f}" y="{y + bar_h - 2}" class="v">{esc(end)}</text>')
    return _svg(label_w + bar_w + (250 if ends else 90), h, "".join(body), title)


def histogram(title: str, edges: np.ndarray, counts: dict[str, np.ndarray], threshold: float | None = None,
              note: str = "", log_y: bool = False, colors: list[str] | None = None, xlabel: str = "") -> str:
    """Stacked vertical bars over ``edges`` (the series of ``counts`` bottom up, a legend above
    the plot), a y axis of documents, a dashed threshold line."""
    colors = colors or [KEPT, REJECTED, LATER]
    w, h, left, bottom, top = 620, 262, 56, 40, 46
    pw, ph = w - left - 16, h - top - bottom
    total = sum(counts.values())
    tr = (lambda c: math.log10(1 + c)) if log_y else (lambda c: c)
    vmax = max(tr(total.max()), 1e-12)
    lo, hi = float(edges[0]), float(edges[-1])
    sx = lambda v: left + pw * (v - lo) / (hi - lo)  # noqa: E731
    sy = lambda c: top + ph - ph * tr(c) / vmax  # noqa: E731
    body = [_legend_row(list(counts), colors, left, 4),
            f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" class="ax"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" class="ax"/>',
            f'<text x="4" y="{top - 10}">documents{" (log scale)" if log_y else ""}</text>']
    if xlabel:
        body.append(f'<text x="{left + pw / 2}" y="{h - 6}" text-anchor="middle">{esc(xlabel)}</text>')
    for t in _ticks(lo, hi, 6):
        body.append(f'<text x="{sx(t):.1f}" y="{top + ph + 14}" text-anchor="middle">{_num(round(t, 6))}</text>')
    for t in _count_ticks(int(total.max()), log_y):
        body.append(f'<text x="{left - 4}" y="{sy(t) + 4:.1f}" text-anchor="end" class="yt">{_num(t)}</text>'
                    f'<line x1="{left}" y1="{sy(t):.1f}" x2="{left + pw}" y2="{sy(t):.1f}" class="grid"/>')
    for i in range(len(edges) - 1):
        x0, x1, base = sx(edges[i]), sx(edges[i + 1]), 0
        for k, (name, c) in enumerate(counts.items()):
            if not c[i]:
                continue
            y0, y1 = sy(base + c[i]), sy(base)
            body.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}" height="{y1 - y0:.1f}" '
                        f'fill="{colors[k % len(colors)]}"><title>{esc(name)} {edges[i]:.3g}..{edges[i + 1]:.3g}: '
                        f'{c[i]:,}</title></rect>')
            base += c[i]
    if threshold is not None and lo <= threshold <= hi:
        x = sx(threshold)
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + ph}" class="thr"/>'
                    f'<text x="{x + 4:.1f}" y="{top + 8}" class="thrlabel">{esc(note)} {threshold:g}</text>')
    return _svg(w, h, "".join(body), title)


def _count_ticks(vmax: int, log_y: bool) -> list[int]:
    """Whole-number ticks from 0 to ``vmax`` (powers of ten on a log scale)."""
    if log_y:
        return [0] + [10 ** k for k in range(int(math.log10(max(vmax, 1))) + 1)]
    return [int(t) for t in _ticks(0, max(vmax, 1), 5) if float(t).is_integer()]


def lines(title: str, series: dict[str, tuple[list, list]], xlabel: str, ylabel: str) -> str:
    """Line chart: {name: (xs, ys)}; None values are gaps."""
    legend_w = max([120] + [int(6.2 * len(n)) + 34 for n in series])
    w, h, left, bottom, top = 500 + legend_w, 260, 56, 40, 24
    pw, ph = w - left - legend_w, h - top - bottom
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


def table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(_num(c) if isinstance(c, (int, float)) else c)}</td>" for c in r)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def matrix(caption: str, corner: str, columns: list[str], rows: list[tuple[str, list[tuple[str, str, float]]]],
           cls: str = "matrix") -> str:
    """A table of labelled rows; each cell (number, second line, shade 0..1) shows the number
    over a smaller second line, its background shaded in the rejected colour by ``shade``."""
    head = f"<th>{esc(corner)}</th>" + "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for label, cells in rows:
        tds = []
        for main, sub, shade in cells:
            style = f' style="background:rgba(228,87,86,{min(max(shade, 0.0), 1.0) * 0.6:.2f})"' if shade else ""
            tds.append(f"<td{style}>{esc(main)}<small>{esc(sub)}</small></td>" if main else "<td class=zero>·</td>")
        body.append(f"<tr><th>{esc(label)}</th>{''.join(tds)}</tr>")
    return (f'<figure><figcaption>{esc(caption)}</figcaption><table class="{esc(cls)}"><tr>{head}</tr>'
            f"{''.join(body)}</table></figure>")


def section(title: str, *parts: str) -> str:
    inner = "".join(p for p in parts if p)
    return f'<section><h2>{esc(title)}</h2>{inner}</section>' if inner else ""


def page(title: str, heading: str, where: str, body: str) -> bytes:
    """The whole page: no script, nothing fetched."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}: {esc(where)}</title>'
            f'<style>{CSS}</style></head><body><h1>{esc(heading)}</h1><p class=note>{esc(where)}</p>'
            + body + "</body></html>").encode("utf-8", errors="replace")


CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:16px 0 4px}svg.fig{display:block;margin:8px 0}svg text{font:11px sans-serif;fill:#333}
svg text.v{fill:#555}.ax{stroke:#888}.grid{stroke:#eee}.thr{stroke:#111;stroke-dasharray:4 3}
figure{margin:12px 0}figcaption{font-weight:600;font-size:13px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.doc{white-space:pre-wrap;unicode-bidi:isolate;font:12px monospace;background:#f6f6f6;padding:4px;margin:2px 0 8px}
table.matrix td,table.matrix th{padding:2px 6px}table.matrix td{text-align:right;font-variant-numeric:tabular-nums}table.matrix small{display:block;color:#555;font-size:11px}
table.matrix th{text-align:left;font-weight:600;white-space:nowrap}td.zero{color:#bbb;text-align:center}svg text.yt{fill:#666}
.id{font-family:monospace;color:#555}.url{font-family:monospace;color:#1a5fb4;word-break:break-all}.facts{color:#555;font-size:12px;margin-left:6px}.doc.empty{color:#777;font-style:italic}.reason{color:#b22}.note{color:#555;font-size:13px}summary{cursor:pointer}"""
