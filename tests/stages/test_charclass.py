"""charclass: the NumPy doubling gives the bytes of the RE2 pass it replaces (issue 18)."""

import gzip
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zstandard

from datacurate.text import charclass
from datacurate.stages.toxicity import NON_WORD

CORPUS = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
EDGE = ["", "a", "\t", "a\tb,c\u3000d\u00e9!", "\U0001F600x\U0001F600\U0001D400", "\u2028\u00a0\x85\u1680\u205f",
        "日本語、テスト。", "e\u0301\u0301 -- \u2014\u00ab\u00bb \u00ad\u200b", "x\r\n\v\fy_z", "$5+3=8 #tag @user",
        "\u0645\u0631\u062d\u0628\u0627\u060c \u0639\u0627\u0644\u0645\u061f", "\x00\x01\x7f\u0085", "\u200a\u2009\u3000"]


@pytest.fixture(scope="module")
def texts() -> pa.Array:
    out = []
    for f in sorted(CORPUS.iterdir()):
        raw = f.read_bytes()
        raw = gzip.decompress(raw) if f.suffix == ".gz" else raw
        raw = zstandard.ZstdDecompressor().stream_reader(raw).read() if f.suffix == ".zst" else raw
        out += [orjson.loads(line)["text"] for line in raw.splitlines() if line.strip()][:150]
    return pa.array(out + EDGE + [None], pa.large_string())


@pytest.mark.parametrize("run_bytes", [None, 3000])
def test_double_is_the_regex(texts, monkeypatch, run_bytes):
    if run_bytes:
        monkeypatch.setattr(charclass, "CHUNK_BYTES", run_bytes)
    ref = pc.replace_substring_regex(texts.fill_null(""), f"({NON_WORD})", r"\1\1")
    assert not ref.equals(texts.fill_null(""))
    assert charclass.double(texts, charclass.RegexClass(NON_WORD)).equals(ref)
    assert charclass.double(texts.slice(3, 20), charclass.RegexClass(NON_WORD)).equals(ref.slice(3, 20))


def test_classes_follow_the_pattern():
    import numpy as np

    cls = charclass.RegexClass(NON_WORD)
    cps = np.array([ord(c) for c in ",.a1 \u2014\u00e9_\u0301"] + [0x1F600, 0x1D400])
    assert cls.of(cps).tolist() == [True, True, False, False, True, True, False, False, False, True, False]


@pytest.mark.parametrize("run_bytes", [None, 3000])
def test_spaced_is_the_regex(texts, monkeypatch, run_bytes):
    """The classifiers' punctuation split (classify.normalize) in NumPy gives the RE2 pass's bytes."""
    from datacurate.models.fasttext_model import _SPACES

    if run_bytes:
        monkeypatch.setattr(charclass, "CHUNK_BYTES", run_bytes)
    edge = pa.array(["x\u00a0", "a\u2028", "\u3000", "\u2014", "\U0001F600"], pa.large_string())
    for t in (texts, edge, texts.slice(3, 20)):
        ref = pc.replace_substring_regex(t.fill_null(""), r"([\pP\pS])|" + _SPACES, r" \1 ")
        got = charclass.spaced(t, charclass.RegexClass(r"[\pP\pS]"), charclass.RegexClass(_SPACES))
        assert got.equals(ref)
    assert not ref.equals(texts.slice(3, 20).fill_null(""))
    empty = pa.array([], pa.large_string())  # no rows: no runs
    assert charclass.spaced(empty, charclass.RegexClass(r"[\pP\pS]"), charclass.RegexClass(_SPACES)).equals(empty)
