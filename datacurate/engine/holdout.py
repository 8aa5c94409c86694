"""Held-out documents of ``datacurate ablate``: a share of every input domain that no arm
trains on, evaluated per domain (``heldout/<domain>``), so an ablation reports the mean
and the worst domain as DoReMi's paper does (Xie et al. 2023: per-domain perplexity on
The Pile).

Which documents are held out depends on ``(holdout.seed, id)`` alone (crc32, no process
salt): every arm, seed and rerun sees the same split. The arms' input becomes the rest,
one JSONL file of ``{id, text, domain}`` (other fields of a record are not carried);
the held-out documents of a domain go to ``heldout-<domain>.jsonl``. A record the reader
rejects (bad UTF-8, too large) is never held out; it goes to the arms' input with a null
text, which their curation rejects (``holdout.json`` counts them).
"""

from __future__ import annotations

import json
import os
import re
import zlib

from datacurate.configs.pipeline import ConfigError
from datacurate.configs.input import InputConfig
from datacurate.formats.io import plan_reads, read_task


def held(seed: int, doc_id: str, fraction: float) -> bool:
    return zlib.crc32(f"{seed}:{doc_id}".encode()) % 1_000_000 < fraction * 1_000_000


def split_input(input_cfg: InputConfig, fraction: float, seed: int, max_docs: int | None, out_dir: str) -> dict:
    """Write ``out_dir/train.jsonl`` and ``out_dir/heldout-<domain>.jsonl``; returns
    ``{"train": path, "heldout": {domain: path}, "counts": {...}}``."""
    os.makedirs(out_dir, exist_ok=True)
    train_path = os.path.join(out_dir, "train.jsonl")
    rows: dict[str, list[str]] = {}
    n_train = n_read_rejects = 0
    with open(train_path + ".tmp", "w", encoding="utf-8") as train:
        for task in plan_reads(input_cfg):
            for t in read_task(task, input_cfg):
                for doc_id, text, domain, reason in zip(*(t.column(c).to_pylist()
                                                          for c in ("id", "text", "domain", "reject_reason"))):
                    if reason is None and held(seed, doc_id, fraction) and \
                            (max_docs is None or len(rows.get(domain, [])) < max_docs):
                        rows.setdefault(domain, []).append(text)
                        continue
                    n_read_rejects += reason is not None
                    n_train += 1
                    train.write(json.dumps({"id": doc_id, "text": text, "domain": domain}, ensure_ascii=False) + "\n")
    os.replace(train_path + ".tmp", train_path)
    if len(rows) < 1:
        raise ConfigError(f"holdout: fraction {fraction} holds out no document of the input")
    heldout = {}
    for domain, texts in sorted(rows.items()):
        path = os.path.join(out_dir, f"heldout-{re.sub(r'[^A-Za-z0-9_.-]', '_', domain)}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
        heldout[domain] = path
    return {"train": train_path, "heldout": heldout,
            "counts": {"train_docs": n_train, "read_rejects_in_train": n_read_rejects,
                       "heldout_docs": {d: len(v) for d, v in sorted(rows.items())}}}
