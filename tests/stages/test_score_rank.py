"""``score_rank``: corpus-relative scores — percentile ranks, ensembles of fastText and encoder
scores (max or mean), a top fraction by the radix select, and Nemotron-CC's buckets as the
domains decompose's mixture and DoReMi read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import random_encoder  # noqa: E402


def _docs() -> pa.Table:
    rows = [json.loads(line) for name in ("news", "legal", "learned")
            for line in (REPO / f"sample_data/corpus/{name}.jsonl").open()][::4]
    return pa.table({"text": [r["text"] for r in rows]})


def weights(table, how):
    from datacurate.phases.ranking import weights

    return weights(table, how)


def mid_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The percentile rank by hand: the mass below plus half of its own value's, over all."""
    return np.array([(w[x < v].sum() + w[x == v].sum() / 2) / w.sum() for v in x])


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The sample documents scored by the shipped fastText quality model and a small encoder."""
    from datacurate.stages.model_classifier import ModelClassifier
    from datacurate.stages.quality import Quality

    t = _docs()
    path = random_encoder.build(tmp_path_factory.mktemp("m") / "bert", t["text"].to_pylist()[:60], "tiny-bert")
    t = Quality(min_score=0.0, languages=None)(t).drop_columns(["reject_reason"])
    return ModelClassifier(model=path, name="edu")(t).drop_columns(["reject_reason"])


@pytest.mark.parametrize("combine", ["max", "mean"])
def test_ensemble_of_percentile_ranks(scored, combine):
    from datacurate.stages.score_rank import ScoreRank

    out = ScoreRank(scores=["quality_score", "edu_score"], combine=combine, buckets=20, name="ens")(scored)
    mass = weights(scored, "tokens").astype(float)  # UTF-8 bytes: no tokenize ran
    q = mid_ranks(scored["quality_score"].to_numpy().astype(np.float64), mass)
    e = mid_ranks(scored["edu_score"].to_numpy().astype(np.float64), mass)
    want = np.maximum(q, e) if combine == "max" else (q + e) / 2
    got = out["ens_rank"].to_numpy()
    assert np.abs(got - want).max() < 1e-6  # token-weighted, exact: few documents, every bin refined
    assert out["ens_bucket"].to_pylist() == np.minimum((got * 20).astype(int), 19).tolist()
    if combine == "max":  # Nemotron-CC: the highest of the per-model buckets
        qb = ScoreRank(scores=["quality_score"], buckets=20, name="a")(scored)["a_bucket"].to_numpy()
        eb = ScoreRank(scores=["edu_score"], buckets=20, name="b")(scored)["b_bucket"].to_numpy()
        assert (out["ens_bucket"].to_numpy() == np.maximum(qb, eb)).all()


def test_top_fraction_of_a_fasttext_score(scored):
    from datacurate.stages.score_rank import ScoreRank

    n = scored.num_rows
    out = ScoreRank(scores=["quality_score"], top_fraction=0.1)(scored)
    kept = np.flatnonzero(out["reject_reason"].is_null().to_numpy(zero_copy_only=False))
    q = scored["quality_score"].to_numpy()
    assert len(kept) == round(0.1 * n)
    assert set(kept) == set(np.lexsort((np.arange(n), -q))[:len(kept)])  # the top, ties by position
    assert set(out["reject_reason"].drop_null().to_pylist()) == {"score_rank/not_top_fraction"}


def test_token_weighted_buckets_hold_equal_shares_of_tokens(scored):
    from datacurate.stages.score_rank import ScoreRank

    out = ScoreRank(scores=["edu_score"], buckets=4, name="b")(scored)
    mass = weights(scored, "tokens").astype(float)  # UTF-8 bytes: no tokenize ran
    share = np.bincount(out["b_bucket"].to_numpy(), weights=mass) / mass.sum()
    assert np.abs(share - 0.25).max() < mass.max() / mass.sum()  # within one document of a quarter


def test_buckets_are_domains_for_decompose_and_doremi(ray_session, tmp_path):
    """A real pipeline: the shipped quality model's score, bucketed by token-weighted
    percentile into ``domain``; decompose mixes by those domains and its shards (what DoReMi
    and train read) name them."""
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline
    from datacurate.train.data import ShardDataset

    docs = _docs()["text"].to_pylist()
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps({"id": f"d{i}", "text": t, "domain": "web"}) + b"\n"
                                                 for i, t in enumerate(docs)))
    out = tmp_path / "out"
    cfg = load_config({"input": str(tmp_path / "in.jsonl"), "output": str(out), "ray": {"progress": False},
                       "stages": [{"quality": {"min_score": 0.0, "languages": None}}, "tokenize",
                                  {"score_rank": {"scores": ["quality_score"], "buckets": 4, "name": "q",
                                                 "domain": "replace"}},
                                  {"decompose": {"min_log2": 4, "max_log2": 7,
                                                 "mixture": {"q-b03": 3, "q-b02": 1, "q-b01": 1, "q-b00": 1}}}]})
    run_pipeline(cfg)
    stats = json.loads((out / "stats.json").read_text())["stages"]
    per = json.loads((out / "shards" / "manifest.json").read_text())["per_domain"]
    assert sorted(per) == ["q-b00", "q-b01", "q-b02", "q-b03"]
    assert [per[f"q-b0{b}"]["weight"] for b in range(4)] == [1 / 6, 1 / 6, 1 / 6, 3 / 6]  # mixed by bucket
    tokens = np.array([per[f"q-b0{b}"]["tokens_in"] for b in range(4)])
    assert np.abs(tokens / tokens.sum() - 0.25).max() < 0.1  # a quarter of the tokens each, give or take a page
    assert sorted(ShardDataset(str(out / "shards")).domains) == sorted(per)  # what DoReMi and train read
    assert stats["score_rank:q"]["in"] == stats["score_rank:q"]["kept"] == len(docs)


def test_a_fasttext_stage_takes_the_keys(tmp_path):
    """``quality: {top_fraction: 0.1}`` is the quality stage judging nothing itself, then a
    score_rank stage over its score (DCLM's top 10 %); toxicity's top is the least toxic."""
    from datacurate.configs.pipeline import load_config

    (tmp_path / "in.jsonl").write_text('{"text": "x"}\n')
    cfg = load_config({"input": str(tmp_path / "in.jsonl"), "output": str(tmp_path / "out"),
                       "stages": [{"quality": {"top_fraction": 0.1}},
                                  {"toxicity": {"buckets": 20, "classifier": {"max_score": 0.5}}}]})
    names = [s.name for s in cfg.stages]
    assert names == ["quality", "score_rank", "toxicity", "score_rank"]
    q, qc, t, tc = (s.config for s in cfg.stages)
    assert q.min_score == 0.0 and (qc.scores, qc.top_fraction, qc.name) == (["quality_score"], 0.1, "quality")
    assert t.classifier.max_score == 0.5  # buckets alone keep the stage's own threshold
    assert (tc.scores, tc.invert, tc.buckets) == (["toxicity_score"], ["toxicity_score"], 20)
    assert [s.cls.stats_key(s.config) for s in cfg.stages][1::2] == ["score_rank:quality", "score_rank:toxicity"]


def test_inverted_scores_keep_the_lowest():
    from datacurate.stages.score_rank import ScoreRank

    tox = np.array([0.9, 0.1, 0.5, 0.05, 0.7, 0.2, 0.3, 0.95])
    t = pa.table({"text": ["a b c"] * len(tox), "toxicity_score": pa.array(tox, pa.float32())})
    out = ScoreRank(scores=["toxicity_score"], invert=["toxicity_score"], top_fraction=0.25, buckets=4,
                    weight="documents", name="tox")(t)
    kept = np.flatnonzero(out["reject_reason"].is_null().to_numpy(zero_copy_only=False))
    assert set(kept) == {1, 3}  # the least toxic quarter
    assert out["tox_bucket"].to_pylist() == [0, 3, 1, 3, 1, 2, 2, 0]  # the top bucket is the least toxic
