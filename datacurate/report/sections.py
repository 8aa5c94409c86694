"""``OUT/report.html``: one self-contained page per run, from raw documents to training curves.

It reads what a run leaves behind and nothing else (:mod:`datacurate.report.scan`):
``stats.json`` and ``config.yaml`` (funnel, stage metrics, thresholds), ``kept/`` and
``rejected/`` Parquet (score columns, counted columns, token counts, sample rejects), the
shards manifest, and the training / DoReMi outputs (``metrics.jsonl``, ``weights.jsonl``).
The sections here are generic; what is particular to a stage comes from its class: its
score columns with their thresholds (``Stage.scores``), the columns counted for it
(``Stage.counted``) and its own section (``Stage.report_section``, given a :class:`View`).
A part that a run did not produce (a stage it lacks, no training) is left out, never an error.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import yaml

from datacurate.formats import shards, storage
from datacurate.core.coerce import coerce
from datacurate.registry import STAGES
from datacurate.report import profile as pf
from datacurate.report import svg
from datacurate.report.languages import language_section
from datacurate.report.scan import (HERE, KEPT, LATER, SAMPLE_CHARS, Scan, find_training, read_json, read_jsonl,
                                    sample_rejects, shard_counts)
from datacurate.core.schema import DOMAIN, INPUT_STAGE
from datacurate.stages.base import Stage

@dataclass
class View:
    """What a stage's ``report_section`` gets: its stats.json entry, its resolved config
    (None: not in the run's config.yaml), the run's data scan, and the drawing functions."""

    stats: dict
    config: Any = None
    scan: Any = None
    draw: Any = svg  # the module: hbars, histogram, lines, table, section, esc

    @property
    def metrics(self) -> dict:
        return self.stats.get("metrics") or {}


def resolved(config: dict | None) -> dict[str, Any]:
    """Stage name -> its resolved config object: of the stage whose stats.json key is its
    name (the one ``stats["stages"][name]`` counts), else of the first of that name."""
    out: dict[str, Any] = {}
    for spec in (config or {}).get("stages") or []:
        name, params = next(iter(spec.items())) if isinstance(spec, dict) and spec else (spec, {})
        if isinstance(name, str) and name in STAGES:
            try:
                cfg = coerce(params or {}, STAGES[name].Config, name)
            except ValueError:  # not this version's config: no thresholds from it
                continue
            if name not in out or STAGES[name].stats_key(cfg) == name:
                out[name] = cfg
    return out


def _stats_key(name, params) -> str:
    try:
        return STAGES[name].stats_key(coerce(params or {}, STAGES[name].Config, name))
    except (KeyError, TypeError, ValueError):  # not a stage of this version, or not its config
        return name


def raw_stages(config: dict | None, configs: dict) -> tuple[str, ...]:
    """For a run whose stats.json has no profile: the stages whose rejects still hold the
    input payload as text (as :func:`datacurate.engine.process.profiled` finds them)."""
    names = [INPUT_STAGE]
    for spec in (config or {}).get("stages") or []:
        name, params = next(iter(spec.items())) if isinstance(spec, dict) and spec else (spec, {})
        names.append(_stats_key(name, params))  # as its rows' reject_stage names it (exact_dedup:url)
        if name in STAGES and name in configs and STAGES[name].rewrites_text(configs[name]):
            return tuple(names)
    return ()


def shard_set(out_dir: str, configs: dict) -> tuple[str | None, dict | None]:
    """The directory and manifest of the shards a stage that writes them left (where the
    run's config put them, else the stage's default place)."""
    for cls in STAGES.values():
        for cfg in (configs.get(cls.name), cls.Config()) if cls.writes_shards else ():
            d = cfg and cls.output_dir(cfg, out_dir)
            if d and storage.isfile(storage.join(d, shards.MANIFEST)):
                return d, read_json(storage.join(d, shards.MANIFEST))
    return None, None


def funnel_section(stats: dict, scan: Scan, manifest: dict | None) -> str:
    stages = stats.get("stages", {})
    t = stats.get("totals", {})
    docs = [(name, [st.get("kept", 0), st.get("rejected_total", 0)]) for name, st in stages.items()]
    ends = [f'in {st.get("in", sum(v)):,}: kept {v[0]:,}, rejected {v[1]:,}'
            for (_, v), st in zip(docs, stages.values())]
    records = (stats.get("input_files") or {}).get("warc_records") or {}
    parts = [f'<p>read {t.get("read", 0):,} = kept {t.get("kept", 0):,} + rejected {t.get("rejected", 0):,} '
             f'({"ok" if t.get("accounted") else "MISMATCH"}); {t.get("wall_seconds", 0):.1f} s wall</p>',
             _records(t.get("read", 0), records, (stats.get("input_files") or {}).get("archive_files") or {}),
             svg.hbars("documents kept and rejected by each stage", docs, ["kept", "rejected"], stacked=True,
                       colors=[svg.KEPT, svg.REJECTED], ends=ends)]
    order = list(stages)
    first = next((i for i, name in enumerate(order) if STAGES.get(name, Stage).makes_tokens), None)
    if scan.has_tokens and first is not None:
        remaining = scan.tokens["kept"] + sum(scan.tokens["rejected"].values())
        rows = [(order[first], [remaining])]
        for name in order[first + 1:]:
            remaining -= scan.tokens["rejected"].get(name, 0)
            rows.append((name, [remaining]))
        tot = (manifest or {}).get("totals") or {}
        if "tokens_written" in tot:
            rows.append(("shards written", [tot["tokens_written"]]))
        parts.append("<h3>tokens</h3>" + svg.hbars("tokens left after each stage", rows, ["tokens"]))
    return svg.section("Funnel", *parts)


def _records(documents: int, others: dict, files: dict) -> str:
    """The input's records by kind: the documents (the funnel's rows) and the WARC records
    that are no document (requests, warcinfo, metadata, revisits, and documents of no web
    scheme such as ``response (dns:)``; counted, never rows), with the archive files by kind
    (WARC, WET, WAT, ARC)."""
    if not others:
        return ""
    rows = [("documents (response, resource, conversion)", [documents])] + [
        (f"{kind} (not a document)", [n]) for kind, n in sorted(others.items(), key=lambda kv: -kv[1])]
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(files.items()))
    return svg.hbars(f"records read: {documents + sum(others.values()):,} (every WARC record, by type"
                     f"{'; files: ' + kinds if kinds else ''})", rows,
                     ["records"], colors=["#bab0ac"])


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return ""


def _add(into: dict, cell: dict) -> None:
    for k, v in cell.items():
        into[k] = into.get(k, 0) + v


def _removed_table(scan: Scan, acc: dict, what: str, order: list[str], top: int = 9) -> str:
    """Rows: read, each stage that rejected something (in pipeline order), kept; columns: the
    ``top`` commonest values of ``what`` by documents read, the rest, all (``acc``: a profile
    column, {value: {stage: cell}})."""
    read = Counter({v: pf.docs(per) for v, per in acc.items()})
    values = [v for v, _ in read.most_common(top)]
    columns = values + (["other"] if len(read) > len(values) else []) + ["all"]
    stages = sorted({s for per in acc.values() for s in per if s != pf.KEPT},
                    key=lambda s: (s not in order, order.index(s) if s in order else 0, s))
    cells: dict = {row: {c: {} for c in columns} for row in ("read", *stages, "kept")}
    for v, per in acc.items():
        for st, c in per.items():
            for row in ("read", st):
                _add(cells[row][v if v in values else "other"], c)
                _add(cells[row]["all"], c)

    def cell(row: str, col: str) -> tuple[str, str, float]:
        c = cells[row][col]
        if not c.get("docs"):
            return "", "", 0.0
        if scan.has_tokens:
            tokens, est = scan.rates.tokens(c)
            sub = f"{'≈' if est else ''}{tokens:,}"
        else:
            sub = _size(int(c.get("bytes", 0) + c.get("raw", 0)))
        shade = c["docs"] / cells["read"][col]["docs"] if row not in ("read", "kept") else 0.0
        return f"{int(c['docs']):,}", sub, shade

    unit = "tokens" if scan.has_tokens else "text size"
    rows = [(("rejected by " if row not in ("read", "kept") else "") + row, [cell(row, c) for c in columns])
            for row in cells]
    return svg.matrix(f"documents ({unit} below) each stage removed, per {what}", f"stage \\ {what}", columns, rows,
                      cls=f"matrix who-{what}")


def removed_section(scan: Scan, stats: dict) -> str:
    """Who removed what: per domain, per host (the URLs' registered domains, when the input
    has URLs), and per value of each column a stage counts with a heading (``Stage.counted``:
    the language), the documents and tokens each stage rejected."""
    heads = [(DOMAIN, "domain"), (pf.HOST, "host")] + [(c, h[0]) for cls in STAGES.values()
                                                         for c, h in cls.counted.items() if h]
    order = list(stats.get("stages", {}))
    parts = [_removed_table(scan, scan.removed[col], what, order) for col, what in heads if scan.removed.get(col)]
    if not parts:
        return ""
    payload = (f" (a document whose text was still the page, rejected at or before extraction, counts the "
               f"{scan.rates.text_per_payload:.3f} bytes of extracted text per page byte of the pages extracted)"
               if scan.rates.text_per_payload != 1.0 else "")
    how = ("tokens: n_tokens where the document was tokenized; ≈: estimated for documents rejected before "
           f"tokenization, from the UTF-8 size of their text at the tokenized documents' {scan.tokens_per_byte:.3f} "
           f"tokens per byte{payload}" if scan.has_tokens else "text size: UTF-8 bytes of the documents' text")
    note = (f"<p class=note>Each cell: documents, and below them {how}. A stage's cell is shaded by the share of "
            "that column's documents read it removed. (none): documents without a value (those rejected "
            "before the stage that sets it).</p>")
    return svg.section("Who removed what (documents and tokens, per stage)", note, *parts)


def _sample_html(samples: list[dict]) -> str:
    items = []
    for smp in samples:
        text = smp.get("text") or ""
        more = "…" if len(text) > SAMPLE_CHARS else ""
        where = (f'<span class="url" title="{svg.esc(smp["id"])}">{svg.esc(smp["url"])}</span>'  # the id on hover
                 if smp.get("url") else f'<span class="id">{svg.esc(smp["id"])}</span>')
        facts = [f"HTTP {smp['http_status']}" if smp.get("http_status") is not None else "",
                 str(smp.get("content_type") or "")]
        facts = " · ".join(f for f in facts if f)
        body = (f'<div class="doc"><bdi>{svg.esc(text[:SAMPLE_CHARS])}</bdi>{more}</div>' if text.strip() else
                f'<div class="doc empty">(no text: {svg.esc(smp.get("content_type") or "empty payload")})</div>')
        items.append(f'<li>{where} <span class="reason">{svg.esc(smp["reason"])}</span>'
                     + (f' <span class="facts">{svg.esc(facts)}</span>' if facts else "") + body + "</li>")
    return f"<ol>{''.join(items)}</ol>"


def hosts_section(scan: Scan, top: int = 20) -> str:
    """The input's hosts (registered domains of the URLs): documents read, kept, rejected (by
    the stage that rejected most of them), and the bytes read."""
    acc = scan.profile.get(pf.HOST) or {}
    if not acc or set(acc) <= {pf.NONE}:
        return ""
    ranked = sorted(acc, key=lambda v: (v in (pf.OTHER, pf.NONE), -pf.docs(acc[v]), v))
    rows = []
    for host in ranked[:top] + [v for v in ranked[top:] if v in (pf.OTHER, pf.NONE)]:
        per = acc[host]
        kept = per.get(pf.KEPT, {}).get("docs", 0)
        rej = {s: c["docs"] for s, c in per.items() if s != pf.KEPT}
        size = sum(c.get("bytes", 0) + c.get("raw", 0) for c in per.values())
        most = max(rej, key=lambda s: (rej[s], s)) if rej else ""
        rows.append([host, pf.docs(per), kept, sum(rej.values()), f"{most} ({rej[most]:,})" if most else "",
                     _size(int(size))])
    more = len([v for v in acc if v not in (pf.OTHER, pf.NONE)]) - top
    extra = ([f"{pf.OTHER}: the hosts past the {pf.TOP_HOSTS:,} largest of a read task"] if pf.OTHER in acc else []) + (
        [f"{pf.NONE}: no valid URL"] if pf.NONE in acc else [])
    note = (f"<p class=note>Hosts are the registered domains of the documents' URLs (the Public Suffix List: "
            f"<code>a.b.example.co.uk</code> counts as <code>example.co.uk</code>); {svg.plural(len(acc), 'host')} "
            f"in all{f', the {more:,} smaller ones not listed' if more > 0 else ''}. "
            + "".join(f"{svg.esc(e)}. " for e in extra)
            + "Size: UTF-8 bytes of the text as written (the page where it was rejected before extraction).</p>")
    return svg.section("Hosts (documents read, kept and rejected per site)", note, svg.table(
        ["host", "read", "kept", "rejected", "rejected most by", "size"], rows).replace("<table>",
                                                                                        '<table class="hosts">', 1))


def status_section(scan: Scan, stats: dict) -> str:
    """Documents by HTTP status: kept, and rejected by each stage."""
    acc = scan.profile.get(pf.STATUS) or {}
    if not acc or set(acc) <= {pf.NONE}:
        return ""
    order = list(stats.get("stages", {}))
    stages = sorted({s for per in acc.values() for s in per if s != pf.KEPT},
                    key=lambda s: (s not in order, order.index(s) if s in order else 0, s))
    codes = sorted(acc, key=lambda v: (not v.isdigit(), v))
    rows = [(f"HTTP {v}" if v.isdigit() else f"{v} (no HTTP)",
             [acc[v].get(pf.KEPT, {}).get("docs", 0)] + [acc[v].get(s, {}).get("docs", 0) for s in stages])
            for v in codes]
    table = svg.table(["status", "read", "kept"] + [f"rejected by {s}" for s in stages],
                      [[label, sum(vals)] + vals for label, vals in rows]).replace("<table>",
                                                                                  '<table class="status">', 1)
    return svg.section("HTTP status (documents by the status of their capture)", svg.hbars(
        "documents by HTTP status", rows, ["kept"] + [f"rejected by {s}" for s in stages], stacked=True,
        colors=[svg.KEPT] + [c for c in svg.PALETTE if c != svg.KEPT][:len(stages)] * (1 + len(stages) // 9)),
        table)


def rejects_section(stats: dict, samples: dict) -> str:
    parts = []
    for name, st in stats.get("stages", {}).items():
        reasons = st.get("rejected") or {}
        if not reasons:
            continue
        parts.append(f"<h3>{svg.esc(name)}: {st.get('rejected_total', 0):,} rejected</h3>")
        parts.append(svg.hbars(f"{name}: rejects by reason", [(r, [c]) for r, c in reasons.items()], ["documents"],
                               colors=[svg.REJECTED]))
        for reason, count in reasons.items():
            got = samples.get((name, reason), [])
            parts.append(f'<details><summary>{svg.esc(reason)}: {svg.plural(count, "document")}, {len(got)} shown'
                         '</summary>'
                         f'{_sample_html(got)}</details>')
    return svg.section("Rejects by stage and reason", *parts)


def scores_section(scan: Scan, configs: dict, stats: dict) -> str:
    """The histogram of every score column a stage declares (``Stage.scores``), with its
    threshold from the stage's resolved config where one applies."""
    parts = []
    for cls in STAGES.values():
        metrics = (stats.get("stages", {}).get(cls.name) or {}).get("metrics") or {}
        for col, score in cls.scores.items():
            h = scan.hist.get(col)
            if h is None or not sum(v.sum() for v in h.values()):
                continue
            t = score.threshold(configs[cls.name]) if cls.name in configs else None
            series = {"kept": h[KEPT], f"rejected by {cls.name}": h[HERE], "rejected by a later stage": h[LATER]}
            parts.append(svg.histogram(score.title, scan.edges[col], series, t, f"reject {score.reject}", score.log_y,
                                       xlabel=col))
            try:
                parts.append(score.note.format(**metrics))
            except (KeyError, TypeError, ValueError):  # a metric the note needs is missing
                pass
    return svg.section("Scores (kept and rejected rows with a score)", *(
        ["<p class=note>Each histogram counts the documents its stage scored: kept to the end, rejected by that "
         "stage (by any of its rules, so some sit on the kept side of the line), or passed by it and rejected by "
         "a later stage (documents an earlier stage rejected never reach it).</p>"] + parts if parts else []))


def _mix(title: str, counts: dict[str, Counter], top: int = 15) -> str:
    before, after = counts["before"], counts["after"]
    nb, na = max(sum(before.values()), 1), max(sum(after.values()), 1)
    names = [k for k, _ in before.most_common(top)]
    rows = [(k, [100 * before[k] / nb, 100 * after[k] / na]) for k in names]
    rest = len(before) - len(names)
    if rest > 0:
        rows.append((f"{rest} more", [100 * sum(before[k] for k in before if k not in names) / nb,
                                      100 * sum(after[k] for k in after if k not in names) / na]))
    return svg.hbars(title, rows, [f"before ({svg.plural(nb, 'document')})", f"after ({sum(after.values()):,} kept)"],
                     pct=True,
                     colors=["#bab0ac", svg.KEPT])


def mix_section(scan: Scan) -> str:
    """Before and after of the domain and of the columns stages count with a heading (``Stage.counted``)."""
    heads = [(c, h) for cls in STAGES.values() for c, h in cls.counted.items() if h]
    heads.append((DOMAIN, ("domain", "all documents read")))
    parts = [f"<h3>{svg.esc(what)} ({svg.esc(whose)})</h3>" + _mix(f"{what} mix", scan.counts[col])
             for col, (what, whose) in heads if scan.counts[col]["before"]]
    return svg.section("Language and domain mix, before and after (% of documents)", *parts)


SHARD_DOMAINS = 9  # domains drawn apart in the shards' bars; more are one "N more" series


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
    total = Counter()
    for c in counts.values():
        total.update(c)
    domains = sorted(d for d, _ in total.most_common(SHARD_DOMAINS))  # many (languages): the largest, the rest summed
    rows = [(f"{L} tokens", [counts[L][d] for d in domains]
             + ([sum(n for d, n in counts[L].items() if d not in domains)] if len(total) > len(domains) else []))
            for L in sorted(counts)]
    if len(total) > len(domains):
        domains = domains + [f"{len(total) - len(domains)} more"]
    tot = manifest.get("totals") or {}
    note = (f"<p>{tot.get('sequences_written', 0):,} sequences, {tot.get('tokens_written', 0):,} tokens written; "
            f"{tot.get('tokens_dropped', 0):,} tokens dropped (tails below the smallest bucket); mixture "
            f"{svg.esc((manifest.get('mixture') or {}).get('source', 'natural'))}</p>")
    return svg.section("Token shards: buckets by domain (tokens)",
                       svg.hbars("tokens per bucket and domain", rows, domains, stacked=True), note)


def _curve(recs: list[dict], key: str) -> tuple[list, list]:
    recs = [r for r in recs if key in r]
    return [r["step"] for r in recs], [r[key] for r in recs]


def train_section(title: str, d: str) -> str:
    recs = read_jsonl(storage.join(d, "metrics.jsonl"))
    if not recs:
        return ""
    evals = [r for r in recs if "eval_loss" in r]
    doms = sorted({k for r in evals for k in r["eval_loss"]})
    parts = [svg.lines(f"{title}: training loss", {"train loss": _curve(recs, "loss")}, "step", "loss")]
    if evals:
        held = evals[-1].get("eval_tokens") or {}  # held-out tokens per domain (written since issue 33)
        name = {k: f"{k} ({svg.plural(held[k], 'token')})" if k in held else k for k in doms}
        parts.append(svg.lines(f"{title}: eval loss per domain",
                               {name[k]: ([r["step"] for r in evals], [r["eval_loss"].get(k) for r in evals])
                                for k in doms}, "step", "held-out loss"))
        last = evals[-1]["eval_loss"]
        header = ["domain", f"eval loss at step {evals[-1]['step']}"] + (["held-out tokens"] if held else [])
        parts.append(svg.table(header, [[k, last[k]] + ([held.get(k, "")] if held else []) for k in doms]))
    parts.append(svg.lines(f"{title}: throughput", {"tokens/s": _curve(recs, "tokens_per_s")}, "step", "tokens/s"))
    steps, mfu = _curve(recs, "mfu")
    if any(v is not None for v in mfu):
        parts.append(svg.lines(f"{title}: MFU", {"MFU %": (steps, [None if v is None else 100 * v for v in mfu])},
                               "step", "MFU (%)"))
    else:
        parts.append("<p class=note>MFU not measured (no known accelerator peak, e.g. on CPU).</p>")
    return svg.section(title, *parts)


def doremi_section(d: str) -> str:
    parts = []
    files = storage.walk_files(d)
    rel = {f: f[len(storage.abspath(d)) + 1:] for f in files}
    weight_files = [f for f in files if re.fullmatch(r"(round-[^/]*/)?weights\.jsonl", rel[f])]
    for path in weight_files:
        recs = read_jsonl(path)
        doms = sorted({k for r in recs for k in r.get("alpha", {})})
        where = posixpath.dirname(rel[path]) or "."
        label = "" if where == "." else f" ({where})"
        parts.append(svg.lines(f"DoReMi domain weights{label}",
                               {k: _curve([{"step": r["step"], "w": r["alpha"].get(k)} for r in recs], "w") for k in doms},
                               "proxy step", "domain weight (alpha)"))
    final = read_json(storage.join(d, "domain_weights.json"))
    if isinstance(final, dict) and final:
        parts.append(svg.hbars("DoReMi final domain weights (average over proxy steps)",
                               [(k, [v]) for k, v in final.items()], ["weight"]))
    for sub in sorted(f for f in files if rel[f].endswith("metrics.jsonl") and rel[f] != "metrics.jsonl"):
        parts.append(train_section(f"DoReMi {posixpath.dirname(rel[sub])}", posixpath.dirname(sub)))
    return svg.section("DoReMi", *parts)


def write_report(out_dir: str, train_dir: str | None = None, path: str | None = None) -> str:
    """Write the run report of ``out_dir`` (default ``out_dir/report.html``); return its path."""
    stats = read_json(storage.join(out_dir, "stats.json")) or {}
    try:
        config = yaml.safe_load(storage.read_text(storage.join(out_dir, "config.yaml"))) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    configs = resolved(config)
    scan = Scan(out_dir, {c: s.bounds for cls in STAGES.values() for c, s in cls.scores.items()},
                [c for cls in STAGES.values() for c in cls.counted],
                owners={c: cls.name for cls in STAGES.values() for c in cls.scores},
                by=[c for cls in STAGES.values() for c, h in cls.counted.items() if h],
                profile=stats.get("profile"), raw_stages=raw_stages(config, configs))
    shards_dir, manifest = shard_set(out_dir, configs)
    stages = stats.get("stages", {})
    samples = sample_rejects(out_dir, {s: st.get("rejected") or {} for s, st in stages.items()})
    models = find_training(out_dir, config, train_dir)
    sections = [funnel_section(stats, scan, manifest), removed_section(scan, stats),
                language_section(scan, stats, manifest), hosts_section(scan),
                status_section(scan, stats), rejects_section(stats, samples),
                scores_section(scan, configs, stats), mix_section(scan)]
    sections += [cls.report_section(View(stages.get(cls.name) or {}, configs.get(cls.name), scan))
                 for cls in STAGES.values()]
    sections.append(shards_section(shards_dir, manifest))
    if "train" in models:
        sections.append(train_section("Training", models["train"]))
    if "doremi" in models:
        sections.append(doremi_section(models["doremi"]))
    path = path or storage.join(out_dir, "report.html")
    storage.write_bytes(path, svg.page("datacurate report", "datacurate run report", storage.abspath(out_dir),
                                       "".join(sections)))
    return path
