"""Layout characters do not decide a page's language or its rules (datacurate/text/layout.py):
real English pages whose words are joined by U+00A0 (Debian's valgrind manual, DocBook
HTML) are ``en`` after extraction, both engines; the stored text keeps its characters."""

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from datacurate.stages.extract import Extract
from datacurate.stages.heuristics import Heuristics
from datacurate.stages.langid import LangId
from datacurate.text.layout import layout_normalized
from tests.texts import PROSE_LINES

PAGES = sorted((Path(__file__).resolve().parent.parent / "data" / "html").glob("dist.*.html"))


@pytest.fixture(scope="module")
def langid():
    return LangId(languages=["en"], min_score=0.65)


@pytest.mark.parametrize("engine", ["trafilatura", "resiliparse"])
def test_valgrind_pages_are_english(langid, engine):
    html = [p.read_text("utf-8") for p in PAGES]
    assert len(html) == 4 and all(h.count("\xa0") > 200 for h in html)
    text = Extract(engine=engine, timeout=None)(pa.table({"id": [p.name for p in PAGES], "text": html}))
    assert pc.all(pc.is_null(text.column("reject_reason"))).as_py()
    assert all(t.count("\xa0") > 100 for t in text.column("text").to_pylist())  # the extractors keep them
    out = langid(text.select(["text"]))
    assert out.column("lang").to_pylist() == ["en"] * 4, out.column("lang_score").to_pylist()
    assert min(out.column("lang_score").to_pylist()) >= 0.65
    assert out.column("reject_reason").null_count == 4
    assert out.column("text").equals(text.column("text"))  # stored text unchanged
    # without the normalisation these very pages are not English to lid.176 (what the peers get)
    raw = langid.model.predict([t.replace("\n", " ") for t in text.column("text").to_pylist()], k=1)[0]
    assert all(labels[0] != "__label__en" for labels in raw)


def test_the_view():
    texts = pa.array(["a\xa0b\u2009c\u3000d\u202fe", "soft\xadhyphen zero\u200bwidth \ufeffbom \u200ekeep\u200djoiner",
                      "line one\nline\xa0two", None, "nothing to do"], pa.large_string())
    assert layout_normalized(texts).to_pylist() == [
        "a b c d e", "softhyphen zerowidth bom keep\u200djoiner", "line one\nline two", None, "nothing to do"]
    plain = pa.array(["nothing to do"], pa.large_string())
    assert layout_normalized(plain) is plain


def test_rules_read_the_view_and_c4_cuts_the_stored_text():
    """Real prose whose words and sentences are joined by U+00A0 (RE2's white space is
    ASCII: C4 found no sentence end in it): the rules read the view, and C4's cut of a menu
    line keeps the stored lines, U+00A0 and all."""
    paras = [p.replace(" ", "\xa0") for p in PROSE_LINES]
    page = "\n".join(paras[:2] + ["Menu"] + paras[2:])
    out = Heuristics()(pa.table({"text": pa.array([page], pa.large_string())}))
    assert out.column("reject_reason").to_pylist() == [None]
    assert out.column("c4_lines_removed").to_pylist() == [1]
    assert out.column("text").to_pylist() == ["\n".join(paras)]
