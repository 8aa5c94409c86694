"""Per-language rules (issue 47): FineWeb-2's configs as data, thresholds per row by ``lang``.

Text: man-db's ``man(1)`` in 18 languages (tests/data/langrules/README.md).
"""

import json
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from datacurate.stages.heuristics import Heuristics, HeuristicsConfig
from datacurate.stages.langid import LangId
from datacurate.text.langrules import fineweb2

DATA = Path(__file__).resolve().parent.parent / "data" / "langrules" / "man1_man.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text().splitlines()]


def table(rows=ROWS) -> pa.Table:
    return pa.table({"id": [r["id"] for r in rows], "text": pa.array([r["text"] for r in rows], pa.large_string())})


def test_every_lid176_language_has_rules():
    import fasttext

    model = Path(__file__).resolve().parents[2] / "datacurate" / "models" / "lid.176.ftz"
    labels = {lab[9:] for lab in fasttext.load_model(str(model)).get_labels()}
    lid = fineweb2()["lid176"]
    assert set(lid) == labels and len(labels) == 176
    without = sorted(c for c, s in lid.items() if not s)
    assert without == ["eml", "en"]  # English keeps FineWeb's own; Emilian-Romagnol has no FineWeb-2 config
    assert lid["sr"] == {"Cyrl": "srp_Cyrl", "Latn": "srp_Latn"} and set(lid["hi"]) == {"Deva", "Latn"}
    fra = fineweb2()["configs"]["fra_Latn"]
    assert fra["line_punct_thr"] == 0.1 and "de" in fra["stopwords"]  # FineWeb-2's figures, as published


def test_real_prose_in_every_language_is_kept_with_its_rules_not_with_english_ones():
    out = LangId()(table())
    assert out.column("lang").to_pylist() == [r["expected_lang"] for r in ROWS]
    annotated = out.drop_columns(["reject_reason"])
    per_lang = Heuristics()(annotated).column("reject_reason").to_pylist()
    english = Heuristics(language_rules="none")(annotated).column("reject_reason").to_pylist()
    assert per_lang == [None] * len(ROWS)  # Japanese and Chinese with their segmented words
    # English stop words reject most of them, English word lengths the Japanese and Chinese (the issue's finding)
    assert sum(e == "gopher/stop_words" for e in english) >= 12
    cjk = [e for e, r in zip(english, ROWS) if r["expected_lang"] in ("ja", "zh")]
    assert cjk == ["gopher/mean_word_length"] * 3  # ja, zh Hans, zh Hant


def test_thresholds_are_per_row_and_english_keeps_its_own():
    cfg = HeuristicsConfig()
    r = cfg.table().rows(pa.array(["en", "fr", "zh", None, "xx"]), None, 5)
    assert list(r["gopher_quality.min_mean_word_length"][:3]) == [3.0, 2.0, 1.0]
    assert list(r["fineweb.max_dup_line_char_ratio"][:3]) == [0.01, 0.1, 0.1]  # FineWeb-2's global change
    assert r["fineweb.max_short_line_ratio"][1] == np.inf and r["c4.enabled"][1] == 0  # no short-line rule, no C4
    assert r["c4.enabled"][0] == 1 and r.unknown == {"xx"}  # und (no text): the defaults, no warning
    script = cfg.table().rows(pa.array(["sr", "sr", "hi"]), pa.array(["Latn", "Cyrl", "Latn"]), 3)
    want = [fineweb2()["configs"][k]["line_punct_thr"] for k in ("srp_Latn", "srp_Cyrl", "hin_Latn")]
    assert list(script["fineweb.min_line_punct_ratio"]) == want
    # labels of a GlotLID-style model that lid.176 lacks, and labels carrying their script
    other = cfg.table().rows(pa.array(["aai", "sr_Latn", "fra_Latn"]), pa.array(["Latn", None, None]), 3)
    want = [fineweb2()["configs"][k]["line_punct_thr"] for k in ("aai_Latn", "srp_Latn", "fra_Latn")]
    assert list(other["fineweb.min_line_punct_ratio"]) == want and not other.unknown


def test_a_language_without_rules_gets_the_default_and_one_warning(caplog):
    stage = Heuristics()
    batch = pa.table({"text": pa.array([ROWS[-1]["text"]] * 3, pa.large_string()), "lang": ["xx", "xx", "en"]})
    with caplog.at_level(logging.WARNING, logger="datacurate.stages.heuristics"):
        first = stage(batch).column("reject_reason").to_pylist()
        stage(batch)
    assert first == [None, None, None]  # English prose under English (default) rules
    warned = [rec.getMessage() for rec in caplog.records]
    assert len(warned) == 1 and "'xx'" in warned[0]
    assert stage.metrics(stage(batch))["default_thresholds"] == {"xx": 2}  # stats.json names them once per run


def test_stop_words_are_per_language():
    ru = next(r["text"] for r in ROWS if r["expected_lang"] == "ru")
    batch = pa.table({"text": pa.array([ru, ru], pa.large_string()), "lang": ["ru", "fr"]})
    out = Heuristics(gopher_repetition={"enabled": False}, fineweb={"enabled": False}, c4={"enabled": False})(batch)
    assert out.column("reject_reason").to_pylist() == [None, "gopher/stop_words"]  # Russian words are no French stop words


def test_user_thresholds_and_overrides_win(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"languages": {"fr": {"fineweb": {"max_list_ratio": 0.001}}}}))
    fr = next(r["text"] for r in ROWS if r["expected_lang"] == "fr")
    batch = pa.table({"text": pa.array([fr], pa.large_string()), "lang": ["fr"]})
    assert Heuristics(thresholds=str(path))(batch).column("reject_reason").to_pylist() == ["fineweb/list_ratio"]
    over = Heuristics(thresholds=str(path), per_language={"fr": {"fineweb": {"max_list_ratio": 0.5}}})
    assert over(batch).column("reject_reason").to_pylist() == [None]
    with pytest.raises(ValueError, match="unknown keys"):
        HeuristicsConfig(per_language={"fr": {"fineweb": {"max_lst_ratio": 0.5}}}).validate()


def test_sentence_ends_per_script():
    from datacurate.stages.heuristics import Heuristics as H

    hi = "यह एक वाक्य है। यह दूसरा वाक्य है। तीसरा वाक्य यहाँ है। चौथा वाक्य है। पाँचवाँ वाक्य है।"
    zh = "这是第一句。这是第二句！这是第三句？这是第四句。这是第五句。"
    stage = H(gopher_quality={"enabled": False}, gopher_repetition={"enabled": False}, fineweb={"enabled": False},
              per_language={"hi": {"c4": {"enabled": True}}, "zh": {"c4": {"enabled": True, "min_words_per_line": 1}}})
    batch = pa.table({"text": pa.array([hi, zh], pa.large_string()), "lang": ["hi", "zh"]})
    # five sentences each, ended by the script's own full stop (a Chinese line is one whitespace token:
    # C4's words-per-line rule needs segmented words, so it is set to 1 here)
    assert stage(batch).column("reject_reason").to_pylist() == [None, None]


def test_stages_heuristics_prints_the_per_language_table(capsys):
    from datacurate.cli import main

    assert main(["stages", "heuristics"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ") and
            len(line.split()) >= 9 and line.split()[1] in ("default",) + tuple(fineweb2()["configs"])}
    assert len([k for k in rows if "_" not in k]) == 176  # every lid.176 language
    assert rows["fr"][:3] == ["fr", "fra_Latn", "2-11"] and rows["en"][1] == "default"
    assert rows["sr_Latn"][1] == "srp_Latn" and rows["zh"][1] == "cmn_Hani"


def test_stop_words_are_compared_as_words_are():
    """FineWeb-2's Tibetan stop words end with the tsheg, which our words lose (a separator)."""
    from datacurate.text.langrules import stop_list

    bo = fineweb2()["configs"]["bod_Tibt"]["stopwords"]
    assert "དང་" in bo and "དང" in stop_list(bo) and "།" not in stop_list(bo)
    words = pa.array(["དང", "ལ", "ཀ", "The"])
    r = HeuristicsConfig().table().rows(pa.array(["bo", "en"]), None, 2)
    assert list(r.stop_word_hits(words, np.array([0, 0, 0, 1]))) == [True, True, False, True]


def test_stop_words_match_decomposed_accents():
    """Vietnamese written with combining marks (NFD, as the UDHR's is) matches FineWeb-2's
    composed (NFC) stop words: both sides are compared in NFC."""
    import unicodedata

    from datacurate.stages.heuristics import Heuristics
    from datacurate.text.words import words_of

    text = ("Mọi người sinh ra đều được tự do và bình đẳng về nhân phẩm và quyền lợi. "
            "Mọi người đều được tạo hóa ban cho lý trí và lương tâm.")
    nfd = unicodedata.normalize("NFD", text)
    assert nfd != text
    stage = Heuristics()
    table = pa.table({"text": [text, nfd], "lang": ["vi", "vi"]})
    words = words_of(table.column("text").combine_chunks(), "vi")
    hits = stage.rows(table).stop_word_hits(words.values, words.doc)
    per_doc = np.bincount(words.doc[hits], minlength=2)
    assert per_doc[0] >= 5 and per_doc[1] == per_doc[0]
