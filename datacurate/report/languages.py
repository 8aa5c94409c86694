"""The report's per-language table: each language's funnel, what each stage removed from it,
and its share of the token shards.

One row per value of ``lang`` (the column ``langid`` writes; documents rejected before it
have none), every language listed, commonest first: documents read, then after each stage
the documents it removed from that language (shaded by the share of the language's
documents), documents and tokens kept, and where the shards' domains are languages
(``decompose.domain_column: lang``), the language's mixture weight and tokens written.
The "who removed what" table above shows the nine commonest languages with tokens; this
one is for a corpus of many languages.
"""

from __future__ import annotations

from datacurate.report import profile as pf
from datacurate.report import svg

LANG = "lang"


def _fmt(n: float) -> str:
    return f"{int(n):,}"


def language_section(scan, stats: dict, manifest: dict | None) -> str:
    acc = (scan.removed or {}).get(LANG) or {}
    if len(acc) < 2:  # one language (or none): the funnel above says it all
        return ""
    order = list(stats.get("stages", {}))
    stages = [s for s in order if any(s in per for per in acc.values())]
    per_domain = (manifest or {}).get("per_domain") or {}
    mixed = bool(per_domain) and set(per_domain) <= set(acc) | {"unknown"}
    columns = ["read", *(f"−{s}" for s in stages), "kept", "kept tokens"]
    if mixed:
        columns += ["shard weight", "shard tokens"]
    rows = []
    for lang, per in sorted(acc.items(), key=lambda kv: (-pf.docs(kv[1]), kv[0])):
        read = pf.docs(per)
        left = read
        cells = [(_fmt(read), "", 0.0)]
        for s in stages:
            n = per.get(s, {}).get("docs", 0)
            left -= n
            cells.append((_fmt(n), f"{left:,} left", n / read) if n else ("", "", 0.0))
        kept = per.get(pf.KEPT, {})
        cells.append((_fmt(kept.get("docs", 0)), f"{100 * kept.get('docs', 0) / read:.0f} %", 0.0))
        cells.append((_fmt(kept.get("tokens", 0)), "", 0.0) if scan.has_tokens else ("", "", 0.0))
        if mixed:
            d = per_domain.get(lang) or {}
            cells.append((f"{d.get('weight', 0.0):.3f}", f"rate {d.get('rate', 0.0):.2f}", 0.0) if d else ("", "", 0.0))
            cells.append((_fmt(d.get("tokens_written", 0)), "", 0.0) if d else ("", "", 0.0))
        rows.append((lang, cells))
    mix = (manifest or {}).get("mixture") or {}
    note = ("<p class=note>Per language (lid.176's code; (none): rejected before langid): documents read, the "
            "documents each stage removed (below: how many are left), documents and tokens kept"
            + (f"; the token shards' mixture over languages ({svg.esc(str(mix.get('source', '')))}): each "
               "language's weight and sampling rate (above 1: its sequences repeat), and its tokens written"
               if mixed else "") + ".</p>")
    return svg.section(f"Per language ({len(acc)} languages)", note,
                       svg.matrix("each language's funnel: documents removed by each stage", "language", columns, rows,
                                  cls="matrix per-language"))
