"""Run statistics: per-task statistics (each stage's a :class:`StageStats`) summed into
``stats.json``, and the funnel printout."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from datacurate.core.dicts import merge
from datacurate.report.profile import HOST, trim
from datacurate.stages.base import value_counts


@dataclass
class StageStats:
    """One stage's statistics over some documents; ``+=`` adds another's (a batch's, a
    task's, a global stage's phases): counts and seconds summed, reasons and metrics merged."""

    n_in: int = 0
    kept: int = 0
    rejected: dict = field(default_factory=dict)  # reason (without its detail) -> documents
    seconds: float = 0.0
    metrics: Optional[dict] = None  # the stage's own (Stage.metrics, run_global's); None: none reported

    def __iadd__(self, other: StageStats) -> StageStats:
        self.n_in, self.kept = self.n_in + other.n_in, self.kept + other.kept
        self.seconds += other.seconds
        merge(self.rejected, other.rejected)
        if other.metrics is not None:
            self.metrics = merge({} if self.metrics is None else self.metrics, other.metrics)
        return self

    @classmethod
    def of(cls, d: dict) -> StageStats:
        """From its stats.json form (the form tasks send and the journal keeps)."""
        return cls(d.get("in", 0), d.get("kept", 0), dict(d.get("rejected") or {}), d.get("seconds", 0.0),
                   d.get("metrics"))

    def to_dict(self) -> dict:
        d = {"in": self.n_in, "kept": self.kept, "rejected": self.rejected, "seconds": self.seconds}
        return d if self.metrics is None else {**d, "metrics": self.metrics}


def add_task(into: dict, task: dict) -> dict:
    """Add one task's statistics (stage entries as StageStats or their dicts) into ``into``."""
    for name, st in task.get("stages", {}).items():
        mine = into.setdefault("stages", {}).setdefault(name, StageStats())
        mine += st if isinstance(st, StageStats) else StageStats.of(st)
    return merge(into, {k: v for k, v in task.items() if k != "stages"})


def plain(stats: dict) -> dict:
    """Task statistics as JSON-able data (stage entries in their stats.json form; the
    profile's hosts trimmed to the task's largest, :func:`datacurate.report.profile.trim`)."""
    out = {**stats, "stages": {k: v.to_dict() for k, v in stats.get("stages", {}).items()}}
    if HOST in out.get("profile", {}):
        out["profile"] = {**out["profile"], HOST: trim(out["profile"][HOST])}
    return out


def count_reasons(reasons) -> dict:
    """Rejections by rule (the detail after ':' in a reason, e.g. a survivor id, is dropped)."""
    return value_counts(reasons, strip_detail=True)


def finalize(stats: dict, stage_order: list[str], wall_seconds: float) -> dict:
    """Order stages as run, add totals and check ``read == kept + rejected``."""
    stages = {k: StageStats.of(v) if isinstance(v, dict) else v for k, v in stats.get("stages", {}).items()}
    ordered = {name: stages.get(name, StageStats()).to_dict() for name in stage_order}
    for st in ordered.values():
        st["rejected_total"] = sum(st["rejected"].values())
        st["rejected"] = dict(Counter(st["rejected"]).most_common())
        st["seconds"] = round(st["seconds"], 3)
        if st["in"] and st["seconds"]:
            st["docs_per_second"] = round(st["in"] / st["seconds"], 1)
    rejected_total = sum(stats.get("rejected", {}).values())
    read = stats.get("read", 0)
    kept = stats.get("kept", 0)
    return {
        "totals": {
            "read": read,
            "kept": kept,
            "rejected": rejected_total,
            "accounted": read == kept + rejected_total,
            "wall_seconds": round(wall_seconds, 3),
            "read_tasks": stats.get("tasks", 0),
        },
        "stages": ordered,
        "rejected_by_reason": dict(Counter(stats.get("rejected", {})).most_common()),
        "input_files": stats.get("input_files", {}),
        "write_seconds": round(stats.get("write_seconds", 0.0), 3),
        "profile": {k: trim(v) if k == HOST else v for k, v in stats.get("profile", {}).items()},
    }


def format_funnel(report: dict) -> str:
    t = report["totals"]
    w = max([14] + [len(name) + 1 for name in report["stages"]])
    lines = [f"{'stage':<{w}}{'in':>12}{'kept':>12}{'rejected':>12}{'seconds':>10}"]
    for name, st in report["stages"].items():
        lines.append(f"{name:<{w}}{st['in']:>12,}{st['kept']:>12,}{st['rejected_total']:>12,}{st['seconds']:>10.1f}")
        reasons = list(st["rejected"].items())
        for reason, n in reasons[:12]:
            lines.append(f"    {reason:<40}{n:>10,}")
        if len(reasons) > 12:  # say so: every reason is in stats.json
            rest = sum(n for _, n in reasons[12:])
            lines.append(f"    {f'... {len(reasons) - 12} more reasons (stats.json)':<40}{rest:>10,}")
    ok = "ok" if t["accounted"] else "MISMATCH"
    skipped = len(report.get("input_files", {}).get("not_read", []))
    not_read = f"; {skipped:,} input file{'s' * (skipped != 1)} not read (stats.json)" if skipped else ""
    lines.append(f"read {t['read']:,} = kept {t['kept']:,} + rejected {t['rejected']:,} ({ok}){not_read}; "
                 f"{t['wall_seconds']:.1f} s wall")
    return "\n".join(lines)
