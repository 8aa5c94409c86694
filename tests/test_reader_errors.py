"""Readers never raise for one record: a Parquet row group whose pages are damaged makes
its rows ``input/corrupt_record`` rejects, one per row, and the row groups around it are
read (a real file, its bytes overwritten where the metadata says the group's text is)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from datacurate.formats.io import check_consumed
from tests.test_io import read_all
from tests.texts import PROSE_LINES


def test_a_damaged_parquet_row_group_is_one_reject_per_row(tmp_path):
    n = 3000  # three row groups of 1,000 (planning samples the first 1,000 rows: the first group)
    texts = [f"{i} {PROSE_LINES[i % len(PROSE_LINES)]}" for i in range(n)]
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": texts, "year": list(range(n))})
    path = tmp_path / "docs.parquet"
    pq.write_table(table, path, row_group_size=1000, compression="zstd")
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(1).column(1)  # the text of rows 1000-1999
    data = bytearray(path.read_bytes())
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end = start + chunk.total_compressed_size
    data[start + 20:end - 20] = b"\xff" * (end - start - 40)
    path.write_bytes(bytes(data))

    out, tasks, counters = read_all(path)
    assert check_consumed(tasks, counters) == []
    got = out.to_pylist()
    assert len(got) == n
    good = got[:1000] + got[2000:]
    assert [r["id"] for r in good] == [f"r{i}" for i in [*range(1000), *range(2000, n)]]
    assert all(r["reject_reason"] is None for r in good)
    assert [r["text"] for r in good] == texts[:1000] + texts[2000:]
    assert [(r["id"], r["reject_reason"]) for r in got[1000:2000]] == [
        (f"docs.parquet:{i}", "input/corrupt_record") for i in range(1000, 2000)]
