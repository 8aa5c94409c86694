"""Stage ``toxicity``: the LDNOOBW word rule and the shipped fastText classifier.

Flagged words are taken from the shipped word lists (datacurate/resources/ldnoobw)
rather than typed here; the classifier cases use common profanity, no slurs.
"""

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from datacurate.configs.pipeline import ConfigError
from datacurate.stages.toxicity import Toxicity
from datacurate.stages.toxicity import DEFAULT_LISTS, SENTENCE_END, WordList, WordListRuleConfig
from tests.texts import PROSE

NO_BOUNDARY = {"ja", "th", "zh"}


def entries(lang: str) -> list[str]:
    return [w.strip() for w in (DEFAULT_LISTS / f"{lang}.txt").read_text(encoding="utf-8").splitlines() if w.strip()]


EN = entries("en")
EN_WORDS = [w for w in EN if w.isalpha() and len(w) >= 4]  # single plain words


def table(texts, **cols):
    return pa.table({"text": pa.array(texts, pa.large_string()), **cols})


def hits(texts, langs=None, **config):
    wl = WordList(WordListRuleConfig(**config))
    langs = np.array(langs if langs is not None else ["en"] * len(texts), dtype=object)
    return wl.count(pa.array(texts, pa.large_string()), langs).tolist()


@pytest.fixture(scope="module")
def words_only():
    return Toxicity(classifier={"enabled": False}, wordlist={"enabled": True})  # C4's rule


@pytest.fixture(scope="module")
def stage():
    return Toxicity()


@pytest.mark.parametrize("lang", sorted(p.stem for p in DEFAULT_LISTS.glob("*.txt")))
def test_every_list_entry_is_found_in_running_text(lang):
    code = lang.split("-")[0]
    ws = entries(lang)
    if code in NO_BOUNDARY:
        texts = [f"前文{w}後文" for w in ws]
    else:
        texts = [f"Some words, then {w}. And more." for w in ws]
    assert all(h >= 1 for h in hits(texts, [code] * len(ws))), lang


def test_slurs_flagged_with_reason(words_only):
    texts = [f"They shouted {w} at him." for w in EN_WORDS[:40]]
    out = words_only(table(texts + [PROSE]))
    assert out.column("reject_reason").to_pylist() == ["toxicity/wordlist"] * 40 + [None]
    assert out.column("toxicity_score").null_count == 41  # the classifier is off


@pytest.mark.parametrize("text", [
    "Scunthorpe United drew with Grimsby on Saturday.",
    "The assessment of the classic cocktail passage was thorough.",
    "Essex therapists analysed the title of Dickens's shitake cookbook, Cockburn said.",
    "He took the cockpit, a scrapbook and a pair of titanium spectacles to Middlesex.",
])
def test_substrings_of_benign_words_are_not_flagged(words_only, text):
    assert hits([text]) == [0]
    assert words_only(table([text])).column("reject_reason").to_pylist() == [None]


def test_whole_words_inside_a_longer_token_are_not_flagged():
    assert hits([f"zq{w}qz" for w in EN_WORDS]) == [0] * len(EN_WORDS)


def test_case_punctuation_and_adjacent_matches():
    w = EN_WORDS[0]
    assert hits([w.upper(), f"({w})", f'"{w}!"', f"{w} {w},{w}\n{w}", f"{w}-{w}"]) == [1, 1, 1, 4, 2]


def test_multi_word_phrases():
    phrase = next(p for p in EN if " " in p and p.replace(" ", "").isalpha())
    a, b = phrase.split(" ", 1)
    assert hits([f"about {phrase} today", f"about {a}\n  {b} today", f"about {a}{b} today"]) == [1, 1, 0]


def test_list_is_chosen_by_lang_column():
    de_only = next(w for w in entries("de") if w.isalpha() and w not in EN and len(w) > 4)
    text = f"Er sagte {de_only} und ging."
    assert hits([text, text], ["de", "en"]) == [1, 0]
    # no lang, or a language without a list: the default language's list
    en_word = EN_WORDS[1]
    assert hits([f"a {en_word} b"] * 3, [None, "uk", "und"]) == [1, 1, 1]
    assert hits([f"Er sagte {de_only}."], [None], default_language="de") == [1]


def test_no_boundary_languages_match_substrings():
    ja = next(w for w in entries("ja") if " " not in w)
    assert hits([f"これは{ja}です"], ["ja"]) == [1]
    assert hits([f"これは{ja}です"], ["ja"], no_boundary_languages=[]) == [0]


def test_min_matches(words_only):
    w = EN_WORDS[2]
    t = table([f"one {w} here", f"two {w} and {w}"])
    assert words_only(t).column("reject_reason").to_pylist() == ["toxicity/wordlist"] * 2
    two = Toxicity(classifier={"enabled": False}, wordlist={"enabled": True, "min_matches": 2})(t)
    assert two.column("reject_reason").to_pylist() == [None, "toxicity/wordlist"]
    assert two.column("toxicity_wordlist_hits").to_pylist() == [1, 2]


def test_classifier_flags_abuse_and_keeps_prose(stage):
    texts = ["Shut up, you stupid fucking bitch.", "This is bullshit, you worthless piece of shit.", PROSE,
             "The committee will meet on Tuesday to discuss the budget for the new library."]
    out = Toxicity(classifier={"aggregate": "mean", "max_score": 0.1})(table(texts))
    s = out.column("toxicity_score").to_pylist()
    assert s[0] > 0.9 and s[1] > 0.9 and s[2] < 0.05 and s[3] < 0.05
    assert out.column("reject_reason").to_pylist() == ["toxicity/model_score"] * 2 + [None, None]
    assert out.column("toxicity_wordlist_hits").null_count == 4


def test_granularity_and_aggregate():
    abuse = "Shut up, you stupid fucking bitch."
    doc = PROSE + "\n" + abuse  # one abusive sentence among ~14 sentences of prose
    t = table([doc])
    mean = Toxicity(classifier={"aggregate": "mean"}, wordlist={"enabled": False})(t).column("toxicity_score")[0].as_py()
    worst = Toxicity(classifier={"aggregate": "max"}, wordlist={"enabled": False})(t).column("toxicity_score")[0].as_py()
    line = Toxicity(classifier={"granularity": "line", "aggregate": "max"}, wordlist={"enabled": False})(t)
    whole = Toxicity(classifier={"granularity": "document", "aggregate": "mean"}, wordlist={"enabled": False})(t)
    assert 0.03 < mean < 0.15 and worst > 0.9
    assert line.column("toxicity_score")[0].as_py() > 0.9
    assert whole.column("toxicity_score")[0].as_py() < worst


def test_aggregate_share_counts_units_at_the_cards_threshold():
    from datacurate.models.fasttext_model import load_card
    from datacurate.stages.toxicity import DEFAULT_MODEL

    abuse = "Shut up, you stupid fucking bitch."
    t = table([PROSE + "\n" + abuse, PROSE, abuse + " " + abuse, ""])
    share = Toxicity(classifier={"aggregate": "share"}, wordlist={"enabled": False})
    assert share.unit_threshold == load_card(DEFAULT_MODEL)["decision_threshold"]["threshold"]
    s = share(t).column("toxicity_score").to_pylist()
    n = len([u for u in re.sub(SENTENCE_END, "\\1\n", PROSE).split("\n") if u.strip()]) + 1
    assert s[0] == pytest.approx(1 / n) and s[1] == 0.0 and s[2] == 1.0 and s[3] == 0.0  # share of the sentences
    loose = Toxicity(classifier={"aggregate": "share", "unit_threshold": 1e-9}, wordlist={"enabled": False})
    assert loose.unit_threshold == 1e-9  # an explicit threshold wins over the card's
    lo = loose(t).column("toxicity_score").to_pylist()
    assert all(a >= b for a, b in zip(lo, s))  # a lower threshold counts no fewer sentences


def test_only_listed_languages_are_scored(stage):
    out = stage(table(["Shut up, you stupid fucking bitch."] * 2, lang=pa.array(["en", "fr"])))
    assert out.column("toxicity_score").is_valid().to_pylist() == [True, False]


def test_bad_input_scores_without_error(stage):
    texts = ["", " \n\n ", "word " * 200_000, "a" * 1_000_000, "...!!!???" * 1000,
             "Погода была холодной, и лодки всю зиму оставались в гавани.", "天気は寒く、船は冬の間ずっと港に停泊していた。",
             "مرحبا بالعالم", "\x00\x01 \ufffd", "🙂" * 1000]
    out = Toxicity(classifier={"languages": None}, wordlist={"enabled": True})(table(texts, lang=pa.array(["en", "en", "en", "en", "en", "ru", "ja",
                                                                               "ar", None, None])))
    s = np.array(out.column("toxicity_score").to_pylist(), dtype=float)
    assert out.num_rows == len(texts) and np.all((s >= 0) & (s <= 1))
    assert s[0] == 0.0 and out.column("toxicity_wordlist_hits").to_pylist()[:2] == [0, 0]


def test_metrics():
    w = EN_WORDS[3]
    stage = Toxicity(wordlist={"enabled": True})
    out = stage(table([PROSE, f"a {w} b", "Shut up, you stupid fucking bitch."]))
    m = stage.metrics(out)
    assert sum(m["toxicity_score_hist"].values()) == 3 and m["toxicity_score_hist"]["0.9-1.0"] == 1
    assert m["toxicity_wordlist_docs"] == 2


@pytest.mark.parametrize("params, message", [
    ({"classifier": {"max_score": 2}}, "max_score"),
    ({"classifier": {"granularity": "paragraph"}}, "is not one of"),
    ({"classifier": {"aggregate": "share", "granularity": "document"}}, "needs granularity"),
    ({"classifier": {"unit_threshold": 0}}, "unit_threshold"),
    ({"wordlist": {"min_matches": 0}}, "min_matches"),
    ({"wordlist": {"min_match": 1}}, "did you mean 'min_matches'"),
])
def test_config_errors(params, message):
    with pytest.raises(ConfigError, match=message):
        Toxicity(**params)


def test_word_list_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        WordList(WordListRuleConfig(lists=str(tmp_path / "missing")))
    (tmp_path / "xx.txt").write_text("zzword\n")
    with pytest.raises(ValueError, match="default_language"):
        WordList(WordListRuleConfig(lists=str(tmp_path)))
    assert hits(["a zzword b"], ["xx"], lists=str(tmp_path), default_language="xx") == [1]


def test_unit_threshold_only_with_share():
    from datacurate.configs.pipeline import ConfigError, load_config

    with pytest.raises(ConfigError, match="unit_threshold applies to aggregate: share only"):
        load_config({"input": {"path": "sample_data/corpus"},
                     "stages": [{"toxicity": {"classifier": {"aggregate": "mean", "unit_threshold": 0.3}}}]})


MONA_LISA = Path(__file__).resolve().parents[1] / "data" / "text" / "mona_lisa.txt"


def test_the_default_keeps_the_mona_lisa_and_c4s_rule_removes_it(stage):
    """A page about the painting names its nude variants (one LDNOOBW word): the default
    (classifier, document threshold) keeps it; C4's one-word rule, when selected, does not."""
    page = MONA_LISA.read_text(encoding="utf-8")
    assert stage(table([page])).column("reject_reason").to_pylist() == [None]
    c4 = Toxicity(classifier={"enabled": False}, wordlist={"enabled": True, "min_matches": 1})(table([page]))
    assert c4.column("reject_reason").to_pylist() == ["toxicity/wordlist"]
    assert c4.column("toxicity_wordlist_hits").to_pylist() == [2]  # "nude", twice


def test_the_default_rejects_a_page_of_abuse_and_keeps_one_rude_line_in_a_long_page(stage):
    abuse = "Shut up, you stupid fucking bitch. Fuck off, you worthless piece of shit. I hate you."
    long_page = " ".join([PROSE] * 10) + " Shut up, you stupid fucking bitch."
    out = stage(table([abuse, long_page]))
    assert out.column("reject_reason").to_pylist() == ["toxicity/model_score", None]


def test_sentence_units_end_at_full_width_stops_without_spaces():
    """Chinese and Japanese put no space after 。！？: each sentence is still its own unit
    (before, a whole Chinese document was one sentence); spaced scripts' ends (., the danda)
    still need the white space that follows them."""
    from datacurate.stages.toxicity import SENTENCE_END

    texts = pa.array(["今天天气很好。我们去公园吧！你来吗？好的", "「こんにちは。」と言った。次",
                      "Hello there. How are you? Fine, v1.2 works", "यह अच्छा है। वह भी।"])
    units = pc.replace_substring_regex(texts, SENTENCE_END, "\\1\\2\n").to_pylist()
    assert [u.split("\n") for u in units] == [
        ["今天天气很好。", "我们去公园吧！", "你来吗？", "好的"],
        ["「こんにちは。」", "と言った。", "次"],
        ["Hello there.", "How are you?", "Fine, v1.2 works"],
        ["यह अच्छा है।", "वह भी।"],
    ]
