"""Stage ``model_classifier``: Hugging Face encoders (FineWeb-Edu's, NeMo's) on GPU actors.

Any Hugging Face sequence classifier or regressor, on GPU actors when the cluster has GPUs.

FineWeb-Edu (Penedo et al. 2024) scored 15T tokens with an encoder (arctic-embed-m and a
regression head, 0-5, kept ``int_score >= 3``); NeMo Curator runs DeBERTa quality and
domain classifiers on GPU actors, its published floor for the domain classifier >= 3,500
docs/s on 8 GPUs. Here the model is a local directory or a hub id from the user's cache
(never a download); ``preset:`` brings a published model's card (its truncation and the
score made from its logits). It writes ``<name>_score`` (plus ``<name>_label`` for a
softmax head, ``<name>_int_score`` where the card rounds, ``<name>_bucket`` with
``buckets``). With no threshold it annotates and keeps every row; ``min_score``,
``min_int_score``, ``keep_labels``, ``top_fraction`` and ``min_bucket`` filter.

A global stage, for two reasons: a top fraction and buckets need the whole corpus
(:mod:`datacurate.phases.ranking`), and the model runs on a pool of workers of its own
(:meth:`Blocks.map_pool`) fed by tokenizers on CPU workers, not in the per-file CPU tasks
of the map stages: on a cluster with GPUs, ``num_gpus`` each, bf16, rows sorted by length
in batches under a token budget. The price: the pipeline is cut there (one extra write of
the rows before it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import ORD, REJECT_REASON, TEXT
from datacurate.formats import storage
from datacurate.models import hf_classifier as hf
from datacurate.phases import ranking as rk
from datacurate.stages import model_blocks as mb
from datacurate.stages.base import GlobalStage, first_reason
from datacurate.core.schema import DOMAIN
from datacurate.stages.classifier_keys import CalibrationKeys, bucket_domains, bucket_reason, with_domain

# the cards of published classifiers: model, head, truncation, score (and the keep they use)
PRESETS = {
    "fineweb-edu": {"model": "HuggingFaceFW/fineweb-edu-classifier", "name": "fineweb_edu", "head": "regression",
                    "max_length": 512, "int_score": [0, 5], "min_int_score": 3},
    "nemo-quality": {"model": "nvidia/quality-classifier-deberta", "name": "nemo_quality", "head": "softmax",
                     "max_length": 1024, "max_chars": 6000},
    "nemo-domain": {"model": "nvidia/domain-classifier", "name": "nemo_domain", "head": "softmax",
                    "max_length": 512, "max_chars": 2000},
}


@dataclass
class ModelClassifierConfig(CalibrationKeys):
    model: Optional[str] = opt(None, "a local directory or a Hugging Face hub id in the cache (never downloaded)")
    preset: Optional[Literal["fineweb-edu", "nemo-quality", "nemo-domain"]] = opt(
        None, "a published model's card: model, head, truncation, score (keys given here win)")
    name: Optional[str] = opt(None, "column prefix: <name>_score, <name>_label ...; null: the preset's, else 'model'")
    head: Optional[Literal["regression", "softmax"]] = opt(
        None, "regression: score = logit 0; softmax: P(label); null: the preset's, else by the model's outputs")
    label: Optional[str] = opt(None, "softmax head: the label whose probability is the score; null: the top label's")
    max_length: Optional[int] = opt(None, "tokens per document (the card's truncation); null: the preset's, else "
                                    "the model's context")
    max_chars: Optional[int] = opt(None, "characters given to the tokenizer first (NeMo's classifiers); null: all")
    int_score: Optional[list[float]] = opt(None, "[lo, hi]: <name>_int_score = round(clamp(score, lo, hi))")
    min_score: Optional[float] = opt(None, "reject documents scoring below this")
    min_int_score: Optional[int] = opt(None, "reject documents whose int_score is below this (FineWeb-Edu: 3)")
    keep_labels: Optional[list[str]] = opt(None, "softmax head: reject documents whose top label is not listed")
    languages: Optional[list[str]] = opt(None, "score rows with these lang values; null = all")
    batch_tokens: Optional[int] = opt(None, "padded tokens per model batch (rows sorted by length); null: 131,072 on "
                                      "GPUs (NeMo's 256 x 512), max_length on CPUs")
    num_gpus: float = opt(1.0, "GPUs per model actor when the cluster has GPUs")
    cpus_per_actor: int = opt(1, "CPUs per model actor (on a cluster without GPUs: torch threads)")
    concurrency: Optional[int] = opt(None, "model actors; null: one per GPU, else one per cpus_per_actor CPUs")
    dtype: Literal["auto", "float32", "bfloat16"] = opt("auto", "auto: bfloat16 on GPUs, float32 on CPUs")

    def validate(self) -> None:
        preset = PRESETS.get(self.preset or "", {})
        for key, value in preset.items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        self.name = self.name or "model"
        if self.model is None:
            raise ValueError("give a model (a directory or a hub id in the cache) or a preset")
        if not self.name.isidentifier():
            raise ValueError(f"name {self.name!r}: must be a plain identifier (it prefixes column names)")
        if self.int_score is not None and len(self.int_score) != 2:
            raise ValueError("int_score must be [lo, hi]")
        super().validate()
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise ValueError("needs transformers: pip install 'datacurate[classifiers]'") from None
        if Path(self.model).expanduser().is_dir():  # workers run elsewhere: an absolute path
            self.model = str(Path(self.model).expanduser().resolve())
        path = hf.resolve(self.model)  # ModelNotFound (a ValueError): one line, before any work
        self.max_length = min(self.max_length or hf.context_length(path), hf.context_length(path))  # no more than it reads
        if self.batch_tokens is not None and self.batch_tokens < self.max_length:
            raise ValueError("batch_tokens must hold one document of max_length tokens")
        if self.head is None:
            self.head = "regression" if len(hf.id2label(path)) <= 1 else "softmax"
        if self.min_int_score is not None and self.int_score is None:
            raise ValueError("min_int_score needs int_score ([lo, hi])")
        if self.keep_labels is not None and self.head != "softmax":
            raise ValueError("keep_labels needs a softmax head (labels)")
        if self.label is not None and self.label not in hf.id2label(path).values():
            raise ValueError(f"label {self.label!r} is not one of the model's labels {sorted(hf.id2label(path).values())}")

    def card(self) -> mb.Card:
        return mb.Card(hf.resolve(self.model), self.name, self.head, self.label, self.max_length, self.max_chars,
                       tuple(self.int_score) if self.int_score else None)


@functools.lru_cache(maxsize=None)
def _columns(name: str, head: str, int_score: bool, buckets: bool) -> type:
    """The stage class of one configuration: its columns carry the configured ``name``."""
    cols = mb.columns(name, head, int_score, buckets)
    return type(f"ModelClassifier_{name}", (ModelClassifier,), {"columns": cols, "__module__": __name__})


class ModelClassifier(GlobalStage):
    name = "model_classifier"
    Config = ModelClassifierConfig
    columns: dict = {}  # per configuration: :meth:`for_config`
    uses_accelerators = True

    @classmethod
    def for_config(cls, config: ModelClassifierConfig) -> type:
        return _columns(config.name, config.head, config.int_score is not None, config.buckets is not None)

    @classmethod
    def stats_key(cls, config) -> str:
        return f"{cls.name}:{config.name}"

    def __init__(self, config=None, **params):
        super().__init__(config, **params)
        self.columns = self.for_config(self.config).columns

    def run_global(self, ctx) -> dict:
        c = self.config
        if not ctx.files:
            return {"scored": 0}
        d = ctx.scratch(f"model_classifier_{c.name}")
        card, gpus = c.card(), ctx.accelerators()
        device, dtype = ("cuda", "bfloat16") if gpus else ("cpu", "float32")
        dtype = dtype if c.dtype == "auto" else c.dtype
        if gpus:
            actors = c.concurrency or max(1, int(gpus // c.num_gpus))
        else:
            actors = c.concurrency or max(1, ctx.cpus() // c.cpus_per_actor)
        batch_tokens = c.batch_tokens or default_batch_tokens(bool(gpus), c.max_length)
        batch_rows = max(1, 4 * batch_tokens // c.max_length)  # rows handed to a worker at once
        (ctx.read(ctx.files, [ORD, TEXT, "lang", "n_tokens"])
            .map("tokenize", mb.tokenize_block, card=card, languages=c.languages, weight=c.weight)
            .map_pool("score", mb.BlockScorer, (card, device, dtype, batch_tokens), batch_rows,
                      gpus=c.num_gpus if gpus else 0, cpus=c.cpus_per_actor, concurrency=actors)
            .map("save", mb.save_block, d=d)
            .rows())
        scored = sum(ctx.map_files("gather", mb.gather, d=d))
        cal = _calibration(c)
        cdf_path, thr, metrics = rk.run(ctx, d, cal) if cal.top_fraction or cal.buckets else (None, None, {})
        dec = ctx.map_files("decide", _phase_decide, c=c, d=d, cdf_path=cdf_path, thr=thr,
                            out_dir=ctx.decisions_dir, compression=ctx.compression)
        labels: dict = {}
        for r in dec:
            for k, v in r["labels"].items():
                labels[k] = labels.get(k, 0) + v
        metrics.update(scored=scored, device=device, dtype=dtype, actors=actors, model=c.model)
        if labels:
            metrics["labels"] = labels
        return metrics

    def apply(self, table: pa.Table, decisions: pa.Table):
        cols, reasons = super().apply(table, decisions)
        return with_domain(table, decisions, cols), reasons



def default_batch_tokens(gpu: bool, max_length: int) -> int:
    """Padded tokens per batch: NeMo's 256 x 512 on a GPU; on a CPU one full-length document
    (short ones batched together): bigger batches were slower there (40 sample documents, one
    thread: 0.95x / 0.90x / 0.84x a per-document loop's speed at 512 / 2,048 / 16,384 tokens;
    benchmarks/README.md)."""
    return 131_072 if gpu else max_length


def _calibration(c: ModelClassifierConfig) -> rk.Calibration:
    return rk.Calibration([f"{c.name}_score"], "max", c.top_fraction, c.buckets, c.weight)


def _phase_decide(part: str, c: ModelClassifierConfig, d: str, cdf_path, thr, out_dir: str, compression: str) -> dict:
    from datacurate.formats.io import write_atomic

    if not storage.exists(rk.scores_path(d, part)):
        return {"labels": {}}
    t = storage.read_parquet(rk.scores_path(d, part))
    n, p = t.num_rows, c.name
    score = t[f"{p}_score"].to_numpy(zero_copy_only=False)
    scored = ~np.isnan(score)
    got = rk.decide(d, part, _calibration(c), cdf_path, thr) if c.top_fraction or c.buckets else None
    rules = []
    if c.min_score is not None:
        rules.append(("model_classifier/low_score", scored & (score < c.min_score)))
    if c.min_int_score is not None:
        ints = t[f"{p}_int_score"].fill_null(c.min_int_score).to_numpy()
        rules.append(("model_classifier/low_score", ints < c.min_int_score))
    if c.keep_labels is not None:
        ok = pc.is_in(t[f"{p}_label"], pa.array(c.keep_labels, pa.string())).fill_null(True)
        rules.append(("model_classifier/label", ~np.asarray(ok)))
    cols = {ORD: t[ORD], **{k: t[k] for k in mb.columns(p, c.head, c.int_score is not None, False)}}
    if got is not None:
        rules.append(("model_classifier/not_top_fraction", ~got["top"]))
        if c.buckets is not None:
            cols[f"{p}_bucket"] = pa.array(got["bucket"], pa.int32(), mask=got["bucket"] < 0)
            rules += bucket_reason(c, got["bucket"], "model_classifier")
            if c.domain is not None:
                dom = storage.read_parquet(part, columns=[ORD, DOMAIN])  # the part's rows, in _ord order as t
                dom = dom.take(pc.sort_indices(dom.column(ORD)))
                cols[DOMAIN] = bucket_domains(c, p, got["bucket"], dom.column(DOMAIN))
    cols[REJECT_REASON] = first_reason(n, rules)
    write_atomic(pa.table(cols), storage.join(out_dir, part.rsplit("/", 1)[-1]), compression)
    labels = pc.value_counts(t[f"{p}_label"]).to_pylist() if c.head == "softmax" else []
    return {"labels": {v["values"]: v["counts"] for v in labels if v["values"] is not None}}
