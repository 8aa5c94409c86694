"""The toxicity recipe's duplicate check: extra training-only text must never bring a
held-out sentence (or one sentence of a held-out unit, or a copy that differs only in
spacing and punctuation) into training. Pure functions; nothing is downloaded."""

import importlib.util
import sys
from pathlib import Path

RECIPES = Path(__file__).resolve().parents[1] / "classifiers" / "recipes"


def _recipe():
    sys.path.insert(0, str(RECIPES))
    try:
        spec = importlib.util.spec_from_file_location("toxicity_recipe", RECIPES / "toxicity.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(RECIPES))


def test_norm_ignores_spacing_case_and_punctuation():
    T = _recipe()
    assert T._norm("Nope,Nothing special recently.") == T._norm("nope, nothing  special recently")
    assert T._norm("Hello world") != T._norm("Hello words")
    assert T._norm("!!!") == "!!!" and T._norm("...") != T._norm("!!!")  # no letters: whitespace rule


def test_new_sentences_drops_whole_units_their_sentences_and_near_copies():
    T = _recipe()
    existing = {"nlp/doc-1": ["Why did the chicken cross the road? To get to the other side.",
                              "I'll be home by eight,ok"]}
    items = [("fortune/a", ["To get to the other side.",              # one sentence of a held unit
                            "I'll be home by eight, OK!",              # same letters, other spacing
                            "A new joke. A new joke.",                 # repeated within the extra data
                            "Something else entirely."]),
             ("fortune/b", ["why did the chicken cross the road?"])]  # the unit's other sentence
    dropped: dict = {}
    out = T._new_sentences(existing, items, dropped)
    assert out == {"fortune/a": ["A new joke.", "Something else entirely."]}
    assert dropped == {"duplicate_sentences_dropped": 4}


def test_extra_files_and_candidates_cover_every_extra():
    T = _recipe()
    work = Path("/w")
    assert T.extra_files(work, "none") == []
    assert T.extra_files(work, "fortunes+nlp-older") == ["/w/units_fortunes.jsonl", "/w/units_nlp_older.jsonl"]
    default, more = T.candidates(False), T.candidates(True)
    assert {x for x, _, _ in default} == {"none", "fortunes", "fortunes+nlp-older"}
    assert set(more) - set(default) == {(T.EXTRAS[3], w, n) for w, n in T.SETTINGS}
    # validate() names the extra data by its number of files: every EXTRAS entry has its own
    assert [len(T.extra_files(work, x)) for x in T.EXTRAS] == list(range(len(T.EXTRAS)))
