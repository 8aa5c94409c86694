"""Live progress of a run: per segment its tasks, rate and ETA and each stage's own counts;
per global stage its phases. No Ray here: the runner feeds it each task's statistics.

On a terminal the block of lines is redrawn in place; otherwise (a log file, CI) one
line is printed per update, at most every ``every`` seconds. Documents that later global
stages may still reject are shown as *passed*, and the kept count as pending until the
last segment, never as 0.
"""

from __future__ import annotations

import sys
import time

from datacurate.engine.stats import StageStats, add_task


def eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA -"
    s = max(int(round(seconds)), 0)
    return f"ETA {s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"ETA {s // 60}:{s % 60:02d}"


class Progress:
    def __init__(self, enabled: bool, log=None, stream=None, every: float = 2.0):
        stream = sys.stderr if stream is None else stream  # now's: not the one the module first saw
        self.enabled, self.stream, self.every = enabled, stream, every
        self.log = log or (lambda m: print(m, file=stream, flush=True))
        self.tty = enabled and log is None and hasattr(stream, "isatty") and stream.isatty()
        self.stats: dict = {}  # the whole run's merged task statistics (for stats.json)
        self.segment(0, 0, [], [])

    def segment(self, index: int, n_tasks: int, stages: list[str], later: list[str], total_bytes: int = 0) -> None:
        """Segment ``index`` starts: ``n_tasks`` tasks applying ``stages`` (a global stage's
        decisions first, then map stages); the global stages ``later`` follow it."""
        self.index, self.n_tasks, self.stages, self.later = index, n_tasks, stages, later
        self.total_bytes = total_bytes
        self.seg: dict = {}
        self.done = self.fresh = self.fresh_docs = self.fresh_bytes = self.done_bytes = 0
        self.t0 = self.last = time.perf_counter()
        self._drawn = 0

    def _docs(self, st: dict) -> int:
        if self.index == 0:
            return st.get("read", 0)
        return st.get("stages", {}).get(self.stages[0], StageStats()).n_in if self.stages else 0

    def __call__(self, task_stats: dict, nbytes: int = 0, fresh: bool = True) -> None:
        """One task of the segment finished (``fresh``: in this run, not found in the journal)."""
        task_stats = add_task({}, task_stats)
        add_task(self.stats, task_stats)
        add_task(self.seg, task_stats)
        self.done += 1
        self.done_bytes += nbytes
        if fresh:
            self.fresh += 1
            self.fresh_docs += self._docs(task_stats)
            self.fresh_bytes += nbytes
        now = time.perf_counter()
        if self.enabled and (now - self.last >= self.every or self.done == self.n_tasks):
            self.last = now
            self.draw()

    def phase(self, stage: str, phase: str, done: int, total: int, started: float) -> None:
        """Per-file tasks of a global stage's phase: ``done`` of ``total``."""
        now = time.perf_counter()
        if not self.enabled or (now - self.last < self.every and done not in (1, total)):
            return
        self.last = now
        left = (now - started) / done * (total - done) if done else None
        self._drawn = 0
        self.log(f"[datacurate] {stage} {phase}: tasks {done}/{total}  {eta(left)}")

    def _head(self) -> str:
        el = max(time.perf_counter() - self.t0, 1e-9)
        rate = self.fresh_docs / el
        if self.done >= self.n_tasks:
            left = 0.0
        elif self.total_bytes and self.fresh_bytes:
            left = el / self.fresh_bytes * (self.total_bytes - self.done_bytes)
        elif self.fresh:
            left = el / self.fresh * (self.n_tasks - self.done)
        else:
            left = None
        return (f"[datacurate] segment {self.index}: tasks {self.done}/{self.n_tasks}  "
                f"{'read' if self.index == 0 else 'in'} {self._docs(self.seg):,}  {rate:,.0f} docs/s  {eta(left)}")

    def _counts(self, name: str) -> tuple[int, int, int]:
        st = self.seg.get("stages", {}).get(name, StageStats())
        return st.n_in, st.kept, sum(st.rejected.values())

    def _tail(self) -> str:
        if self.later:
            return f"passed {self.seg.get('passed', 0):,}; kept pending ({', '.join(self.later)} to come)"
        return f"kept {self.seg.get('kept', 0):,}"

    def lines(self) -> list[str]:
        """The block: the segment's head, one line per stage, then kept (or pending)."""
        out = [self._head()]
        for name in self.stages:
            n_in, kept, rej = self._counts(name)
            out.append(f"[datacurate]   {name:<12} in {n_in:>9,}  kept {kept:>9,}  rejected {rej:>9,}")
        return out + [f"[datacurate]   {self._tail()}"]

    def draw(self) -> None:
        if self.tty:
            lines = self.lines()
            if self._drawn:
                self.stream.write(f"\x1b[{self._drawn}F")  # back to the block's first line
            self.stream.write("".join(f"\x1b[2K{ln}\n" for ln in lines))
            self.stream.flush()
            self._drawn = len(lines)
        else:
            stages = ", ".join("{} {:,}->{:,}".format(n, *self._counts(n)[:2]) for n in self.stages)
            self.log(f"{self._head()} | {stages} | {self._tail()}")
