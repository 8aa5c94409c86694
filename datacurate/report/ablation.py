"""``OUT/report.html`` of a ``datacurate ablate`` output: per eval set and arm the mean
over seeds with its interval, the paired difference to the baseline, and the training
loss of every arm (from ``ablation.json`` and each arm's ``metrics.jsonl``)."""

from __future__ import annotations

from collections import defaultdict

from datacurate.formats import storage
from datacurate.report import svg
from datacurate.report.scan import read_json, read_jsonl


def _pm(e: dict) -> str:
    lo, hi = e["ci"]
    if e["mean"] is None:
        return "n/a"
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
    parts.append(f"<p class=note>Baseline: {svg.esc(base)}. Seeds {svg.esc(summary['seeds'])}; "
                 f"{svg.esc(summary['interval'])}. Text losses in nats per token with "
                 + (f"one tokenizer for all arms ({svg.esc(tok.get('path'))})" if tok.get("mode") == "fixed"
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
        parts.append(f"<h3>{svg.esc(name)} ({svg.esc(unit)}, {'lower' if low else 'higher'} is better)</h3>")
        parts.append(svg.table(["arm", "mean ± CI half-width", "95% CI", f"diff vs {base}", "diff 95% CI (paired)",
                                "verdict", "kept tokens", "kept docs", "epochs"], rows))
    curves = {}
    for arm in summary["arms"]:
        per_seed = [read_jsonl(storage.join(out_dir, arm, f"seed-{k}", "metrics.jsonl")) for k in summary["seeds"]]
        by_step: dict = defaultdict(list)
        for recs in per_seed:
            for r in recs:
                if "loss" in r:
                    by_step[r["tokens"]].append(r["loss"])
        xs = sorted(by_step)
        curves[arm] = (xs, [sum(by_step[x]) / len(by_step[x]) for x in xs])
    parts.append(svg.lines("training loss of every arm (mean over seeds; each on its own data)", curves,
                           "training tokens", "loss (nats/token)"))
    parts += _eval_curves(summary)
    links = "".join(f'<li><a href="{svg.esc(a["curated"])}/report.html">{svg.esc(arm)}</a></li>'
                    for arm, a in summary["arms"].items() if a.get("curated"))
    parts.append(f"<p class=note>Each arm's curation report:</p><ul>{links}</ul>")
    return svg.section("Ablation", *parts)


def _eval_curves(summary: dict) -> list[str]:
    """Held-out loss of the evaluated checkpoints against training tokens, FLOPs and seconds
    (mean over seeds at each checkpoint), when the ablation kept curves."""
    arms = {arm: a["curves"] for arm, a in summary["arms"].items() if a.get("curves")}
    if not arms:
        return []
    names = sorted(next(iter(arms.values()))[0]["points"][-1]["eval"])
    out = []
    for name in names:
        for axis, label in (("tokens", "training tokens"), ("flops", "training FLOPs"),
                            ("seconds", "training seconds (this machine, this load)")):
            series = {}
            for arm, runs in arms.items():
                n = min(len(r["points"]) for r in runs)
                mean = lambda key: [sum(r["points"][i][key] if key != "eval" else r["points"][i]["eval"][name]  # noqa: E731
                                        for r in runs) / len(runs) for i in range(n)]
                series[arm] = (mean(axis), mean("eval"))
            out.append(svg.lines(f"{name}: held-out loss against {label} (mean over seeds)", series, label,
                                 "loss (nats/token)"))
    return out


def write_ablation_report(out_dir: str, path: str | None = None) -> str:
    """``OUT/report.html`` of a ``datacurate ablate`` output (from its ``ablation.json``)."""
    summary = read_json(storage.join(out_dir, "ablation.json"))
    if not isinstance(summary, dict) or "arms" not in summary:
        raise ValueError(f"{out_dir}: no ablation.json")
    path = path or storage.join(out_dir, "report.html")
    storage.write_bytes(path, svg.page("datacurate ablation", "datacurate ablation report", storage.abspath(out_dir),
                                       ablation_section(out_dir, summary)))
    return path
