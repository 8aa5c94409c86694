"""How many shipped and test pages decode differently with the browser-grade decoder
(datacurate/text/charset.py) than with the one before it (Python's codecs, one attempt per
label; read from git at ``--old``): the WARC records of sample_data/commoncrawl and
tests/data/warc, the 46 real article pages of benchmarks/data/article-extraction (served
with no charset header, as a crawler that kept no headers would store them), and the pages
tests/test_warc.py writes (windows-1252 / Shift_JIS / UTF-8, declared in the header, a
<meta> or nowhere).

    python benchmarks/bench_decode_changes.py [--old a64b93b]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datacurate.readers import warc  # noqa: E402
from datacurate.readers.base import ReadTask  # noqa: E402


def old_module(rev: str):
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:datacurate/readers/warc.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_warc.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_warc", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pages():
    """(name, payload, header charset, content type) of every shipped page."""
    files = sorted((ROOT / "tests/data/warc").glob("*")) + [ROOT / "sample_data/commoncrawl/sample.warc.gz"]
    for f in files:
        if f.suffix == ".md":
            continue
        fmt = "arc" if ".arc" in f.name else "warc"
        task = ReadTask(str(f), f.name, fmt, end=f.stat().st_size, size=f.stat().st_size)
        for rec in warc.records(task):
            if rec.damage is None and rec.warc_type in warc.DOCUMENTS:
                yield f"{f.name}@{rec.offset}", rec.payload, rec.charset, rec.content_type
    for f in sorted((ROOT / "benchmarks/data/article-extraction/html").glob("*.html.gz")):
        yield f.name, gzip.decompress(f.read_bytes()), None, "text/html"
    from tests.test_warc import build_warc

    test_warc = Path(tempfile.mkdtemp()) / "test_warc.warc.gz"
    build_warc(test_warc)
    task = ReadTask(str(test_warc), test_warc.name, "warc", end=test_warc.stat().st_size)
    for rec in warc.records(task):
        if rec.damage is None and rec.warc_type in warc.DOCUMENTS:
            yield rec.url, rec.payload, rec.charset, rec.content_type


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="a64b93b", help="the git revision of the decoder to compare with")
    args = ap.parse_args()
    old = old_module(args.old)
    n = changed = were_rejected = now_rejected = replaced = 0
    cpu = [0.0, 0.0]
    for name, payload, charset, ctype in pages():
        n += 1
        t0 = time.process_time()
        text0, reason0 = old.decode(payload, charset, ctype, "reject")
        t1 = time.process_time()
        text1, encoding, n_bad, reason1 = warc.decode(payload, charset, ctype)
        cpu[0] += t1 - t0
        cpu[1] += time.process_time() - t1
        were_rejected += reason0 is not None
        now_rejected += reason1 is not None
        replaced += n_bad > 0
        if text0 != text1 or reason0 != reason1:
            changed += 1
            print(f"changed: {name}: {reason0 or 'kept'} -> {reason1 or 'kept'} ({encoding}, {n_bad} U+FFFD)")
    print(f"{n} pages: {changed} decode differently; rejected before {were_rejected}, now {now_rejected}; "
          f"{replaced} with U+FFFD put in; decoding CPU seconds: before {cpu[0]:.3f}, now {cpu[1]:.3f}")


if __name__ == "__main__":
    main()
