"""Run statistics: per-task dicts summed into ``stats.json``, and the funnel printout."""

from __future__ import annotations

from collections import Counter

from datacurate.dicts import merge  # noqa: F401 - re-exported: the engine sums its stats with it
from datacurate.stages.base import value_counts


def count_reasons(reasons) -> dict:
    """Rejections by rule (the detail after ':' in a reason, e.g. a survivor id, is dropped)."""
    return value_counts(reasons, strip_detail=True)


def finalize(stats: dict, stage_order: list[str], wall_seconds: float) -> dict:
    """Order stages as run, add totals and check ``read == kept + rejected``."""
    stages = stats.get("stages", {})
    ordered = {name: stages.get(name, {"in": 0, "kept": 0, "rejected": {}, "seconds": 0.0})
               for name in stage_order}
    for st in ordered.values():
        st.setdefault("in", 0)
        st.setdefault("kept", 0)
        st["rejected_total"] = sum(st.get("rejected", {}).values())
        st["rejected"] = dict(Counter(st.get("rejected", {})).most_common())
        st["seconds"] = round(st.get("seconds", 0.0), 3)
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
    }


def format_funnel(report: dict) -> str:
    t = report["totals"]
    lines = [f"{'stage':<14}{'in':>12}{'kept':>12}{'rejected':>12}{'seconds':>10}"]
    for name, st in report["stages"].items():
        lines.append(f"{name:<14}{st['in']:>12,}{st['kept']:>12,}{st['rejected_total']:>12,}{st['seconds']:>10.1f}")
        reasons = list(st["rejected"].items())
        for reason, n in reasons[:12]:
            lines.append(f"    {reason:<40}{n:>10,}")
        if len(reasons) > 12:  # say so: every reason is in stats.json
            rest = sum(n for _, n in reasons[12:])
            lines.append(f"    {f'... {len(reasons) - 12} more reasons (stats.json)':<40}{rest:>10,}")
    ok = "ok" if t["accounted"] else "MISMATCH"
    lines.append(f"read {t['read']:,} = kept {t['kept']:,} + rejected {t['rejected']:,} ({ok}); "
                 f"{t['wall_seconds']:.1f} s wall")
    return "\n".join(lines)
