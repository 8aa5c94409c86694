"""Eval-loss curves of ``datacurate ablate``: loss at an equal compute budget and the
tokens an arm needs to reach a loss.

A curve is a list of points ``(x, loss)`` in increasing ``x`` (training tokens, FLOPs or
seconds of training), one per evaluated checkpoint. Between two points the loss is taken
as linear in ``x``; outside the points nothing is assumed (None). Dataset decomposition's
claim (Pouransari et al. 2024) is about time: a run on shorter sequences spends fewer FLOPs
per token (attention is ``12 · n_layer · d · T`` of them), so two arms at equal tokens are
compared again at the compute the cheaper one spent. RHO-1's (Lin et al. 2024) is about
tokens: how many it needs to reach the loss the baseline ends at.
"""

from __future__ import annotations

from typing import Optional, Sequence


def at(xs: Sequence[float], ys: Sequence[float], x: float) -> Optional[float]:
    """The curve's loss at ``x`` (linear between points); None outside ``[xs[0], xs[-1]]``."""
    if not xs or x < xs[0] - 1e-9 * abs(xs[0]) or x > xs[-1] + 1e-9 * abs(xs[-1]):
        return None
    for i in range(1, len(xs)):
        if x <= xs[i]:
            f = (x - xs[i - 1]) / (xs[i] - xs[i - 1]) if xs[i] > xs[i - 1] else 1.0
            return ys[i - 1] + f * (ys[i] - ys[i - 1])
    return ys[-1]


def first_reach(xs: Sequence[float], ys: Sequence[float], target: float) -> Optional[float]:
    """The smallest ``x`` at which the curve comes down to ``target`` (linear between the
    last point above it and the first at or below it); None if it never does."""
    for i, y in enumerate(ys):
        if y <= target:
            if i == 0:
                return xs[0]
            return xs[i - 1] + (ys[i - 1] - target) / (ys[i - 1] - y) * (xs[i] - xs[i - 1])
    return None


def cumulative(steps: list[dict], flops_per_token, tokens_per_step: int) -> dict[int, tuple[float, float]]:
    """Per logged training step: (FLOPs, seconds) spent up to and including it, from
    ``metrics.jsonl``'s per-step ``seq_len`` and ``tokens_per_s`` (every step logged)."""
    out, flops, secs = {}, 0.0, 0.0
    for r in sorted(steps, key=lambda r: r["step"]):
        flops += flops_per_token(r["seq_len"]) * tokens_per_step
        secs += tokens_per_step / r["tokens_per_s"] if r.get("tokens_per_s") else 0.0
        out[r["step"]] = (flops, secs)
    return out
