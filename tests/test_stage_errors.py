"""No record can end a run from inside a stage: where a map stage raises on a batch, the
engine runs it on halves down to single rows (datacurate.engine.process.per_record); the row
that fails alone is rejected as ``<stage>/error:<exception>``, and every other row is judged
as it would be without it.

No real record is known to make a shipped stage raise (one that did would be fixed), so the
failure comes from each real stage class with its ``annotate`` made to raise when the batch
holds a marked row, as a stage bug met on one page would; and, through the real engine on
local Ray, from a user's own stage (registered as tests/test_stage_contract.py does) whose
parsing fails on some real records."""

from __future__ import annotations

import errno
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from datacurate.engine.process import apply_stage
from datacurate.registry import STAGES
from datacurate.core.schema import ORD, REJECT_REASON, REJECT_STAGE
from datacurate.stages.base import Stage
from tests.texts import PROSE_LINES

REPO = Path(__file__).resolve().parent.parent
MARK = "a page this stage cannot handle"
PARAMS = {"url_filter": {"blocklist": [str(REPO / "sample_data" / "blocklist")]}}
MAP_STAGES = sorted(n for n, c in STAGES.items() if not c.is_global)


def _batch(texts: list[str]) -> pa.Table:
    n = len(texts)
    return pa.table({"id": [f"d{i}" for i in range(n)], "text": pa.array(texts, pa.large_string()),
                     "url": [f"https://example.org/{i}" for i in range(n)],
                     REJECT_STAGE: pa.nulls(n, pa.string()), REJECT_REASON: pa.nulls(n, pa.string()),
                     ORD: pa.array(np.arange(n, dtype=np.int64))})


def _failing(cls: type[Stage], error: Exception | None = None) -> type[Stage]:
    class Failing(cls):
        def annotate(self, table):
            if pc.any(pc.match_substring(table.column("text"), MARK)).as_py():
                raise error or ValueError(f"cannot handle {MARK!r}")
            return super().annotate(table)

    return Failing


@pytest.mark.parametrize("name", MAP_STAGES)
def test_every_map_stage_rejects_the_record_it_fails_on(name):
    cls = STAGES[name]
    texts = [*PROSE_LINES, f"{PROSE_LINES[0]} {MARK}", *PROSE_LINES[::-1]]
    bad = len(PROSE_LINES)
    batch = _batch(texts)
    out, st = apply_stage(_failing(cls)(**PARAMS.get(name, {})), batch)
    reasons = out.column(REJECT_REASON).to_pylist()
    assert reasons[bad].startswith(f"{name}/error:ValueError: cannot handle"), reasons[bad]
    assert out.column(REJECT_STAGE)[bad].as_py() == name
    assert out.column("text")[bad].as_py() == texts[bad]  # the record as it came
    assert st.rejected.get(f"{name}/error") == 1
    # the others: as the same stage judges them in a batch without the failing record
    others = [i for i in range(len(texts)) if i != bad]
    clean, _ = apply_stage(cls(**PARAMS.get(name, {})), batch.take(others))
    assert out.take(others).select(clean.column_names).to_pylist() == clean.to_pylist()


def test_the_machine_failing_is_no_record_reject():
    """A full disk met inside a stage stops the batch (the run says it in one line, and
    ``--resume`` goes on after the fix): it says nothing about the record."""
    texts = [*PROSE_LINES, f"{PROSE_LINES[0]} {MARK}"]
    stage = _failing(STAGES["langid"], OSError(errno.ENOSPC, "No space left on device"))()
    with pytest.raises(OSError, match="No space left"):
        apply_stage(stage, _batch(texts))


@dataclass
class YearConfig:
    pass


class Year(Stage):
    """A user's stage: the year a text opens with (``int`` of its first word), as a parser
    written for one source would do; it raises on the records of another source."""

    name = "year"
    Config = YearConfig
    columns = {"year": pa.int32()}

    def annotate(self, table):
        return {"year": pa.array([int(t.split()[0]) for t in table.column("text").to_pylist()], pa.int32())}, None


@pytest.fixture
def year():
    from datacurate.registry import register

    register(Year)
    yield Year
    del STAGES["year"]


def test_a_stage_that_raises_on_some_records_does_not_end_a_run(year, ray_session, tmp_path):
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    dated = [f"{1850 + i} {line}" for i, line in enumerate(PROSE_LINES * 5)]
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(dated)]
    docs[3]["text"] = PROSE_LINES[0]  # from another source: no year first
    docs[11]["text"] = "MDCCCLXII " + PROSE_LINES[1]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
    out = tmp_path / "out"
    cfg = load_config({"input": {"path": str(tmp_path / "in.jsonl"), "batch_rows": 8}, "output": str(out),
                       "ray": {"progress": False}, "stages": [{"year": {}}]})
    report = run_pipeline(cfg, report=False)
    t = report["totals"]
    assert (t["read"], t["kept"], t["rejected"], t["accounted"]) == (len(docs), len(docs) - 2, 2, True)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["stages"]["year"]["rejected"] == {"year/error": 2}
    rejected = {r["id"]: r for r in pq.read_table(out / "rejected").to_pylist()}
    assert set(rejected) == {"d3", "d11"}
    assert all(re.match(r"year/error:ValueError: invalid literal for int\(\)", r["reject_reason"])
               for r in rejected.values())
    kept = pq.read_table(out / "kept").to_pylist()
    assert [r["year"] for r in kept] == [int(d["text"].split()[0]) for d in docs if d["id"] not in rejected]
