"""Side-by-side benchmark: writing Megatron's indexed dataset (.bin + .idx), one core.

Same tokens for every writer: ``--docs`` synthetic documents (uint16 ids, lengths drawn
from a geometric distribution of mean ``--mean-tokens``, four domains), held as the
engine's work parts hold them (Arrow tables with the ``_tokens`` list column, ``--parts``
parts), already in memory: tokenisation is not timed.

* **datacurate**: the ``export_tokens`` stage's own phases without Ray:
  ``write_megatron_part`` per part (one piece per prefix) then ``megatron.merge`` per
  prefix, as the driver runs it; once with one prefix, once ``split_by: domain``.
* **megatron-core**: ``IndexedDatasetBuilder`` (Megatron-LM's ``preprocess_data.py``
  writer): ``add_document`` per document, ``finalize``.
* **numpy**: a plain baseline: each part's flat ids appended to one open ``.bin``, the
  ``.idx`` from all lengths at the end (megatron-core's ``_IndexWriter``).

datatrove's ``MegatronDocumentTokenizer`` is not in the race: it tokenises inside its
writer step (``tokenizer_name_or_path`` + ``encode_batch``), so it cannot be given the
same tokens; ``bench_tokenize.py`` compares tokenisation itself.

MB/s = bytes written (``.bin`` + ``.idx``) / CPU seconds of the process, best of
``--repeats``; wall seconds beside it. The unsplit outputs are checked byte-identical
across the three writers, and each export is read back by megatron-core's
``IndexedDataset``.

    PYTHONPATH=. python benchmarks/bench_export_megatron.py --docs 1000000
"""

from __future__ import annotations

from _common import ROOT, loadavg, machine_info, replace_block  # noqa: E402  first: pins one core

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from datacurate.formats import megatron  # noqa: E402
from datacurate.stages.export_tokens import ExportTokensConfig, write_megatron_part  # noqa: E402
from datacurate.stages.tokenize import TOKENS  # noqa: E402

DOMAINS = ["fiction", "legal", "news", "web"]


def make_parts(docs: int, mean: int, parts: int, seed: int = 0) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    out = []
    for p, rows in enumerate(np.array_split(np.arange(docs), parts)):
        n = len(rows)
        lengths = rng.geometric(1 / mean, size=n).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        ids = rng.integers(0, 8192, size=int(offsets[-1]), dtype=np.uint32)
        out.append(pa.table({"id": [f"d{i}" for i in rows], "domain": rng.choice(DOMAINS, size=n),
                             TOKENS: pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ids))}))
    return out


def run_datacurate(parts: list[pa.Table], root: str, split: bool) -> list[str]:
    cfg = ExportTokensConfig(split_by="domain" if split else None)
    dtype = np.dtype(np.uint16)
    pieces = []
    for i, t in enumerate(parts):
        pieces += write_megatron_part(t, cfg, f"{i:06d}", os.path.join(root, "pieces"), dtype)
    by: dict = {}
    for p in sorted(pieces, key=lambda p: p["stem"]):
        by.setdefault(p["domain"], []).append(p["stem"])
    prefixes = []
    for d, stems in sorted(by.items()):
        prefixes.append(os.path.join(root, "out", f"{d}_text_document" if d else "text_document"))
        megatron.merge(prefixes[-1], stems, dtype)
    return prefixes


def run_megatron_core(parts: list[pa.Table], root: str) -> list[str]:
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    prefix = os.path.join(root, "out", "text_document")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
    for t in parts:
        col = t.column(TOKENS).combine_chunks()
        flat = np.asarray(col.flatten()).astype(np.uint16)
        offsets = np.asarray(col.offsets)
        for a, b in zip(offsets[:-1], offsets[1:]):
            builder.add_document(torch.from_numpy(flat[a:b]), [int(b - a)])
    builder.finalize(prefix + ".idx")
    return [prefix]


def run_numpy(parts: list[pa.Table], root: str) -> list[str]:
    from megatron.core.datasets.indexed_dataset import _IndexWriter

    prefix = os.path.join(root, "out", "text_document")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    lengths = []
    with open(prefix + ".bin", "wb") as f:
        for t in parts:
            col = t.column(TOKENS).combine_chunks()
            np.asarray(col.flatten()).astype("<u2").tofile(f)
            lengths.append(np.diff(np.asarray(col.offsets)))
    lengths = np.concatenate(lengths)
    with _IndexWriter(prefix + ".idx", np.uint16) as w:
        w.write(lengths, None, np.arange(len(lengths) + 1))
    return [prefix]


def measure(name: str, fn, parts, repeats: int) -> dict:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    best = None
    for _ in range(repeats):
        root = tempfile.mkdtemp(prefix="bench-megatron-", dir=os.environ.get("BENCH_TMP"))
        c0, w0 = time.process_time(), time.perf_counter()
        prefixes = fn(parts, root)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        files = [os.path.join(root, "out", f) for f in os.listdir(os.path.join(root, "out"))]
        nbytes = sum(os.path.getsize(f) for f in files)
        docs = sum(len(IndexedDataset(p)) for p in prefixes)
        digest = None
        if len(prefixes) == 1:
            import hashlib

            digest = {ext: hashlib.sha256(open(prefixes[0] + ext, "rb").read()).hexdigest()[:16] for ext in (".bin", ".idx")}
        row = {"writer": name, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "mb": round(nbytes / 1e6, 1),
               "mb_per_cpu_s": round(nbytes / 1e6 / cpu, 1), "files": len(files), "documents": docs,
               "sha256_16": digest}
        shutil.rmtree(root)
        if best is None or row["cpu_s"] < best["cpu_s"]:
            best = row
        print(json.dumps(row), flush=True)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--mean-tokens", type=int, default=256)
    ap.add_argument("--parts", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--writers", default="datacurate,datacurate-split,numpy,megatron-core")
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()
    parts = make_parts(args.docs, args.mean_tokens, args.parts)
    tokens = sum(len(t.column(TOKENS).combine_chunks().flatten()) for t in parts)
    fns = {"datacurate": lambda p, r: run_datacurate(p, r, False), "datacurate-split": lambda p, r: run_datacurate(p, r, True),
           "numpy": run_numpy, "megatron-core": run_megatron_core}
    rows = [measure(w, fns[w], parts, args.repeats) for w in args.writers.split(",")]
    same = {json.dumps(r["sha256_16"]) for r in rows if r["sha256_16"]}
    res = {"docs": args.docs, "tokens": tokens, "parts": args.parts, "identical_unsplit_bytes": len(same) == 1,
           "rows": rows, "loadavg": loadavg(), "machine": machine_info(["numpy", "pyarrow", "megatron-core", "torch"])}
    out = ROOT / "benchmarks" / "results" / f"export_megatron_{args.docs}.json"
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items() if k != "machine"}, indent=2))
    if args.no_readme:
        return
    lines = [f"| {r['writer']} | {r['mb']} | {r['files']} | {r['cpu_s']} | {r['wall_s']} | {r['mb_per_cpu_s']} |"
             for r in rows]
    body = ("<!-- export_megatron:begin -->\n"
            f"{args.docs:,} documents, {tokens:,} tokens (uint16), {args.parts} work parts, one core "
            f"(load average {' '.join(res['loadavg'])}); unsplit outputs byte-identical across writers: "
            f"{res['identical_unsplit_bytes']}.\n\n"
            "| writer | MB written | files | CPU s | wall s | MB / CPU s |\n|---|---:|---:|---:|---:|---:|\n"
            + "\n".join(lines) + "\n<!-- export_megatron:end -->")
    replace_block(ROOT / "benchmarks" / "README.md", "<!-- export_megatron:begin -->", "<!-- export_megatron:end -->",
                  body)


if __name__ == "__main__":
    main()
