"""langid per language (issue 47): scripts, per-language minimum scores, a GlotLID-style model."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from datacurate.stages.heuristics import Heuristics
from datacurate.stages.langid import LangId
from datacurate.text.scripts import scripts_of

DATA = Path(__file__).resolve().parent.parent / "data" / "langrules" / "man1_man.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text().splitlines()]


def text_of(lang: str) -> str:
    return next(r["text"] for r in ROWS if r["expected_lang"] == lang)


def test_scripts_lid176_cannot_tell():
    sr_cyrl = text_of("sr")
    texts = [sr_cyrl, "Ovo je tekst na srpskom jeziku, pisan latinicom.", text_of("zh"),
             "這是我們的國家，現在的問題很難。", text_of("ja"), text_of("ko"),
             "यह हिंदी में लिखा गया वाक्य है।", "yah hindi mein likha gaya vakya hai.", "", None]
    assert scripts_of(pa.array(texts, pa.large_string())).to_pylist() == [
        "Cyrl", "Latn", "Hans", "Hant", "Jpan", "Hang", "Deva", "Latn", "Zyyy", "Zyyy"]
    hant = next(r["text"] for r in ROWS if r["id"] == "bash1-zh_TW")  # real traditional Chinese
    out = LangId()(pa.table({"text": pa.array([sr_cyrl, text_of("zh"), hant], pa.large_string())}))
    assert out.column("lang").to_pylist() == ["sr", "zh", "zh"]
    assert out.column("lang_script").to_pylist() == ["Cyrl", "Hans", "Hant"]


def test_per_language_minimum_scores(tmp_path):
    texts = [text_of("fr"), text_of("da"), text_of("de")]
    scores = LangId()(pa.table({"text": texts})).column("lang_score").to_pylist()
    path = tmp_path / "thresholds.yaml"  # as `datacurate calibrate` writes
    path.write_text(yaml.safe_dump({"languages": {"da": {"langid": {"min_score": round(scores[1] + 0.01, 3)}}}}))
    out = LangId(thresholds=str(path), min_scores={"de": 0.5})(pa.table({"text": texts}))
    # no keep-list: every language, each at its own minimum (fr: min_score, 0.65)
    assert out.column("reject_reason").to_pylist() == [None, "langid/low_score", None]
    fw2 = LangId(thresholds="fineweb2").min_scores
    assert fw2["fr"] == 0.824 and fw2["sr_Latn"] != fw2["sr_Cyrl"]


TRAIN = """
import sys, fasttext
fasttext.FastText.eprint = lambda *a, **k: None
m = fasttext.train_supervised(input=sys.argv[1], epoch=25, lr=0.5, wordNgrams=1, minn=2, maxn=4, dim=16, seed=1,
                              thread=1, verbose=0)
m.save_model(sys.argv[2])
"""


def test_a_glotlid_style_model_plugs_in_through_model(tmp_path):
    """A small fastText LID model trained here on the man(1) passages, with GlotLID's labels
    (ISO 639-3 + script): its labels map onto the codes the rule table knows."""
    labels = {"fr": "fra_Latn", "de": "deu_Latn", "ru": "rus_Cyrl", "sr": "srp_Cyrl", "pl": "pol_Latn"}
    rng = random.Random(0)
    lines = []
    for lang, label in labels.items():
        sentences = [s for p in text_of(lang).split("\n\n") for s in p.split(". ") if len(s) > 20]
        for _ in range(60):
            lines.append(f"__label__{label} " + " ".join(rng.sample(sentences, 2)).replace("\n", " "))
    rng.shuffle(lines)
    train = tmp_path / "train.txt"
    train.write_text("\n".join(lines) + "\n")
    model = tmp_path / "glot.bin"
    subprocess.run([sys.executable, "-c", TRAIN, str(train), str(model)], check=True)
    stage = LangId(model=str(model), languages=["fr", "ru", "sr"])
    texts = [text_of(lang) for lang in labels]
    out = stage(pa.table({"text": pa.array(texts, pa.large_string())}))
    assert out.column("lang").to_pylist() == list(labels)  # fra_Latn -> fr ... onto lid.176's codes
    assert out.column("lang_script").to_pylist() == ["Latn", "Latn", "Cyrl", "Cyrl", "Latn"]
    assert out.column("reject_reason").to_pylist() == [None, "langid/language", None, None, "langid/language"]
    # heuristics find each language's rules by those codes
    h = Heuristics()(out.drop_columns(["reject_reason"]))
    assert h.column("reject_reason").to_pylist() == [None] * 5


def test_scripts_of_real_messages_in_nine_scripts():
    """Debian's translated messages (tests/data/words/passages.json): each passage's script."""
    data = json.loads((Path(__file__).resolve().parent.parent / "data" / "words" / "passages.json").read_text())
    texts, want = [], []
    for entry in data.values():
        for p in entry["passages"]:
            texts.append(p)
            want.append(entry["script"])
    table = pa.table({"text": pa.array(texts, pa.large_string())})
    got = LangId()(table).column("lang_script").to_pylist()  # the script among its language's
    assert got == want and len(set(want)) == 9
    # by letters alone, two help texts full of Latin command names count as Latin
    alone = scripts_of(table.column("text")).to_pylist()
    assert sum(a != w for a, w in zip(alone, want)) == 2


def test_glotlid_labels_map_onto_the_codes_the_rules_know():
    from datacurate.stages.langid import label_map
    from datacurate.text.langrules import fineweb2

    assert label_map(["hin_Latn", "hin_Deva", "cmn_Hani", "aai_Latn", "en", "zh"]) == {
        "hin_Latn": ("hi", "Latn"), "hin_Deva": ("hi", "Deva"), "cmn_Hani": ("zh", "Hani"),
        "aai_Latn": ("aai", "Latn"), "en": ("en", None), "zh": ("zh", None)}
    rows = Heuristics().table.rows(pa.array(["hi", "hi"]), pa.array(["Latn", "Deva"]), 2)
    want = [fineweb2()["configs"][k]["new_line_ratio"] for k in ("hin_Latn", "hin_Deva")]
    assert list(rows["fineweb.max_list_ratio"]) == want


def test_max_threshold_caps_the_table_not_the_explicit_scores():
    capped = LangId(thresholds="fineweb2", max_threshold=0.65, min_scores={"ru": 0.95}).min_scores
    full = LangId(thresholds="fineweb2").min_scores
    assert full["ne"] > 0.65 and capped["ne"] == 0.65  # FineWeb-2's Nepali 0.896 is GlotLID's scale
    assert capped["km"] == full["km"] < 0.65  # lower cut-offs stay
    assert capped["ru"] == 0.95  # min_scores: as written
    with pytest.raises(ValueError, match="max_threshold"):
        LangId(max_threshold=1.5)
