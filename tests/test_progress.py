"""The live progress lines: per segment tasks, rate and ETA, each stage's own counts, and
kept shown as pending (not 0) while global stages are still to come."""

import io
import time

from datacurate.engine.progress import Progress, eta


def _task(read, stages, passed=0, kept=0):
    return {"tasks": 1, "read": read, "passed": passed, "kept": kept,
            "stages": {n: {"in": i, "kept": k, "rejected": {"r": i - k}} for n, (i, k) in stages.items()}}


def test_segment_lines_show_counts_eta_and_pending_kept():
    lines = []
    p = Progress(True, log=lines.append, every=0.0)
    p.segment(0, 4, ["langid", "heuristics"], ["exact_dedup", "decompose"], total_bytes=400)
    p(_task(100, {"langid": (100, 80), "heuristics": (80, 60)}, passed=60), nbytes=100)
    time.sleep(0.01)
    p(_task(100, {"langid": (100, 90), "heuristics": (90, 70)}, passed=70), nbytes=100)
    last = lines[-1]
    assert last.startswith("[datacurate] segment 0: tasks 2/4  read 200  ")
    assert "langid 200->170, heuristics 170->130" in last
    assert "passed 130; kept pending (exact_dedup, decompose to come)" in last
    assert "kept 0" not in last
    m = last.split("ETA ")[1].split(" ")[0]
    assert m != "-" and m.count(":") == 1  # half the bytes are done: an estimate, in m:ss

    p.segment(2, 1, ["decompose"], [], total_bytes=50)
    p({"tasks": 1, "kept": 120, "stages": {"decompose": {"in": 130, "kept": 120, "rejected": {"too_short": 10}}}},
      nbytes=50)
    assert lines[-1].endswith("| decompose 130->120 | kept 120") and "ETA 0:00" in lines[-1]
    assert p.stats["read"] == 200 and p.stats["kept"] == 120  # the run's totals keep merging


def test_journaled_tasks_count_as_done_but_not_in_the_rate():
    lines = []
    p = Progress(True, log=lines.append, every=0.0)
    p.segment(0, 2, ["langid"], [], total_bytes=200)
    p(_task(1000, {"langid": (1000, 900)}, kept=900), nbytes=100, fresh=False)
    assert "tasks 1/2  read 1,000  0 docs/s  ETA -" in lines[-1]  # nothing measured in this run yet


def test_terminal_block_redrawn_in_place():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    p = Progress(True, stream=out, every=0.0)
    p.segment(0, 2, ["langid"], ["near_dedup"])
    p(_task(10, {"langid": (10, 9)}, passed=9))
    p(_task(10, {"langid": (10, 8)}, passed=8))
    text = out.getvalue()
    assert text.count("\x1b[3F") == 1  # the second draw moved back over the 3-line block
    assert "kept pending (near_dedup to come)" in text
    assert eta(3725) == "ETA 1:02:05" and eta(None) == "ETA -"
