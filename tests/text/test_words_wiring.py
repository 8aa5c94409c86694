"""Every word-based computation takes words in every script (issue 47, item 2): MinHash,
DSIR's features, decontamination's n-grams, the fastText classifiers' input; and English
comes out exactly as it did without the segmentation layer.

English: sample_data's news, learned and technical corpora (sample_data/README.md);
Chinese: the apt / dpkg translations in tests/data/words/passages.json (GPL-2+).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pytest

from datacurate.core.coerce import ConfigError
from datacurate.models import fasttext_model as ftm
from datacurate.stages import decontaminate as dc
from datacurate.text import minhash as mh
from datacurate.text import wordpunct as wp
from datacurate.text import words as wordseg

ROOT = Path(__file__).resolve().parents[2]
PASSAGES = json.loads((ROOT / "tests/data/words/passages.json").read_text())


@pytest.fixture(scope="module")
def english() -> pa.Array:
    parts = []
    for name in ("news.jsonl", "learned.jsonl", "technical_multilingual.jsonl"):
        texts = pj.read_json(ROOT / "sample_data/corpus" / name).column("text").combine_chunks()
        parts.append(texts.filter(pa.array(~wordseg.unspaced_rows(texts))))  # the spaced-script rows
    return pa.concat_arrays(parts)


def without_segmentation(monkeypatch):
    monkeypatch.setattr(wordseg, "spaced", lambda texts, langs=None, table=None: texts)


def test_spaced_scripts_come_out_as_before(english, monkeypatch):
    """MinHash signatures, DSIR features, decontamination words, fastText input: identical
    with and without the segmentation layer on text of spaced scripts (incl. accented
    European languages and Cyrillic from the technical corpus)."""
    assert len(english) > 400
    langs = pa.array(["en"] * len(english))
    new = (mh.signatures(english, 32, 5, 1, langs), wp.features(english, 4096, 2, langs=langs),
           dc.words(english), ftm.normalize(english, True, 100_000, True, langs))
    without_segmentation(monkeypatch)
    old = (mh.signatures(english, 32, 5, 1), wp.features(english, 4096, 2), dc.words(english),
           ftm.normalize(english, True, 100_000, True))
    assert np.array_equal(new[0], old[0])
    assert np.array_equal(new[1].doc, old[1].doc) and np.array_equal(new[1].bucket, old[1].bucket)
    assert all(np.array_equal(a, b) for a, b in zip(new[2], old[2]))
    assert new[3].equals(old[3])


def test_fasttext_input_has_words():
    line = ftm.normalize(["Python是一种广泛使用的编程语言。"], langs=["zh"])[0].as_py()
    assert line == "Python 是 一种 广泛 使用 的 编程语言 。"


def test_decontamination_finds_a_chinese_question_inside_running_text(tmp_path, monkeypatch):
    """A benchmark record quoted inside Chinese prose with no space around it: as words its
    13-grams are found; as whitespace words the record is a few "words", too short to index."""
    zh = ["".join(x.strip() for x in p.splitlines()) for p in PASSAGES["zh"]["passages"]]
    start = zh[1].index("还可以")
    question = zh[1][start:start + 45]  # a clause about package variables: ~20 words
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "q1", "question": question}, ensure_ascii=False) + "\n")
    h, off = dc.words(pa.array([question]))
    assert np.diff(off)[0] >= 16  # many words, not one
    docs = pa.table({"text": [zh[4] + question + zh[6], zh[4] + zh[6]]})
    assert dc.Decontaminate(benchmarks=[str(bench)])(docs)["reject_reason"].to_pylist() == ["decontaminate/bench", None]
    without_segmentation(monkeypatch)  # as whitespace words the question is too short to index at all
    with pytest.raises(ConfigError, match="no text of at least 8 words"):
        dc.Decontaminate(benchmarks=[str(bench)])(docs)


def test_dsir_features_count_chinese_words():
    zh = pa.array([PASSAGES["zh"]["passages"][0]])
    f = wp.features(zh, 4096, 1, langs=["zh"])
    assert f.n_tokens[0] > 3 * len(PASSAGES["zh"]["passages"][0].split())


def test_classifier_stages_pass_the_lang_column(monkeypatch):
    """quality and toxicity hand each row's ``lang`` to the segmenter."""
    from datacurate.stages.quality import Quality
    from datacurate.stages.toxicity import Toxicity

    seen = []
    real = wordseg.spaced

    def spy(texts, langs=None, table=None):
        seen.append(None if langs is None else list(langs.to_pylist() if hasattr(langs, "to_pylist") else langs))
        return real(texts, langs, table)

    monkeypatch.setattr(wordseg, "spaced", spy)
    table = pa.table({"id": ["a", "b"], "text": ["日本語の文章です。", "中文的句子。"], "lang": ["ja", "zh"]})
    Quality(languages=None)(table)
    assert ["ja", "zh"] in seen
    seen.clear()
    Toxicity(classifier={"languages": None, "granularity": "line"})(table)
    assert ["ja", "zh"] in seen


def test_dsir_chunks_count_words_in_every_script():
    """DSIR's units of ``chunk_words`` words (the paper's 128-word pieces): a Chinese or
    Thai document is cut every k words too (it was one unit: no spaces), and the pieces
    still concatenate back to the exact text; English is cut as before."""
    from datacurate.stages import dsir as ds

    zh = "".join(PASSAGES["zh"]["passages"])
    th = "".join(PASSAGES["th"]["passages"])
    en = " ".join(PASSAGES["en"]["passages"])
    table = pa.table({"_ord": [0, 1, 2], "text": [zh, th, en], "lang": ["zh", "th", "en"]})
    units = ds.units_of(table, 16)
    pieces = [[t for t, p in zip(units.texts.to_pylist(), units.parent) if p == d] for d in range(3)]
    for d, text in enumerate([zh, th, en]):
        assert "".join(pieces[d]) == text
    n_words = [len(wordseg.split_words(pa.array([t]), lang).values) for t, lang in ((zh, "zh"), (th, "th"))]
    assert [len(pieces[0]), len(pieces[1])] == [-(-n // 16) for n in n_words]
    assert len(pieces[2]) == -(-len(en.split()) // 16)
