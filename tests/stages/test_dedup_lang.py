"""Dedup per language (issue 47, item 5): MinHash shingles of words in every script,
``by: lang``, FineWeb-2's rehydration weights.

Real text: the Chinese and Japanese man pages of sample_data's technical corpus (Debian's
manpages-zh, manpages-ja; sample_data/README.md) and its English news.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pyarrow as pa
import pytest

from datacurate.stages import dedup_near as dn
from datacurate.stages.dedup_near import NearDedup, NearDedupConfig
from datacurate.text import minhash as mh
from datacurate.text import words as wordseg
from tests.conftest import REPO

HAN = re.compile("[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def chinese() -> list[str]:
    rows = [json.loads(x) for x in open(REPO / "sample_data/corpus/technical_multilingual.jsonl")]
    zh = [r["text"][:3000] for r in rows if HAN.search(r["text"]) and not re.search("[\u3040-\u30ff]", r["text"])]
    # pages written as Chinese prose (some translators spaced their words: left out)
    return [t for t in zh if t.count(" ") < 0.2 * len(HAN.findall(t))]


@pytest.fixture(scope="module")
def english() -> list[str]:
    return [json.loads(x)["text"][:3000] for x in open(REPO / "sample_data/corpus/news.jsonl")][:20]


def edit_chars(text: str, rate: float, seed: int) -> str:
    """Replace ``rate`` of the Han characters by other Han characters of the same text."""
    rng = random.Random(seed)
    chars = list(text)
    pos = [i for i, c in enumerate(chars) if HAN.match(c)]
    for i in rng.sample(pos, int(len(pos) * rate)):
        chars[i] = chars[rng.choice(pos)]
    return "".join(chars)


def jaccard(a: set, b: set) -> float:
    return len(a & b) / max(1, len(a | b))


def shingles(text: str, n: int = 5, segment: bool = True) -> set:
    t = wordseg.spaced(pa.array([text]), "zh") if segment else pa.array([text])
    words = [w for w in mh.normalize(t)[0].as_py().split(" ") if w]
    return {tuple(words[i:i + n]) for i in range(max(1, len(words) - n + 1))}


def test_chinese_near_copies_cluster_when_shingles_are_words(chinese, monkeypatch):
    """1 % of the characters edited: as words, a copy shares most 5-word shingles and
    clusters; with whitespace / punctuation "words" (whole clauses) most copies are missed."""
    assert len(chinese) >= 6
    copies = [edit_chars(t, 0.01, i) for i, t in enumerate(chinese)]
    as_words = [jaccard(shingles(a), shingles(b)) for a, b in zip(chinese, copies)]
    as_clauses = [jaccard(shingles(a, segment=False), shingles(b, segment=False)) for a, b in zip(chinese, copies)]
    assert np.median(as_words) > 0.82 and np.median(as_clauses) < 0.78

    texts = chinese + copies
    table = pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts, "lang": ["zh"] * len(texts)})
    n = len(chinese)

    def caught() -> int:
        reasons = NearDedup()(table)["reject_reason"].to_pylist()
        assert reasons[:n] == [None] * n  # distinct pages never merge
        return sum(r == f"near_dedup/dup_of:d{i}" for i, r in enumerate(reasons[n:]))

    with_words = caught()
    monkeypatch.setattr(wordseg, "spaced", lambda texts, langs=None, table=None: texts)
    assert with_words >= n - 1 and caught() <= with_words - 2


def test_english_signatures_unchanged_by_lang(english):
    texts = pa.array(english)
    plain = mh.signatures(texts, 64, 5, 1)
    assert np.array_equal(plain, mh.signatures(texts, 64, 5, 1, langs=["en"] * len(english)))
    assert np.array_equal(plain, mh.signatures(texts, 64, 5, 1, langs=pa.array(["zh"] * len(english))))


def test_by_lang_keeps_cross_language_copies(english):
    """The same page under two language labels (a mirrored licence, boilerplate): one
    survives across the corpus, both survive within each language."""
    texts = [english[0], english[0], english[1], english[1], english[2]]
    table = pa.table({"id": ["a", "b", "c", "d", "e"], "text": texts, "lang": ["en", "de", "en", "en", None]})
    across = NearDedup()(table)["reject_reason"].to_pylist()
    assert across == [None, "near_dedup/dup_of:a", None, "near_dedup/dup_of:c", None]
    within = NearDedup(NearDedupConfig(by="lang"))(table)["reject_reason"].to_pylist()
    assert within == [None, None, None, "near_dedup/dup_of:c", None]


def test_by_lang_salt_is_stable_and_separates():
    s = dn.group_salt(pa.array(["en", "zh", None, "en", None]))
    assert s[0] == s[3] and s[2] == s[4] and len({s[0], s[1], s[2]}) == 3
    assert np.array_equal(s, dn.group_salt(["en", "zh", None, "en", None]))
    sigs = np.tile(np.arange(128, dtype=np.uint32), (2, 1))
    k_same = dn.band_keys(sigs, 16, 8, np.array([s[0], s[0]]))
    k_diff = dn.band_keys(sigs, 16, 8, np.array([s[0], s[1]]))
    assert (k_same[0] == k_same[1]).all() and not (k_diff[0] == k_diff[1]).any()
    assert np.array_equal(dn.band_keys(sigs, 16, 8), dn.band_keys(sigs, 16, 8, None))
    assert dn.NearDedup.needs_columns(NearDedupConfig(by="lang")) == {"lang": "by: lang"}
    assert dn.NearDedup.needs_columns(NearDedupConfig()) == {}


def test_upsampling_weight_is_fineweb2s_table():
    sizes = pa.array([None, 1, 2, 3, 4, 5, 99, 100, 999, 1000, 5000], pa.int32())
    assert dn.upsampling_weight(sizes).tolist() == [1, 1, 2, 3, 3, 5, 5, 8, 8, 1, 1]
    assert dn.upsampling_weight([1, 2, 7], {1: 1, 2: 4}).tolist() == [1, 4, 4]
    with pytest.raises(ValueError, match="upsampling_weights"):
        NearDedupConfig(upsampling_weights={2: 2}).validate()


def test_survivor_keeps_cluster_size_and_weight(english):
    """Clusters of 1, 2, 4 and 6 copies: the survivor carries the size and FineWeb-2's weight."""
    copies = {0: 1, 1: 2, 2: 4, 3: 6}
    texts, ids = [], []
    for doc, k in copies.items():
        texts += [english[doc]] * k
        ids += [f"{doc}.{j}" for j in range(k)]
    out = NearDedup()(pa.table({"id": ids, "text": texts}))
    kept = [i for i, r in enumerate(out["reject_reason"].to_pylist()) if r is None]
    assert [ids[i] for i in kept] == ["0.0", "1.0", "2.0", "3.0"]
    assert [out["cluster_size"][i].as_py() for i in kept] == [None, 2, 4, 6]
    assert [out["upsampling_weight"][i].as_py() for i in kept] == [1, 2, 3, 5]


# --- exact_dedup's paragraph mode in every script -------------------------------------

def _paragraph_run(texts):
    from datacurate.stages.dedup_exact import ExactDedup

    out = ExactDedup(mode="paragraph", paragraph_threshold=0.8)(
        pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}))
    return out["reject_reason"].to_pylist(), out["text"].to_pylist(), out["paragraphs_removed"].to_pylist()


@pytest.fixture(scope="module")
def passages() -> dict:
    return json.loads((REPO / "tests/data/words/passages.json").read_text())


@pytest.mark.parametrize("brk", ["\u2029", "\u2028", "\r\n", "\r", "\x85", "\n"])
def test_paragraph_breaks_of_every_kind_split(passages, brk):
    """Paragraphs separated by U+2029 (word processors), CR LF, old-Mac CR or NEL are
    paragraphs, as with LF: the seen one goes, the new one stays."""
    zh, th = passages["zh"]["passages"], passages["th"]["passages"]
    first = zh[0].replace("\n", " ") + brk + th[0].replace("\n", " ")
    second = th[1].replace("\n", " ") + brk + zh[0].replace("\n", " ")
    reasons, text, removed = _paragraph_run([first, second])
    assert reasons == [None, None] and removed == [0, 1]
    assert text[0] == first  # nothing removed: the text as it was, its own breaks kept
    assert text[1] == th[1].replace("\n", " ")


def test_paragraph_keys_collapse_unicode_spaces(passages):
    """A Japanese paragraph indented with an ideographic space (U+3000), or with no-break
    spaces inside, is the paragraph seen before."""
    ja = [p.replace("\n", "") for p in passages["ja"]["passages"][:3]]
    first = "\n".join(ja)
    second = "\u3000" + ja[0].replace(" ", "\u3000") + "\n" + ja[1].replace(" ", "\u00a0") + "\n" + ja[2]
    reasons, _, removed = _paragraph_run([first, second])
    assert reasons == [None, "exact_dedup/paragraphs_seen"] and removed == [0, 3]


def test_paragraph_mode_on_real_cjk_and_thai_text(passages):
    """Documents made of real paragraphs in Chinese, Japanese, Thai and Khmer: a document
    repeating two of another's paragraphs loses exactly those two."""
    paras = [p.replace("\n", " ") for lang in ("zh", "ja", "th", "km") for p in passages[lang]["passages"][:2]]
    a = "\n\n".join(paras[:4])
    b = "\n\n".join([paras[4], paras[1], paras[5], paras[3]])
    reasons, text, removed = _paragraph_run([a, b])
    assert reasons == [None, None] and removed == [0, 2]
    assert [p for p in text[1].split("\n") if p] == [paras[4], paras[5]]  # blank lines stay, as before


def test_yaml_config_by_lang_and_weights(tmp_path):
    from datacurate.configs.pipeline import load_config

    p = tmp_path / "p.yaml"
    p.write_text("input: {path: in.jsonl}\noutput: out\nstages:\n  - langid: {}\n"
                 "  - near_dedup: {by: lang, upsampling_weights: {1: 1, 2: 4, 10: 2}}\n")
    cfg = load_config(p).stages[1].config
    assert cfg.by == "lang" and cfg.upsampling_weights == {1: 1, 2: 4, 10: 2}
    assert dn.upsampling_weight([1, 3, 10, 50], cfg.upsampling_weights).tolist() == [1, 4, 2, 2]
