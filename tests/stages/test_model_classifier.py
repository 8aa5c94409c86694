"""``model_classifier``: small models built here from configs (random seeded weights, a
WordPiece tokenizer trained with ``tokenizers``, never a download) score through the stage
exactly as the same model run directly in a plain loop, documents longer than the context
included; through a real local Ray pipeline too (the actor pool)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import random_encoder  # noqa: E402


def _texts(n: int = 40) -> list[str]:
    rows = [json.loads(line)["text"] for line in (REPO / "sample_data/corpus/news.jsonl").open()]
    return [t[:150] if i % 3 == 0 else t for i, t in enumerate(rows[:n])]  # a third shorter than the context


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root, texts = tmp_path_factory.mktemp("models"), _texts(60)
    return {"bert": random_encoder.build(root / "bert", texts, "tiny-bert"),
            "deberta": random_encoder.build(root / "deberta", texts, "tiny-deberta", labels=["High", "Medium", "Low"]),
            "nemo": random_encoder.build(root / "nemo", texts, "nemo-deberta", labels=["News", "Sports", "Science"])}


def plain_loop(path: str, texts: list[str], nemo: bool = False) -> np.ndarray:
    """The model run directly, one document at a time, truncated to its context: (N, L) logits."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if nemo:
        from safetensors.torch import load_file

        cfg = json.loads((Path(path) / "config.json").read_text())
        from transformers import AutoConfig

        state = load_file(f"{path}/model.safetensors")
        body = AutoModel.from_config(AutoConfig.from_pretrained(cfg["base_model"]))
        body.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
        fc = torch.nn.Linear(body.config.hidden_size, len(cfg["id2label"]))
        fc.load_state_dict({"weight": state["fc.weight"], "bias": state["fc.bias"]})
        body.eval()
        run = lambda enc: fc(body(**enc).last_hidden_state[:, 0, :])  # noqa: E731
    else:
        model = AutoModelForSequenceClassification.from_pretrained(path).eval()
        run = lambda enc: model(**enc).logits  # noqa: E731
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt", truncation=True)
            enc.pop("token_type_ids", None) if nemo else None
            out.append(run(enc)[0].numpy())
    return np.stack(out)


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_regression_scores_equal_the_plain_loop_beyond_the_context(models):
    from datacurate.stages.model_classifier import ModelClassifier
    from transformers import AutoTokenizer

    texts = _texts(40)
    lengths = [len(x) for x in AutoTokenizer.from_pretrained(models["bert"])(texts)["input_ids"]]
    assert sum(n > 64 for n in lengths) >= 10 and min(lengths) < 64  # longer than the context, and shorter
    stage = ModelClassifier(model=models["bert"], name="edu", int_score=[0, 5], batch_tokens=256)
    out = stage(pa.table({"text": texts}))
    ref = plain_loop(models["bert"], texts)[:, 0]
    got = out["edu_score"].to_numpy()
    assert np.abs(got - ref).max() < 1e-4 and np.std(ref) > 1e-3  # scores that differ, equal to the loop's
    assert out["edu_int_score"].to_pylist() == [int(round(min(max(x, 0), 5))) for x in ref]
    assert out["reject_reason"].null_count == len(texts)  # no threshold: every row kept


def test_softmax_labels_and_thresholds(models):
    from datacurate.stages.model_classifier import ModelClassifier

    texts = _texts(30)
    probs = _softmax(plain_loop(models["deberta"], texts))
    labels = np.array(["High", "Medium", "Low"])[probs.argmax(1)]
    out = ModelClassifier(model=models["deberta"], name="q", label="High", min_score=float(np.median(probs[:, 0])),
                          batch_tokens=200)(pa.table({"text": texts}))
    assert np.abs(out["q_score"].to_numpy() - probs[:, 0]).max() < 1e-4
    assert out["q_label"].to_pylist() == labels.tolist()
    low = probs[:, 0] < np.median(probs[:, 0])
    assert out["reject_reason"].to_pylist() == ["model_classifier/low_score" if x else None for x in low]
    keep = ModelClassifier(model=models["deberta"], name="q", keep_labels=["Low"])(pa.table({"text": texts}))
    assert keep["reject_reason"].to_pylist() == [None if lab == "Low" else "model_classifier/label" for lab in labels]


def test_nemo_deberta_layout(models):
    from datacurate.stages.model_classifier import ModelClassifier

    texts = _texts(20)
    probs = _softmax(plain_loop(models["nemo"], texts, nemo=True))
    out = ModelClassifier(model=models["nemo"], name="dom")(pa.table({"text": texts}))
    assert np.abs(out["dom_score"].to_numpy() - probs.max(1)).max() < 1e-4
    assert out["dom_label"].to_pylist() == np.array(["News", "Sports", "Science"])[probs.argmax(1)].tolist()


def test_top_fraction_and_buckets(models):
    from datacurate.stages.model_classifier import ModelClassifier

    texts = _texts(40)
    ref = plain_loop(models["bert"], texts)[:, 0]
    out = ModelClassifier(model=models["bert"], name="edu", top_fraction=0.25, buckets=4,
                          weight="documents")(pa.table({"text": texts}))
    kept = out["reject_reason"].is_null().to_numpy(zero_copy_only=False)
    assert kept.sum() == 10 and set(np.flatnonzero(kept)) == set(np.argsort(-ref)[:10])
    b = out["edu_bucket"].to_numpy()
    assert np.bincount(b).tolist() == [10, 10, 10, 10]  # by document: quarter each
    assert (np.argsort(np.argsort(ref)) // 10 == b).all()  # the bucket is the score's quartile


def test_a_missing_model_is_one_config_error(tmp_path):
    from datacurate.configs.pipeline import ConfigError, load_config

    (tmp_path / "in.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ConfigError) as e:
        load_config({"input": str(tmp_path / "in.jsonl"), "output": str(tmp_path / "out"),
                     "stages": [{"model_classifier": {"model": "nobody/not-a-cached-model"}}]})
    msg = str(e.value)
    assert "\n" not in msg and "model_classifier" in msg and "nor in the Hugging Face cache" in msg
    with pytest.raises(ConfigError, match="preset"):
        load_config({"input": str(tmp_path / "in.jsonl"), "output": str(tmp_path / "out"),
                     "stages": [{"model_classifier": {}}]})


def test_presets_carry_the_cards():
    from datacurate.stages.model_classifier import PRESETS

    edu = PRESETS["fineweb-edu"]
    assert (edu["head"], edu["max_length"], edu["int_score"], edu["min_int_score"]) == ("regression", 512, [0, 5], 3)
    assert PRESETS["nemo-quality"]["max_length"] == 1024 and PRESETS["nemo-domain"]["max_chars"] == 2000


def test_through_a_local_ray_pipeline_on_the_actor_pool(models, ray_session, tmp_path):
    """The engine's Ray path (``small_input_docs: 0``: tokenizer tasks, a Ray Data actor pool,
    then the calibration's per-part tasks over several parts): the same scores as the plain
    loop, the exact top half, every row counted."""
    from datacurate.configs.pipeline import load_config
    from datacurate.engine import run_pipeline

    texts = _texts(40)
    for k in range(2):  # two input files: several parts
        (tmp_path / f"in{k}.jsonl").write_bytes(b"".join(orjson.dumps({"id": f"d{i}", "text": t}) + b"\n"
                                                         for i, t in enumerate(texts) if i % 2 == k))
    out = tmp_path / "out"
    cfg = load_config({"input": [str(tmp_path / "in0.jsonl"), str(tmp_path / "in1.jsonl")], "output": str(out),
                       "ray": {"progress": False, "small_input_docs": 0},
                       "stages": [{"model_classifier": {"model": models["bert"], "name": "edu", "batch_tokens": 256,
                                                        "top_fraction": 0.5, "buckets": 4, "weight": "documents"}}]})
    run_pipeline(cfg)
    ref = plain_loop(models["bert"], texts)[:, 0]
    rows = pa.concat_tables([pq.read_table(p, columns=["id", "edu_score", "edu_bucket"])
                             for d in ("kept", "rejected") for p in sorted((out / d).glob("*.parquet"))])
    got = dict(zip(rows["id"].to_pylist(), zip(rows["edu_score"].to_pylist(), rows["edu_bucket"].to_pylist())))
    assert np.abs(np.array([got[f"d{i}"][0] for i in range(len(texts))]) - ref).max() < 1e-4
    assert [got[f"d{i}"][1] for i in range(len(texts))] == (np.argsort(np.argsort(ref)) // 10).tolist()
    kept = {r for p in (out / "kept").glob("*.parquet") for r in pq.read_table(p, columns=["id"])["id"].to_pylist()}
    assert kept == {f"d{i}" for i in np.argsort(-ref)[:20]}
    st = json.loads((out / "stats.json").read_text())["stages"]["model_classifier:edu"]
    assert (st["in"], st["kept"]) == (40, 20) and st["metrics"]["device"] == "cpu"
    assert st["rejected"] == {"model_classifier/not_top_fraction": 20}


def test_readme_example_runs(ray_session, tmp_path, monkeypatch):
    """The README's ``model_classifier`` example, as written, in a scratch directory."""
    from tests.test_readme import run_block

    scope = run_block("### `model_classifier` and `score_rank`", tmp_path, monkeypatch, ("sample_data", "benchmarks"))
    st = scope["report"]["stages"]["score_rank:ens"]
    assert st["kept"] == round(st["in"] / 2) and scope["report"]["stages"]["model_classifier:edu"]["kept"] == st["in"]


def _cache(root: Path, repo: str, build) -> None:
    """``repo`` in a Hugging Face hub cache at ``root``, as a download would leave it."""
    rev = "0" * 40
    d = root / f"models--{repo.replace('/', '--')}"
    (d / "refs").mkdir(parents=True)
    (d / "refs" / "main").write_text(rev)
    build(d / "snapshots" / rev)


def test_presets_from_the_hub_cache(tmp_path, monkeypatch):
    """The presets resolve their hub ids from the user's cache only (no download), and score
    as the cards say: FineWeb-Edu's logit, its int score and keep >= 3; NeMo's domain
    classifier in its own layout (its base model's config resolved from the cache too)."""
    import huggingface_hub
    import torch
    from safetensors.torch import load_file, save_file

    from datacurate.stages.model_classifier import ModelClassifier

    texts = _texts(30)
    cache = tmp_path / "hub"

    def edu(d):
        random_encoder.build(d, texts, "tiny-bert")
        state = load_file(d / "model.safetensors")
        state["classifier.weight"] = state["classifier.weight"] * 0.5  # scores on the card's 0-5 scale
        state["classifier.bias"] = torch.tensor([4.0])
        save_file(state, str(d / "model.safetensors"), metadata={"format": "pt"})

    _cache(cache, "HuggingFaceFW/fineweb-edu-classifier", edu)
    _cache(cache, "microsoft/deberta-v3-base", lambda d: None)
    _cache(cache, "nvidia/domain-classifier", lambda d: random_encoder.build(d, texts, "nemo-deberta",
                                                                            labels=["Finance", "Health", "News"]))
    base = cache / "models--nvidia--domain-classifier/snapshots" / ("0" * 40) / "base"
    deberta = cache / "models--microsoft--deberta-v3-base/snapshots" / ("0" * 40)
    deberta.parent.mkdir(parents=True)
    base.rename(deberta)  # the layout's base_model is a hub id now, as in NeMo's own config
    cfg_path = cache / "models--nvidia--domain-classifier/snapshots" / ("0" * 40) / "config.json"
    cfg_path.write_text(cfg_path.read_text().replace(str(base), "microsoft/deberta-v3-base"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    out = ModelClassifier(preset="fineweb-edu")(pa.table({"text": texts}))
    snap = str(cache / "models--HuggingFaceFW--fineweb-edu-classifier/snapshots" / ("0" * 40))
    ref = plain_loop(snap, texts)[:, 0]
    ints = np.round(np.clip(ref, 0, 5)).astype(int)
    assert np.abs(out["fineweb_edu_score"].to_numpy() - ref).max() < 1e-4 and len(set(ints)) >= 3
    assert out["fineweb_edu_int_score"].to_pylist() == ints.tolist()
    assert out["reject_reason"].to_pylist() == [None if i >= 3 else "model_classifier/low_score" for i in ints]

    dom = ModelClassifier(preset="nemo-domain")(pa.table({"text": texts}))
    assert set(dom["nemo_domain_label"].to_pylist()) <= {"Finance", "Health", "News"}
    assert dom["reject_reason"].null_count == len(texts)  # no keep in NeMo's card: annotate only


def test_batches_sort_by_length_under_the_token_budget():
    from datacurate.models.hf_classifier import batches

    lengths = np.array([5, 64, 30, 64, 1, 17, 64, 40])
    got = batches(lengths, 128)
    assert sorted(np.concatenate(got).tolist()) == list(range(len(lengths)))  # every row once
    assert all(len(b) * lengths[b].max() <= 128 for b in got)  # padded tokens within the budget
    flat = np.concatenate(got)
    assert (np.diff(lengths[flat]) <= 0).all()  # longest first: a batch's rows are alike
    assert [len(b) for b in batches(np.array([300, 10]), 128)] == [1, 1]  # a row over the budget goes alone


def test_rows_of_other_languages_are_not_scored_and_kept(models):
    from datacurate.stages.model_classifier import ModelClassifier

    texts = _texts(20)
    lang = ["en" if i % 4 else "de" for i in range(20)]
    out = ModelClassifier(model=models["bert"], name="edu", languages=["en"], top_fraction=0.5,
                          weight="documents")(pa.table({"text": texts, "lang": lang}))
    en = np.array(lang) == "en"
    assert out["edu_score"].is_null().to_numpy(zero_copy_only=False).tolist() == (~en).tolist()
    kept = out["reject_reason"].is_null().to_numpy(zero_copy_only=False)
    assert kept[~en].all() and kept[en].sum() == round(0.5 * en.sum())  # the top half of the scored ones
