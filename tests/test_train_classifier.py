"""``train_classifier`` / ``datacurate train-classifier``: a tiny model in seconds.

Positives are passages of sample_data's target/ Brown samples, negatives keyword spam
and boilerplate made here; ids ``<doc>#<n>`` group the passages of one document, and
the held-out split must keep every group on one side.
"""

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from datacurate.classify import (
    FastTextScorer, TrainConfig, binary_metrics, heldout_mask, load_train_config, normalize, roc_auc, train_classifier,
)
from datacurate.cli import main
from datacurate.configs.pipeline import ConfigError
from datacurate.stages.quality import Quality

TARGET = Path(__file__).resolve().parents[1] / "sample_data" / "target" / "target.jsonl"
FAST = {"fasttext": {"epoch": 10, "dim": 16, "bucket": 20_000}, "quantize": {"cutoff": 2_000}}


def passages(words: list[str], n: int = 40):
    return [" ".join(words[i:i + n]) for i in range(0, len(words) - n + 1, n)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = random.Random(0)
    d = tmp_path_factory.mktemp("clf")
    pos, neg, mixed = [], [], []
    for k, line in enumerate(TARGET.open()):
        words = json.loads(line)["text"].split()
        for j, p in enumerate(passages(words)[:12]):
            pos.append({"id": f"target{k}#{j}", "text": p})
        vocab = sorted({w.strip(".,;:'\"()").lower() for w in words if len(w) > 5 and w.isalpha()})
        for j in range(8):  # spam and boilerplate made from the same document's words
            kw = rng.sample(vocab, 3)
            spam = " ".join(f"buy {rng.choice(kw)} cheap {rng.choice(kw)} online best price" for _ in range(6))
            nav = "\n".join(["Home | Shop | Login", f"Top {kw[0]} deals", "Accept cookies", "Share | Tweet | Email",
                             f"{kw[1].title()} {kw[2]} sale", "(c) 2024 All rights reserved"])
            neg.append({"id": f"target{k}#neg{j}", "text": spam if j % 2 else nav})
    for r in pos:
        mixed.append({**r, "label": "hq"})
    for r in neg:
        mixed.append({**r, "label": "lq"})
    mixed.append({"id": "odd#0", "text": "a record with another label", "label": "maybe"})
    for name, recs in (("pos.jsonl", pos), ("neg.jsonl", neg), ("mixed.jsonl", mixed)):
        (d / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (d / "neg.jsonl").open("a").write("{not json\n")
    return d


@pytest.fixture(scope="module")
def card(data):
    return train_classifier(output=str(data / "m" / "tiny.ftz"), positive=[str(data / "pos.jsonl")],
                            negative=[str(data / "neg.jsonl")], positive_label="hq", negative_label="lq",
                            notes={"labels": "by construction"}, **FAST)


def test_card_fields_and_metrics(card, data):
    model = data / "m" / "tiny.ftz"
    assert json.loads(model.with_suffix(".json").read_text()) == card
    assert card["size_bytes"] == model.stat().st_size < 1_000_000
    assert card["labels"] == {"positive": "hq", "negative": "lq"} and card["notes"] == {"labels": "by construction"}
    assert card["normalization"]["lowercase"] is False
    assert card["params"]["fasttext"]["epoch"] == 10 and card["params"]["quantize"]["cutoff"] == 2_000
    assert card["data"]["skipped_records"] == 1  # the malformed line
    tr, ho = card["data"]["train"], card["data"]["heldout"]
    assert tr["positive"] and tr["negative"] and ho["positive"] and ho["negative"]
    assert card["split"]["groups_train"] + card["split"]["groups_heldout"] == 30
    m = card["heldout"]
    for key in ("precision", "recall", "f1", "roc_auc", "length_only_roc_auc", "roc_auc_by_length_tercile"):
        assert key in m
    assert m["n"] == ho["examples"] and m["roc_auc"] > 0.95 and m["f1"] > 0.8


def test_model_is_usable_by_the_quality_stage(card, data):
    stage = Quality(model=str(data / "m" / "tiny.ftz"), languages=None)
    out = stage(pa.table({"text": pa.array([json.loads(next(TARGET.open()))["text"],
                                            "buy shoes cheap shoes online best price " * 5], pa.large_string())}))
    s = out.column("quality_score").to_pylist()
    assert s[0] > 0.5 > s[1]


def test_split_is_by_source_document():
    groups = np.array([f"doc{i // 5}" for i in range(500)], dtype=object)  # 100 documents x 5 passages
    test = heldout_mask(groups, 0.2, seed=0)
    for g in set(groups):
        assert len(set(test[groups == g])) == 1
    assert 0.1 < test.mean() < 0.3
    assert not np.array_equal(test, heldout_mask(groups, 0.2, seed=1))
    assert np.array_equal(test[:250], heldout_mask(groups[:250], 0.2, seed=0))  # stable as data grows


def test_training_is_deterministic(card, data):
    again = train_classifier(output=str(data / "m2" / "tiny.ftz"), positive=[str(data / "pos.jsonl")],
                             negative=[str(data / "neg.jsonl")], positive_label="hq", negative_label="lq", **FAST)
    assert again["sha256"] == card["sha256"]


def test_label_column_and_cli(data, capsys):
    out = data / "cli" / "m.ftz"
    rc = main(["train-classifier", "--data", str(data / "mixed.jsonl"), "--output", str(out),
               "--set", "positive_label=hq", "--set", "negative_label=lq", "--set", "lowercase=true",
               "--set", "fasttext.epoch=10", "--set", "fasttext.dim=16", "--set", "quantize.enabled=false"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "ROC-AUC" in printed and "card:" in printed
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["data"]["skipped_records"] == 1  # the "maybe" label
    assert card["normalization"]["lowercase"] is True
    scorer = FastTextScorer(out, "hq")  # inference reads the normalisation back from the card
    assert scorer.lowercase is True and scorer.split_punctuation is True
    bare = data / "cli" / "bare.ftz"  # a model without a card: fastText's usual input
    bare.write_bytes(out.read_bytes())
    assert FastTextScorer(bare, "hq").split_punctuation is False


def test_cli_errors(data, tmp_path, capsys):
    assert main(["train-classifier", "--positive", str(data / "pos.jsonl"), "--output", str(tmp_path / "x.ftz")]) == 2
    assert "give positive and negative" in capsys.readouterr().err
    assert main(["train-classifier", "--positive", str(data / "pos.jsonl"), "--negative", str(data / "neg.jsonl"),
                 "--set", "fasttext.epok=3"]) == 2
    assert "did you mean 'epoch'" in capsys.readouterr().err
    one_doc = tmp_path / "one.jsonl"
    one_doc.write_text(json.dumps({"id": "a#1", "text": "x y"}) + "\n")
    assert main(["train-classifier", "--positive", str(one_doc), "--negative", str(one_doc),
                 "--output", str(tmp_path / "y.ftz")]) == 2
    assert "split" in capsys.readouterr().err


def test_yaml_config(tmp_path):
    cfg_file = tmp_path / "train.yaml"
    cfg_file.write_text("positive: [a.jsonl]\nnegative: [b.jsonl]\nfasttext: {epoch: 7}\nholdout_frac: 0.1\n")
    cfg = load_train_config(str(cfg_file), ["fasttext.dim=8"], output="m.ftz")
    assert isinstance(cfg, TrainConfig) and cfg.fasttext.epoch == 7 and cfg.fasttext.dim == 8
    assert cfg.holdout_frac == 0.1 and cfg.output == "m.ftz"
    with pytest.raises(ConfigError, match="holdout_frac"):
        load_train_config(None, ["holdout_frac=1.5"], positive=["a"], negative=["b"])


def test_metric_helpers():
    y = np.array([0, 0, 1, 1, 1], dtype=bool)
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8, 0.9]), y) == pytest.approx(5 / 6)
    assert roc_auc(np.array([0.5] * 5), y) == 0.5  # ties count half
    m = binary_metrics(np.array([0.1, 0.6, 0.7, 0.2, 0.9]), y)
    assert (m["precision"], m["recall"], m["f1"]) == (pytest.approx(2 / 3, abs=1e-4), pytest.approx(2 / 3, abs=1e-4),
                                                      pytest.approx(2 / 3, abs=1e-4))


def test_normalization():
    texts = ["Hello,  World!\nNew\tline\u2028x\u00a0y", None, " \n "]
    out = normalize(texts, lowercase=True, split_punctuation=True).to_pylist()
    assert out[0].split(" ") != out[0].split() and "\n" not in out[0]  # runs of spaces stay (fastText skips them)
    assert out[0].split() == ["hello", ",", "world", "!", "new", "line", "x", "y"]
    assert out[1:] == ["", ""]
    plain = normalize(texts).to_pylist()  # fastText's usual input: only the line breaks and odd spaces go
    assert plain[0].split() == ["Hello,", "World!", "New", "line", "x", "y"] and "\n" not in plain[0]


def test_character_ngrams_score_unseen_spellings(tmp_path):
    """With ``minn``/``maxn`` a word never seen in training scores like the words it shares
    character n-grams with; without them it is out of vocabulary and carries no signal."""
    rng = random.Random(1)
    filler = "the a of and to in is it that was for on with as at by this from".split()
    recs = []
    for i in range(400):
        bad = i % 2 == 0
        core = rng.choice(["grumblefrotz", "grumblefrotzes", "grumblefrotzing"] if bad else ["teapot", "garden"])
        words = rng.sample(filler, 6) + [core]
        rng.shuffle(words)
        recs.append({"id": f"d{i}#0", "text": " ".join(words), "label": "bad" if bad else "good"})
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    probe = ["the grumblefrotzed of and", "the gardens of and"]  # unseen inflections of both classes
    scores = {}
    for name, ft in (("words", {}), ("chars", {"minn": 3, "maxn": 5})):
        out = tmp_path / name / "m.ftz"
        train_classifier(output=str(out), data=[str(path)], positive_label="bad", negative_label="good",
                         fasttext={"epoch": 10, "dim": 8, "bucket": 20_000, "min_count": 1, **ft},
                         quantize={"enabled": False})
        scores[name] = FastTextScorer(out, "bad").score(probe)
    assert abs(scores["words"][0] - scores["words"][1]) < 0.2  # both unseen: only the filler words count
    assert scores["chars"][0] > 0.9 and scores["chars"][1] < 0.1
    with pytest.raises(ConfigError, match="minn"):
        train_classifier(output=str(tmp_path / "x.ftz"), data=[str(path)], positive_label="bad",
                         negative_label="good", fasttext={"minn": 4, "maxn": 2})


def test_train_only_data_stays_on_the_training_side(data, tmp_path):
    """``train_only`` examples are trained on but never held out, and the held-out split of
    the main data is the same with or without them; here they teach a word the main
    data never shows, which the model then scores by."""
    extra = tmp_path / "extra.jsonl"
    recs = [{"id": f"x{i}#0", "text": f"zorblax {i} zorblax", "label": "lq"} for i in range(60)]
    extra.write_text("".join(json.dumps(r) + "\n" for r in recs))
    base = dict(positive=[str(data / "pos.jsonl")], negative=[str(data / "neg.jsonl")], positive_label="hq",
                negative_label="lq", **FAST)
    plain = train_classifier(output=str(tmp_path / "a" / "m.ftz"), **base)
    more = train_classifier(output=str(tmp_path / "b" / "m.ftz"), train_only=[str(extra)], **base)
    assert more["data"]["train_only"] == {"examples": 60, "positive": 0, "negative": 60, "chars": sum(
        len(r["text"]) for r in recs)}
    assert more["data"]["heldout"] == plain["data"]["heldout"] and more["data"]["train_only_files"] == [str(extra)]
    assert more["split"]["groups_heldout"] == plain["split"]["groups_heldout"]
    assert more["split"]["groups_train"] == plain["split"]["groups_train"] + 60
    assert more["data"]["train"]["examples"] == plain["data"]["train"]["examples"] + 60
    probe = ["zorblax zorblax zorblax"]
    assert FastTextScorer(tmp_path / "b" / "m.ftz", "hq").score(probe)[0] < 0.2
    cfg = load_train_config(None, ["train_only=[e.jsonl]"], positive=["a"], negative=["b"])
    assert cfg.train_only == ["e.jsonl"]
    # a class that happens to be called "train_only" is an ordinary class: its files are split as usual
    named = train_classifier(output=str(tmp_path / "c" / "m.ftz"), **{**base, "positive_label": "train_only"})
    assert named["data"]["heldout"] == plain["data"]["heldout"] and "train_only" not in named["data"]
