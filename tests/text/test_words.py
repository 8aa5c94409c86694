"""Words for every script (issue 47, item 2) on real text.

Passages: translated messages of Debian 12's apt, dpkg, libgtk2.0-common and iso-codes
catalogues (tests/data/words/passages.json, built by build_passages.py there; GPL-2+ /
LGPL-2+), and the sample corpus's man pages (sample_data/README.md names their sources).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pytest

from datacurate.core.coerce import ConfigError
from datacurate.text import segmenters as seg
from datacurate.text import textstats as ts
from datacurate.text import words as w

ROOT = Path(__file__).resolve().parents[2]
PASSAGES = json.loads((ROOT / "tests/data/words/passages.json").read_text())


def texts_of(lang: str) -> list[str]:
    return PASSAGES[lang]["passages"]


def doc_words(pieces: ts.Pieces, d: int) -> list[str]:
    return pieces.values[pieces.offsets[d]:pieces.offsets[d + 1]].to_pylist()


def sample(name: str) -> pa.Array:
    return pj.read_json(ROOT / "sample_data/corpus" / name).column("text").combine_chunks()


@pytest.mark.parametrize("name", ["news.jsonl", "learned.jsonl", "technical_multilingual.jsonl"])
def test_spaced_text_unchanged(name):
    """Rows without an unspaced script give exactly the whitespace tokens and words of today."""
    texts = sample(name)
    texts = texts.filter(pa.array(~w.unspaced_rows(texts)))
    assert len(texts) > 100
    for new, old in ((w.split_words(texts, "en"), ts.split_whitespace(texts)), (w.words_of(texts, "en"), ts.words_of(texts))):
        assert new.values.equals(old.values)
        assert np.array_equal(new.offsets, old.offsets) and np.array_equal(new.doc, old.doc)


# (language, mean word length range, at least this many times the whitespace tokens); the
# Burmese translator spaced phrases and the Lao text is country names, one space apart, so
# there whitespace already finds some words
@pytest.mark.parametrize("lang,lo,hi,more", [("zh", 1.3, 2.6, 2.5), ("ja", 1.3, 3.0, 2.5), ("th", 2.0, 6.0, 2.5),
                                             ("km", 2.0, 7.0, 2.5), ("my", 2.0, 8.0, 2.0), ("dz", 1.5, 5.0, 2.5),
                                             ("lo", 2.0, 7.0, 1.8)])
def test_unspaced_scripts_give_words(lang, lo, hi, more):
    """Mean word length is a word's, not a sentence's; whitespace tokens were several times longer."""
    texts = pa.array(texts_of(lang))
    words = w.words_of(texts, lang)
    spaced = ts.words_of(texts)
    mean = float(np.mean(words.lengths()))
    assert lo <= mean <= hi, (lang, mean, doc_words(words, 0)[:30])
    assert len(words.values) > more * len(spaced.values)
    assert (words.counts > 0).all()


def test_known_words():
    zh = doc_words(w.words_of(pa.array(["apt-mark 可以对软件包进行手动安装标记"]), "zh"), 0)
    assert {"apt-mark", "软件包", "安装"} <= set(zh)
    ja = doc_words(w.words_of(pa.array(["パッケージメンテナのバージョンをインストールする"]), "ja"), 0)
    assert {"の", "バージョン", "を", "インストール", "する"} <= set(ja)
    th = doc_words(w.words_of(pa.array(["ไม่สามารถติดตั้งบางแพกเกจได้"]), "th"), 0)
    assert {"ติดตั้ง", "แพกเกจ"} <= set(th)


def test_khmer_zero_width_space_separates():
    km = texts_of("km")[0]
    assert "\u200b" in km
    words = w.split_words(pa.array([km]), "km")
    assert not any("\u200b" in x for x in words.values.to_pylist())


def test_tibetan_tsheg_is_not_a_word():
    words = w.words_of(pa.array(texts_of("dz")[:2]), "dz").values.to_pylist()
    assert words and not any(x.strip("\u0f0b\u0f0c\u0f0d") == "" for x in words)
    assert not any(x.endswith("\u0f0b") for x in words)


def test_mixed_batch_equals_rows_one_by_one():
    """Any batch: languages mixed, nulls, empty strings; each row's words do not depend on the others."""
    rows, langs = [], []
    for lang in ("en", "zh", "ja", "th", "ko", "km", "my", "dz", "lo"):
        rows += texts_of(lang)[:2]
        langs += [lang, lang]
    rows += [None, "", "   ", "Mr 毛泽东 went to 北京 in 1949."]
    langs += [None, "und", "en", "en"]
    together = w.words_of(pa.array(rows), pa.array(langs))
    assert together.n_docs == len(rows)
    for d, (row, lang) in enumerate(zip(rows, langs)):
        alone = w.words_of(pa.array([row], pa.string()), [lang])
        assert doc_words(together, d) == doc_words(alone, 0)
    assert doc_words(together, len(rows) - 4) == [] and doc_words(together, len(rows) - 3) == []
    assert doc_words(together, len(rows) - 1) == ["Mr", "毛泽东", "went", "to", "北京", "in", "1949"]


def test_script_decides_where_the_language_does_not():
    text = pa.array(["パッケージをインストールする"] * 2 + ["ภาษาไทย"] * 2)
    by_lang = w.split_words(text, ["ja", "en", "th", "lo"])
    assert doc_words(by_lang, 0) == doc_words(by_lang, 1)  # kana -> Japanese even on an English row
    assert doc_words(by_lang, 2) == doc_words(by_lang, 3)  # Thai script on a Lao row -> Thai
    assert w.segmenter_for("zh_Hant") == w.segmenter_for("zh") == w.segmenter_for("cmn_Hani") == seg.DEFAULT["zh"]
    assert w.segmenter_for("jpn_Jpan") == seg.DEFAULT["ja"] and w.segmenter_for("__label__th") == seg.DEFAULT["th"]
    assert w.segmenter_for("en") is None and w.segmenter_for(None) is None and w.segmenter_for("und") is None


def test_chinese_and_japanese_rows_follow_their_language():
    """Han text on a ``ja`` row goes to the Japanese segmenter, on a ``zh`` row to the Chinese one."""
    han = "日本語文章単語分割処理"
    got = w.split_words(pa.array([han, han]), ["ja", "zh"], table={"ja": "icu", "zh": "rjieba"})
    assert doc_words(got, 0) == [x for x in seg.load("icu")(han, "ja") if x.strip()]
    assert doc_words(got, 1) == seg.load("rjieba")(han, "zh")


def test_sample_corpus_cjk_rows_are_segmented():
    texts = sample("technical_multilingual.jsonl")
    rows = np.flatnonzero(w.unspaced_rows(texts))
    assert len(rows) > 10
    sub = texts.take(pa.array(rows))
    assert np.median(w.words_of(sub).counts) > 2 * np.median(ts.words_of(sub).counts)


def test_missing_segmenter_is_a_config_error(monkeypatch):
    monkeypatch.setitem(seg.SEGMENTERS, "absent", seg.Spec("datacurate_no_such_segmenter", "no-such-segmenter", lambda: None))
    w.check_segmenters(["en", "zh", "ja", "th", "und", None])  # the defaults are installed
    with pytest.raises(ConfigError, match=r"'th'.*'absent'.*pip install no-such-segmenter"):
        w.check_segmenters(["en", "th"], table={"th": "absent"})
    with pytest.raises(ConfigError, match="unknown segmenter 'nope'"):
        w.check_segmenters(["zh"], table={"zh": "nope"})


def test_a_segmenter_missing_at_run_time_keeps_runs_whole(monkeypatch):
    monkeypatch.setitem(seg.SEGMENTERS, "absent", seg.Spec("x", "x", lambda: (_ for _ in ()).throw(ImportError("x"))))
    with pytest.warns(UserWarning, match="'absent'"):
        got = w.split_words(pa.array(["ภาษาไทย ok"]), "th", table={"th": "absent"})
    assert doc_words(got, 0) == ["ภาษาไทย", "ok"]


def test_spaced_inserts_spaces_only_in_unspaced_runs():
    texts = pa.array(["An English line.\nAnother one.", "Python是一种语言。", "ok\u200bภาษาไทย", None])
    out = w.spaced(texts, ["en", "zh", "th", None])
    assert out[0].as_py() == texts[0].as_py()
    assert out[1].as_py() == "Python 是 一种 语言 。"
    assert out[2].as_py() == "ok ภาษาไทย"
    assert out[3].as_py() is None
    english = sample("news.jsonl")
    assert w.spaced(english) is english  # no copy, no Python: the fast path


def test_words_do_not_depend_on_the_batch():
    """Each run is cut as if alone, whichever runs share its batch (and a joined call):
    the sample's Chinese and Japanese man pages and every passage, as one batch and row by row."""
    texts = sample("technical_multilingual.jsonl")
    rows = texts.take(pa.array(np.flatnonzero(w.unspaced_rows(texts)))).to_pylist()
    rows += [p for lang in ("th", "km", "my", "dz", "lo") for p in texts_of(lang)]
    together = w.split_words(pa.array(rows))
    for d, row in enumerate(rows):
        assert doc_words(together, d) == doc_words(w.split_words(pa.array([row])), 0), row[:80]


@pytest.mark.parametrize("name,lang", [("rjieba", "zh"), ("icu", "zh"), ("icu", "ja"), ("icu", "th"), ("icu", "km"),
                                       ("icu", "my"), ("icu", "dz")])
def test_joined_calls_cut_each_run_as_alone(name, lang):
    assert seg.SEGMENTERS[name].joinable
    cutter = w._Cutter({lang: name})
    for p in texts_of(lang if lang != "zh" else "zh") + sample("technical_multilingual.jsonl").to_pylist()[:60]:
        cutter.find(p, lang)
    runs = [r for key, found in cutter.groups.items() if key[0] == name for r in found]
    assert len(runs) > 20
    fn = seg.load(name)
    assert seg.segment_runs(name, lang, runs) == [fn(r, lang) for r in runs]


def test_chunks_map_words_back_to_the_text():
    """chunks(): pieces of k words of the original text, whatever spaced() changed (spaces put
    in, zero-width spaces made one space, the Tibetan tsheg dropped)."""
    for lang, k in (("zh", 5), ("km", 4), ("dz", 3), ("th", 7), ("my", 2)):
        for text in texts_of(lang)[:3]:
            sp = w.spaced(pa.array([text]), lang)[0].as_py()
            pieces = w.chunks(text, sp, k)
            assert "".join(pieces) == text
            assert len(pieces) == -(-len(sp.split()) // k)


def test_korean_words_are_kiwi_morphemes_and_keep_every_character():
    """FineWeb-2's Korean stop words are morphemes (의 는 에 을): a Hangul word is cut into them."""
    text = "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. 2024년 apt를 설치했다."
    words = doc_words(w.words_of(pa.array([text]), "ko"), 0)
    assert {"인간", "은", "자유", "존엄", "과", "권리", "에", "년", "apt", "를"} <= set(words)
    assert "".join(words) == "".join(ch for ch in text if not ch.isspace() and ch != ".")
    from datacurate.text.langrules import fineweb2
    stop = set(fineweb2()["configs"]["kor_Hang"]["stopwords"])
    assert sum(x in stop for x in words) >= 5 and sum(x in stop for x in text.split()) == 0
    assert doc_words(w.words_of(pa.array([text]), "en"), 0) == doc_words(w.words_of(pa.array([text]), "ko"), 0)


def test_one_script_fast_path_gives_the_general_paths_text(monkeypatch):
    """A row whose unspaced runs are all of one script is rebuilt by re.split (``_respace``);
    the general path (a Python step per match) must give the same text, on every language's
    passages, mixed-script rows, separators at the edges and runs at the start or end."""
    texts, langs = [], []
    for lang, v in PASSAGES.items():
        texts += v["passages"]
        langs += [lang] * len(v["passages"])
    edge = ["中文", "\u200b中文\u200b", "a中文b", "中文。English", "ภาษาไทย ภาษา", "Mr 毛泽东 went to 北京.",
            "ខ្មែរ\u200bខ្មែរ", "한국어 문장입니다.한국", "タイ語 ภาษาไทย ລາວ mixed", ""]
    texts += edge * 2
    langs += ["zh"] * len(edge) + ["en"] * len(edge)
    arr = pa.array(texts)
    fast = w.spaced(arr, pa.array(langs)).to_pylist()
    monkeypatch.setattr(w._Cutter, "one_script", lambda self, text, lang: None)
    assert w.spaced(arr, pa.array(langs)).to_pylist() == fast


def test_a_hangul_run_of_hundreds_of_characters_stays_whole():
    """No Korean word is 200 characters long: a spaceless run is one word, not minutes of Kiwi."""
    run = "가나다라" * 5000
    words = w.words_of(pa.array([run, "권리를 " + run[:200]]), "ko")
    assert doc_words(words, 0) == [run] and doc_words(words, 1)[:2] == ["권리", "를"]
