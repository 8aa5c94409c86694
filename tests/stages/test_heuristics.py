"""Stage ``heuristics``: one test per rule, each on a small handmade batch.

Each test enables one rule set (the others off) and feeds it, in one batch, a text
built to fail exactly the rule under test next to real edited prose that must be
kept, so a rule that never fires and a rule that fires on everything both fail.
"""

import pyarrow as pa
import pytest

from datacurate.stages.heuristics import Heuristics
from tests.texts import PROSE, PROSE_LINES, unique_words

RULE_SETS = ("gopher_quality", "gopher_repetition", "c4", "fineweb")


def only(rule_set: str, **params) -> Heuristics:
    """A Heuristics stage with only ``rule_set`` enabled (``params`` go to that set)."""
    cfg = {name: {"enabled": name == rule_set} for name in RULE_SETS}
    cfg[rule_set].update(params)
    return Heuristics(**cfg)


def reasons(stage: Heuristics, *texts: str) -> list:
    out = stage(pa.table({"text": pa.array(list(texts), pa.large_string())}))
    return out.column("reject_reason").to_pylist()


def assert_rule(stage: Heuristics, bad: str, reason: str) -> None:
    """``bad`` fails with ``reason``; the prose beside it in the same batch is kept."""
    assert reasons(stage, PROSE, bad) == [None, reason]


def line(words: list[str]) -> str:
    return " ".join(words)


# ----------------------------------------------------------------------------- the prose


def test_default_rules_keep_edited_prose():
    out = Heuristics()(pa.table({"text": [PROSE]}))
    assert out.column("reject_reason").to_pylist() == [None]
    # C4 keeps every sentence line and the paragraph breaks between them
    assert out.column("text").to_pylist() == ["\n\n".join(PROSE_LINES)]


def test_punctuation_only_tokens_are_not_words():
    # Edited prose set with spaced '--' dashes and '' quotes: if those tokens counted as
    # words without a letter, more than 20 % of "words" would have no letter.
    sentence = "The boat -- an old one -- left at dawn '' and the crew -- tired men -- said nothing ''."
    text = " ".join([sentence] * 8)
    tokens = text.split()
    no_letter = [t for t in tokens if not any(c.isalpha() for c in t)]
    assert len(no_letter) / len(tokens) > 0.2  # would fail alpha_words if they were words
    assert reasons(only("gopher_quality"), text) == [None]


def test_rows_of_a_batch_are_independent():
    bad_short = "Too short to keep."
    bad_lorem = PROSE + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit."
    stage = Heuristics()
    batch = reasons(stage, bad_short, PROSE, bad_lorem, PROSE)
    assert batch == ["gopher/too_few_words", None, "c4/lorem_ipsum", None]
    for text, expected in zip([bad_short, PROSE, bad_lorem], batch):
        assert reasons(stage, text) == [expected]


@pytest.mark.parametrize("texts", [[], [""], ["Too short."], ["One two", "three"]])
def test_tiny_batches(texts):
    # a batch with fewer words in all than the longest n-gram (10) must not crash
    assert reasons(Heuristics(), *texts) == ["gopher/too_few_words"] * len(texts)


def test_rejected_rows_keep_their_text_kept_rows_get_c4_text():
    bad = "Too short to keep.\nlorem"
    out = Heuristics()(pa.table({"text": [bad, PROSE]}))
    assert out.column("text").to_pylist() == [bad, "\n\n".join(PROSE_LINES)]
    assert out.column("c4_lines_removed").type == pa.int32()


# ----------------------------------------------------------------------------- Gopher quality


def test_gopher_too_few_words():
    assert_rule(only("gopher_quality"), "The cat sat with the dog by the door.", "gopher/too_few_words")


def test_gopher_too_many_words():
    stage = only("gopher_quality", max_words=300)
    assert_rule(stage, PROSE + "\n" + PROSE, "gopher/too_many_words")


def test_gopher_mean_word_length_short_and_long():
    short = " ".join(["I am to go up to it as we do, so be it."] * 6)
    long = " ".join(["The internationalization of telecommunications infrastructure "
                     "necessitates extraordinarily comprehensive interoperability considerations."] * 6)
    stage = only("gopher_quality")
    assert reasons(stage, PROSE, short, long) == [None, "gopher/mean_word_length", "gopher/mean_word_length"]


def test_gopher_symbol_word_ratio_hash_and_ellipsis():
    hashes = " ".join(f"{w} #news #today" for w in PROSE.split()[:60])
    ellipses = " ".join(f"{w}..." if i % 5 == 0 else w for i, w in enumerate(PROSE.split()))
    stage = only("gopher_quality")
    assert reasons(stage, PROSE, hashes, ellipses) == [None, "gopher/symbol_word_ratio", "gopher/symbol_word_ratio"]


def test_gopher_bullet_lines():
    bullets = "\n".join(f"- {s}" for s in PROSE_LINES[0].split(". ")) + "\n" + "\n".join(
        f"* {s}" for s in PROSE_LINES[3].split(", "))
    assert_rule(only("gopher_quality"), bullets, "gopher/bullet_lines")


def test_gopher_ellipsis_lines():
    sentences = PROSE.replace("\n", " ").split(". ")
    lines = [s + ("..." if i % 2 else ".") for i, s in enumerate(sentences[:12])]
    assert_rule(only("gopher_quality"), "\n".join(lines), "gopher/ellipsis_lines")


def test_gopher_alpha_words():
    numbers = " ".join(f"In {1900 + i} the price of the item was {1000 + 7 * i} and {2000 + 3 * i} {3000 + i}."
                       for i in range(10))
    assert_rule(only("gopher_quality"), numbers, "gopher/alpha_words")


def test_gopher_stop_words():
    no_stop = (
        "Rivers carry sediment downstream toward coastal plains where deltas slowly form. "
        "Farmers plant rice along fertile banks each spring. Floods arrive every few years, "
        "bringing fresh silt but also destroying houses, roads, bridges. Engineers build levees "
        "so towns stay dry, yet such walls starve wetlands downstream. Fishermen report smaller "
        "catches since dams went up upstream. Scientists measure salinity, turbidity, oxygen "
        "levels across dozens among monitoring stations."
    )
    assert_rule(only("gopher_quality"), no_stop, "gopher/stop_words")


def test_gopher_stop_word_ratio_is_off_by_default_and_catches_keyword_lists():
    spam = PROSE.split("\n\n")[0] + "\n\n" + ", ".join(
        f"best {a} {b}" for a, b in zip(unique_words(120, start=0), unique_words(120, start=500)))
    assert reasons(only("gopher_quality"), spam) == [None]
    assert_rule(only("gopher_quality", min_stop_word_ratio=0.06), spam, "gopher/stop_word_ratio")


# ----------------------------------------------------------------------------- Gopher repetition


def test_gopher_rep_dup_line_frac():
    text = "\n".join(PROSE_LINES[:3] + [PROSE_LINES[0]] * 2)
    assert_rule(only("gopher_repetition"), text, "gopher_rep/dup_line_frac")


def test_gopher_rep_dup_para_frac():
    # A one-line paragraph appears three times between two ten-line paragraphs:
    # 2 of 5 paragraphs are repeats (40 %) but only 2 of 23 lines (9 %).
    words = unique_words(40)
    repeated = "Short repeated paragraph."
    para_a = "\n".join(line(words[i:i + 2]) for i in range(0, 20, 2))
    para_b = "\n".join(line(words[i:i + 2]) for i in range(20, 40, 2))
    text = "\n\n".join([repeated, para_a, repeated, para_b, repeated])
    assert_rule(only("gopher_repetition"), text, "gopher_rep/dup_para_frac")


def test_gopher_rep_dup_line_char_frac():
    # One long line twice among short unique lines: few duplicate lines, many characters.
    long_line = PROSE_LINES[2]
    text = "\n".join([long_line] + [line(unique_words(3, start=3 * i)) for i in range(8)] + [long_line])
    assert_rule(only("gopher_repetition"), text, "gopher_rep/dup_line_char_frac")


def test_gopher_rep_dup_para_char_frac():
    # A paragraph of 20 one-letter lines appears twice. Its lines are short, so its
    # repeat is under 20 % of the characters as lines but over 20 % once the newlines
    # inside the paragraph are counted; 30 other single-character lines in two more
    # paragraphs keep the duplicate line and paragraph counts under 30 %.
    para = "\n".join("abcdefghijklmnopqrst")
    other = "uvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
    text = "\n\n".join([para, "\n".join(other[:15]), para, "\n".join(other[15:])])
    assert_rule(only("gopher_repetition"), text, "gopher_rep/dup_para_char_frac")


def _ngram_doc(n_gram: int, fillers: int, repeats: int = 8) -> str:
    """One n-gram of 6-letter words repeated, each copy followed by unique filler words."""
    gram = unique_words(n_gram, start=10_000)
    words, k = [], 0
    for _ in range(repeats):
        words += gram + unique_words(fillers, start=k)
        k += fillers
    return line(words)


@pytest.mark.parametrize("n, fillers", [(2, 1), (3, 7), (4, 14)])
def test_gopher_rep_top_ngram(n, fillers):
    # fillers chosen so the (n-1)-gram covers under its threshold and the n-gram over it
    assert_rule(only("gopher_repetition"), _ngram_doc(n, fillers), f"gopher_rep/top_{n}gram")


def test_gopher_rep_dup_5gram():
    # 30 unique words said twice: every 2/3/4-gram occurs only twice (top n-gram rules
    # pass) but half the characters lie in repeated 5-grams.
    words = unique_words(30)
    assert_rule(only("gopher_repetition"), line(words + words), "gopher_rep/dup_5gram")


def test_gopher_rep_dup_10gram():
    # One 12-word span repeated once in 98 words: about 10.5 % of the characters lie in
    # repeated 5..10-grams, under the 5..9-gram limits (15 % .. 11 %) and over 10 %.
    span = unique_words(12, start=5_000)
    filler = unique_words(74)
    text = line(filler[:20] + span + filler[20:40] + span + filler[40:])
    assert_rule(only("gopher_repetition"), text, "gopher_rep/dup_10gram")


# ----------------------------------------------------------------------------- C4


def test_c4_lorem_ipsum():
    assert_rule(only("c4"), PROSE + "\nLorem ipsum dolor sit amet, consectetur adipiscing elit.", "c4/lorem_ipsum")


def test_c4_curly_bracket():
    assert_rule(only("c4"), PROSE + "\nThe function body is written as {return x + 1;} here.", "c4/curly_bracket")


def test_c4_too_few_sentences():
    text = "The harbour froze in January. The boats stayed in the basin until March."
    assert_rule(only("c4"), text, "c4/too_few_sentences")


def test_c4_line_removal():
    bad_lines = [
        "Please enable JavaScript in your browser to see this page.",
        "By using this site you agree to our Privacy Policy and terms.",
        "Read more.",  # fewer than 3 words
        "Share this story with your friends and family",  # no terminal punctuation
    ]
    mixed = [PROSE_LINES[0], bad_lines[0], PROSE_LINES[1], bad_lines[1], bad_lines[2],
             PROSE_LINES[2], PROSE_LINES[3], bad_lines[3], *PROSE_LINES[4:]]
    out = only("c4")(pa.table({"text": ["\n".join(mixed), "\n".join(PROSE_LINES)]}))
    assert out.column("reject_reason").to_pylist() == [None, None]
    assert out.column("text").to_pylist() == ["\n".join(PROSE_LINES)] * 2
    assert out.column("c4_lines_removed").to_pylist() == [4, 0]


def test_c4_terminal_punct_filter_can_be_turned_off():
    text = "\n".join(PROSE_LINES + ["Share this story with your friends and family"])
    out = only("c4", filter_no_terminal_punct=False)(pa.table({"text": [text]}))
    assert out.column("text").to_pylist() == [text]
    assert out.column("c4_lines_removed").to_pylist() == [0]


# ----------------------------------------------------------------------------- FineWeb


def test_fineweb_line_punct_ratio():
    lines = [line(unique_words(8, start=8 * i)) for i in range(10)]  # long lines, no end punctuation
    assert_rule(only("fineweb"), "\n".join(lines), "fineweb/line_punct_ratio")


def test_fineweb_short_line_ratio():
    short = ["Apples grow on tall trees.", "Rain fell over the hills.", "The dog slept by the fire.",
             "Boats rocked in the harbour.", "She closed the old book.", "Snow covered every road.",
             "He walked home alone.", "The bell rang at noon."]
    lines = short + PROSE_LINES[:2]
    assert all(len(s) <= 30 for s in short)
    assert_rule(only("fineweb"), "\n".join(lines), "fineweb/short_line_ratio")


def test_fineweb_char_dup_ratio():
    text = "\n".join(PROSE_LINES + [PROSE_LINES[0][:80] + "."] * 2)
    assert_rule(only("fineweb"), text, "fineweb/char_dup_ratio")


def test_fineweb_list_ratio():
    # lines longer than 30 characters, ending in '.', but only two words each
    long_words = ["Internationalization", "Characterization", "Telecommunications", "Disproportionately",
                  "Incomprehensibility", "Counterrevolutionary", "Institutionalization", "Uncharacteristically"]
    lines = [f"{a} {b.lower()}." for i, a in enumerate(long_words) for b in long_words[i + 1:]]
    assert all(len(s) > 30 for s in lines)
    assert_rule(only("fineweb"), "\n".join(lines), "fineweb/list_ratio")


def test_fineweb_empty():
    assert_rule(only("fineweb"), "  \n\t\n ", "fineweb/empty")


# ----------------------------------------------------------------------------- speed-ups keep the outputs


def _reference_ngram_hashes(words, n_max):
    """textstats.ngram_hashes before issue 18: every n-gram of every length, at every position."""
    import numpy as np

    from datacurate.text import textstats as ts

    codes = words.codes()
    pos = np.arange(len(codes)) - words.offsets[words.doc]
    remaining = words.counts[words.doc] - pos
    sentinel = np.arange(len(codes), dtype=np.uint64) | np.uint64(1 << 63)
    h = ts.mix(words.doc.astype(np.uint64), codes)
    hashes = [h]
    for n in range(2, n_max + 1):
        shifted = np.zeros_like(codes)
        m = max(len(codes) - n + 1, 0)
        shifted[:m] = codes[n - 1:]
        h = ts.mix(h, shifted)
        hashes.append(np.where(remaining >= n, h & np.uint64((1 << 63) - 1), sentinel))
    return pos, hashes


def _real_and_repetitive_texts() -> list[str]:
    """sample_data documents (prose, web noise, man pages), and the same with spans of 3..14
    words repeated, so that n-grams of every length repeat, within and across lines."""
    import random
    from pathlib import Path

    import orjson

    corpus = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"
    texts = []
    for name in ("news.jsonl", "web_noise.jsonl", "technical_multilingual.jsonl", "conversational.jsonl"):
        with open(corpus / name, "rb") as f:
            texts += [orjson.loads(line)["text"][:3000] for line in f if line.strip()][:60]
    rng = random.Random(0)
    out = []
    for t in texts:
        out.append(t)
        words = t.split(" ")
        for _ in range(rng.randrange(1, 4)):
            n, at = rng.randrange(3, 15), rng.randrange(len(words))
            span = words[at:at + n]
            k = rng.randrange(len(words) + 1)
            words = words[:k] + span + words[k:]
        out.append(" ".join(words))
    return out + ["", "one", "a b a b a b a b a b a b"]


def test_repeated_ngrams_found_among_fewer_positions_match_hashing_every_position():
    """ngram_hashes looks for repeats of the n-grams longer than the top-n-gram ones only
    where the shorter n-gram occurs twice (issue 18): the repeat positions, the hashes and
    every repetition statistic must be those of hashing every n-gram at every position."""
    import numpy as np
    import pyarrow as pa

    from datacurate.text import textstats as ts

    texts = pa.array(_real_and_repetitive_texts(), pa.large_string())
    words = ts.words_of(texts)
    word_len = words.lengths()
    ref_pos, ref = _reference_ngram_hashes(words, 10)
    pos, hashes, starts = ts.ngram_hashes(words, 4, (5, 6, 7, 8, 9, 10))
    assert np.array_equal(pos, ref_pos) and len(hashes) == 4
    assert all(np.array_equal(a, b) for a, b in zip(hashes, ref[:4]))
    found = 0
    for n in range(5, 11):
        ref_starts = np.flatnonzero(ts.repeated(ref[n - 1]))
        assert np.array_equal(np.sort(starts[n]), ref_starts), n
        assert np.array_equal(ts.dup_ngram_chars(words, starts[n], n, word_len),
                              ts.dup_ngram_chars(words, ref_starts, n, word_len))
        found += len(ref_starts)
    assert found > 100  # the texts do repeat long n-grams: the comparison is not vacuous
    # a top n-gram set that ends above the first repeated one, and no top n-grams at all
    for n_max, n_dup in ((6, (5, 6, 8)), (1, (2, 3)), (2, ())):
        _, hashes, starts = ts.ngram_hashes(words, n_max, n_dup)
        assert all(np.array_equal(a, b) for a, b in zip(hashes, ref[:n_max])) and len(hashes) == n_max
        for n in n_dup:
            assert np.array_equal(np.sort(starts[n]), np.flatnonzero(ts.repeated(ref[n - 1])))


def test_words_from_the_c4_line_split_are_the_words_of_the_text():
    """The documents' words now come from the lines C4 splits (issue 18: one split instead of
    three): the same words, in the same order, as splitting each text, and FineWeb's word
    counts of the C4-cleaned text."""
    import numpy as np
    import pyarrow as pa

    from datacurate.text import textstats as ts
    from datacurate.stages.heuristics import C4Config, HeuristicsConfig, Lines, c4_rules

    texts = pa.array(_real_and_repetitive_texts() + [
        "a line\r\nanother -- one\n\n\n  \t indented , words\u00a0here\u2028x\n-- *\n", None, "\n\n", "  lone  "],
        pa.large_string())
    split = Lines.of(texts)
    words, per_line = split.words()
    ref = ts.words_of(texts)
    assert words.values.equals(ref.values) and len(ref.values) > 10_000
    assert np.array_equal(words.doc, ref.doc) and np.array_equal(words.offsets, ref.offsets)
    for cfg in (C4Config(), C4Config(filter_no_terminal_punct=False)):
        rows = HeuristicsConfig(c4=cfg).table().rows(None, None, len(texts))
        _, new_text, _, dropped = c4_rules(texts, rows, split)
        assert 0 < dropped.sum() < len(dropped)
        assert np.array_equal(split.lines.per_doc(per_line * ~dropped), ts.words_of(new_text).counts)


def test_fineweb_sentence_ends_is_off_by_default_and_catches_text_without_a_sentence():
    salad = "\n".join(line(unique_words(10, start=10 * i)) for i in range(30))  # 300 words, no sentence end
    assert reasons(only("fineweb"), PROSE, salad)[1] != "fineweb/sentence_ends"
    # line_punct off (FineWeb-2's 0 in 62 language-scripts): only the sentence-end rule can see it
    stage = only("fineweb", min_line_punct_ratio=0, min_sentence_end_ratio=0.005)
    assert reasons(stage, PROSE, salad) == [None, "fineweb/sentence_ends"]
    # decimals and host names are not sentence ends; a script's own end mark is, with no space after
    from datacurate.text.rulestats import SENTENCE_END_RE
    import pyarrow.compute as pc
    counts = pc.count_substring_regex(pa.array(["Version 3.5 of example.com is out", "It rained. We stayed (in).",
                                                 "他来了。我们走吧！", "ये किताब है। वह घर है।", "«Oui.» Non!",
                                                 "ฉันไปตลาดเมื่อวาน วันนี้ฝนตก", "ฉันไปตลาดเมื่อวานวันนี้ฝนตก 2024 ปี"]),
                                      SENTENCE_END_RE).to_pylist()
    assert counts == [0, 2, 2, 2, 2, 1, 0]  # Thai: a space between Thai letters ends a sentence


def test_order_names_the_reason_never_changes_what_is_kept():
    repeated = "\n".join([line(unique_words(8)) + "."] * 10)  # repeated lines without a stop word
    texts = [PROSE, repeated, "Too short to keep."]
    default = reasons(Heuristics(), *texts)
    rep_first = reasons(Heuristics(order=["gopher_repetition", "gopher_quality", "c4", "fineweb"]), *texts)
    assert [r is None for r in default] == [r is None for r in rep_first] == [True, False, False]
    assert default[1].startswith("gopher/") and rep_first[1].startswith("gopher_rep/")
    with pytest.raises(ValueError, match="order"):
        Heuristics(order=["gopher_quality", "fineweb"])
