"""Ground truth for near-dedup: a corpus with planted copies, and precision / recall of
a clustering on the known pairs, by true Jaccard band.

``make_dup_corpus`` cuts real texts into originals (non-overlapping word windows, so
originals share no text), adds exact copies and near-copies at controlled word-edit
rates (each word is, with probability ``rate``, substituted, deleted or followed by an
inserted word, 50/25/25, words drawn from the whole corpus), and lists every known
pair with its true word-5-gram Jaccard on normalised text: (original, copy), copies of
one original (siblings), and random original pairs (negatives). ``pair_report``
gives, per Jaccard band, the share of pairs put in one cluster: recall above the
threshold, false-merge rate below it.
"""

from __future__ import annotations

from typing import Mapping, Sequence, Union

import numpy as np
import pyarrow as pa

from datacurate.stages.dedup_near import normalize

BANDS = (0.0, 0.5, 0.7, 0.85, 1.0)


def shingle_sets(texts: Sequence[str], n: int = 5) -> list[set]:
    """Word n-grams of each normalised text, as MinHash sees them (a text of fewer
    than n words is one shingle); plain Python sets, independent of the hashing."""
    out = []
    for text in normalize(pa.array(list(texts), pa.large_string())).to_pylist():
        words = [w for w in text.split(" ") if w]
        if len(words) < n:
            out.append({tuple(words)} if words else set())
        else:
            out.append({tuple(words[i : i + n]) for i in range(len(words) - n + 1)})
    return out


def jaccard(a: set, b: set) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _edit(words: list[str], rate: float, pool: list[str], rng: np.random.Generator) -> list[str]:
    out = []
    for w, u, op, pick in zip(words, rng.random(len(words)), rng.random(len(words)), rng.integers(0, len(pool), len(words))):
        if u >= rate:
            out.append(w)
        elif op < 0.5:
            out.append(pool[pick])  # substitution
        elif op < 0.75:
            continue  # deletion
        else:
            out.extend([w, pool[pick]])  # insertion
    return out


def dedup_pipeline(docs: str, out: str, threshold: float) -> dict:
    """The pipeline ``datacurate dedup-eval`` runs on ``docs``: near dedup alone."""
    return {"input": docs, "output": out, "stages": [{"near_dedup": {"threshold": threshold}}]}


def generate(source: str, n_docs: int, seed: int, out_dir: str) -> tuple[str, pa.Table]:
    """``datacurate dedup-eval --generate``: a planted-copy corpus from the texts of the
    ``*.jsonl`` files in ``source``, written to ``out_dir`` (docs.parquet, pairs.parquet);
    the docs' path and the pairs."""
    import glob
    import os

    import orjson
    import pyarrow.parquet as pq

    texts = []
    for path in sorted(glob.glob(os.path.join(source, "*.jsonl"))):
        with open(path, "rb") as f:
            texts += [orjson.loads(line)["text"] for line in f if line.strip()]
    docs, pairs = make_dup_corpus(texts, n_docs, [0.0, 0.02, 0.05, 0.1, 0.2, 0.3], seed=seed)
    docs_path = os.path.join(out_dir, "docs.parquet")
    pq.write_table(docs, docs_path)
    pq.write_table(pairs, os.path.join(out_dir, "pairs.parquet"))
    return docs_path, pairs


def read_pairs(path: str) -> pa.Table:
    """Known pairs from Parquet or JSONL, with columns id_a, id_b, jaccard (an InputError if one is missing)."""
    import orjson
    import pyarrow.parquet as pq

    from datacurate.formats.io import InputError

    if path.endswith(".parquet"):
        pairs = pq.read_table(path)
    else:
        with open(path, "rb") as f:
            pairs = pa.Table.from_pylist([orjson.loads(line) for line in f if line.strip()])
    for col in ("id_a", "id_b", "jaccard"):
        if col not in pairs.column_names:
            raise InputError(f"{path}: pairs need columns id_a, id_b, jaccard (missing {col})")
    return pairs


def read_clusters(run_dir: str) -> pa.Table:
    """(id, cluster_id) of every clustered document of a run's kept/ and rejected/ Parquet."""
    import glob
    import os

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(run_dir, "kept", "*.parquet"))
                   + glob.glob(os.path.join(run_dir, "rejected", "*.parquet")))
    t = pa.concat_tables([pq.read_table(f, columns=["id", "cluster_id"]) for f in files])
    return t.filter(pc.is_valid(t["cluster_id"]))


def make_dup_corpus(texts: Sequence[str], n_docs: int, edit_rates: Sequence[float], seed: int,
                    doc_words: int = 300, copy_frac: float = 0.5, ngram: int = 5) -> tuple[pa.Table, pa.Table]:
    """(docs: id, text, orig; pairs: id_a, id_b, kind, edit_rate, jaccard).

    About ``copy_frac`` of the ``n_docs`` are copies; copy i has edit rate
    ``edit_rates[i % len(edit_rates)]`` (0 = exact copy) and a random original.
    Originals are windows of ``doc_words`` words (~2 KB of English); the docs are
    shuffled, so input order says nothing about which is the original.
    """
    rng = np.random.default_rng(seed)
    windows = []
    for text in texts:
        words = text.split()
        windows += [words[i : i + doc_words] for i in range(0, len(words) - doc_words // 2, doc_words)]
    n_copies = int(n_docs * copy_frac)
    n_orig = n_docs - n_copies
    if len(windows) < n_orig:
        raise ValueError(f"texts give {len(windows)} windows of {doc_words} words, need {n_orig}")
    pool = [w for win in windows for w in win]
    originals = [windows[i] for i in rng.choice(len(windows), n_orig, replace=False)]
    docs = [(" ".join(w), -1, 0.0) for w in originals]  # (text, original index, edit rate)
    for i in range(n_copies):
        rate = float(edit_rates[i % len(edit_rates)])
        o = int(rng.integers(n_orig))
        docs.append((" ".join(_edit(originals[o], rate, pool, rng)), o, rate))
    order = rng.permutation(len(docs))
    ids = np.empty(len(docs), dtype=object)
    ids[order] = [f"doc-{k:06d}" for k in range(len(docs))]
    shingles = shingle_sets([t for t, _, _ in docs], ngram)

    pairs = []
    copies_of: dict[int, list[int]] = {}
    for i, (_, o, rate) in enumerate(docs):
        if o >= 0:
            pairs.append((ids[o], ids[i], "copy", rate, jaccard(shingles[o], shingles[i])))
            copies_of.setdefault(o, []).append(i)
    for o, cs in copies_of.items():
        for a, b in zip(cs[:-1], cs[1:]):
            pairs.append((ids[a], ids[b], "sibling", max(docs[a][2], docs[b][2]), jaccard(shingles[a], shingles[b])))
    for a, b in rng.integers(0, n_orig, (n_copies, 2)):
        if a != b:
            pairs.append((ids[a], ids[b], "random", 1.0, jaccard(shingles[a], shingles[b])))
    docs_table = pa.table({
        "id": [ids[i] for i in order],
        "text": [docs[i][0] for i in order],
        "orig": [ids[docs[i][1]] if docs[i][1] >= 0 else None for i in order],
    })
    cols = list(zip(*pairs))
    pairs_table = pa.table({"id_a": cols[0], "id_b": cols[1], "kind": cols[2],
                            "edit_rate": pa.array(cols[3], pa.float64()), "jaccard": pa.array(cols[4], pa.float64())})
    return docs_table, pairs_table


def pair_report(pairs: pa.Table, cluster_of: Union[Mapping[str, object], pa.Table], threshold: float = 0.85,
                bands: Sequence[float] = BANDS) -> dict:
    """Share of known pairs merged (same cluster), per true-Jaccard band, plus precision
    and recall with positives = pairs of Jaccard >= ``threshold``.

    ``cluster_of`` maps id -> cluster (a dict, or a table with ``id`` and ``cluster_id``);
    an id it lacks is a singleton.
    """
    if isinstance(cluster_of, pa.Table):
        cluster_of = dict(zip(cluster_of.column("id").to_pylist(), cluster_of.column("cluster_id").to_pylist()))
    a, b = pairs.column("id_a").to_pylist(), pairs.column("id_b").to_pylist()
    merged = np.array([x in cluster_of and y in cluster_of and cluster_of[x] == cluster_of[y] for x, y in zip(a, b)], bool)
    jac = np.asarray(pairs.column("jaccard"), dtype=np.float64)
    report: dict = {"bands": {}}
    for i, (lo, hi) in enumerate(zip(bands[:-1], bands[1:])):
        last = i == len(bands) - 2
        inside = (jac >= lo) & ((jac <= hi) if last else (jac < hi))
        n = int(inside.sum())
        report["bands"][f"[{lo:.2f},{hi:.2f}{']' if last else ')'}"] = {
            "pairs": n, "merged": int(merged[inside].sum()), "merged_frac": float(merged[inside].mean()) if n else None}
    pos = jac >= threshold
    tp = int((merged & pos).sum())
    report.update({
        "threshold": threshold, "pairs": len(jac), "positives": int(pos.sum()), "merged": int(merged.sum()),
        "recall": tp / int(pos.sum()) if pos.any() else None,
        "precision": tp / int(merged.sum()) if merged.any() else None,
        "merged_le_0.5": float(merged[jac <= 0.5].mean()) if (jac <= 0.5).any() else None,
    })
    return report
