"""The long-tail set (tests/data/longtail: 49 real pages of CSS frameworks, CMS blocks, docs
generators, forums, wikis, shops, code, poems and addresses, CJK and RTL): ``native`` empties
no page that trafilatura extracts, and scores its snippets at least as well as trafilatura
(measured: native F1 0.954, trafilatura 0.938; README "extract")."""

from __future__ import annotations

import gzip
import json

import pytest

from datacurate.stages.extract import ExtractConfig
from datacurate.text import extract_eval
from datacurate.text.html import native_text, trafilatura_text
from tests.conftest import REPO

SET = REPO / "tests" / "data" / "longtail"


def load() -> list[tuple[dict, str]]:
    entries = json.loads((SET / "longtail.json").read_text(encoding="utf-8"))
    return [(e, gzip.decompress((SET / "pages" / f"{e['id']}.html.gz").read_bytes()).decode("utf-8")) for e in entries]


@pytest.fixture(scope="module")
def outputs():
    nat, traf = ExtractConfig(engine="native").engine_options(), ExtractConfig().engine_options()
    return [(e, native_text(html, nat), trafilatura_text(html, traf)) for e, html in load()]


def test_the_set_covers_the_shapes_and_names_its_sources():
    entries = [e for e, _ in load()]
    shapes = {e["shape"] for e in entries}
    assert {"tailwind", "bootstrap", "wordpress", "forum", "wiki", "shop", "code", "sphinx", "mkdocs", "poem",
            "address", "cjk", "rtl", "cookie"} <= shapes
    assert all(e["with"] and e["source"].get("licence") for e in entries)
    assert len({e["id"] for e in entries}) == len(entries) >= 45


def test_native_empties_no_page_that_trafilatura_extracts(outputs):
    emptied = [e["id"] for e, nat, traf in outputs if traf.strip() and not nat.strip()]
    assert not emptied


def test_native_scores_the_long_tail_as_well_as_trafilatura(outputs):
    nat = extract_eval.snippet_prf([extract_eval.snippet_counts(e, n) for e, n, _ in outputs])
    traf = extract_eval.snippet_prf([extract_eval.snippet_counts(e, t) for e, _, t in outputs])
    assert nat["f1"] >= traf["f1"] - 0.005, (nat, traf)
    assert nat["precision"] >= 0.95 and nat["recall"] >= 0.9, nat


@pytest.mark.parametrize("shape", ["tailwind", "bootstrap", "wordpress", "forum", "wiki", "shop", "code", "sphinx",
                                   "mkdocs", "poem", "address", "cookie", "cjk", "rtl", "hidden"])
def test_each_shape_keeps_most_of_its_text(outputs, shape):
    """Per shape, native finds at least 3 in 5 of the snippets a person (or readability's
    expected output, or the docs' own main region) marked as main text."""
    counts = [extract_eval.snippet_counts(e, n) for e, n, _ in outputs if e["shape"] == shape]
    tp, fn = sum(c[0] for c in counts), sum(c[2] for c in counts)
    assert tp >= 0.6 * (tp + fn), (shape, counts)
