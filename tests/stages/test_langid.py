"""Stage ``langid``: fastText lid.176 on small handmade batches."""

import pyarrow as pa
import pytest

from datacurate.stages.langid import LangId

SENTENCES = {
    "en": "The weather was cold and the boats stayed in the harbour all winter.",
    "de": "Das Wetter war kalt und die Boote blieben den ganzen Winter im Hafen.",
    "fr": "Le temps était froid et les bateaux sont restés au port tout l'hiver.",
    "es": "El tiempo era frío y los barcos se quedaron en el puerto todo el invierno.",
    "ru": "Погода была холодной, и лодки всю зиму оставались в гавани.",
    "ja": "天気は寒く、船は冬の間ずっと港に停泊していた。",
}


@pytest.fixture(scope="module")
def annotate():
    stage = LangId()  # load the model once for the module

    def run(texts, **params):
        st = LangId(**params) if params else stage
        return st(pa.table({"text": pa.array(texts, pa.large_string())}))

    return run


def test_languages_identified(annotate):
    out = annotate(list(SENTENCES.values()))
    assert out.column("lang").to_pylist() == list(SENTENCES)
    assert all(s >= 0.9 for s in out.column("lang_score").to_pylist())
    assert out.column("lang_score").type == pa.float32()


def test_no_keep_list_keeps_every_language(annotate):
    out = annotate(list(SENTENCES.values()) + ["", "ok"], languages=None)
    assert out.column("reject_reason").null_count == out.num_rows


def test_keep_list_rejects_other_languages(annotate):
    out = annotate(list(SENTENCES.values()), languages=["en", "fr"])
    expected = [None if lang in ("en", "fr") else "langid/language" for lang in SENTENCES]
    assert out.column("reject_reason").to_pylist() == expected


def test_low_score(annotate):
    # a short, weakly English text: its own language on the keep-list, the threshold
    # just above its score rejects it as low_score (not as the wrong language)
    text = "ok thanks see you"
    out = annotate([text])
    lang, score = out.column("lang")[0].as_py(), out.column("lang_score")[0].as_py()
    assert score < 0.99
    low = annotate([text, SENTENCES["en"]], languages=[lang, "en"], min_score=score + 0.005)
    assert low.column("reject_reason").to_pylist() == ["langid/low_score", None]
    ok = annotate([text], languages=[lang], min_score=score - 0.005)
    assert ok.column("reject_reason").to_pylist() == [None]


def test_empty_text_is_undetermined(annotate):
    texts = ["", "   ", "\n\t\r\n", SENTENCES["en"]]
    out = annotate(texts)
    assert out.column("lang").to_pylist() == ["und", "und", "und", "en"]
    assert out.column("lang_score").to_pylist()[:3] == [0.0, 0.0, 0.0]
    kept = annotate(texts, languages=["en"])
    assert kept.column("reject_reason").to_pylist() == ["langid/no_text"] * 3 + [None]


def test_multiline_text(annotate):
    lines = ["Das Wetter war kalt.", "Die Boote blieben im Hafen.", "Der Winter war lang."]
    out = annotate(["\n".join(lines), "\r\n".join(lines) + "\n", " ".join(lines), "\n\n" + SENTENCES["ru"] + "\u2028"])
    assert out.column("lang").to_pylist() == ["de", "de", "de", "ru"]
    scores = out.column("lang_score").to_pylist()
    assert scores[0] == pytest.approx(scores[2], abs=1e-3)  # newlines do not change the verdict


def test_long_document_uses_a_prefix(annotate):
    text = SENTENCES["en"] + " " + " ".join([SENTENCES["de"]] * 50)
    assert annotate([text], max_chars=len(SENTENCES["en"])).column("lang").to_pylist() == ["en"]
    assert annotate([text]).column("lang").to_pylist() == ["de"]


def test_rejects_bad_config():
    from datacurate.configs.pipeline import ConfigError

    with pytest.raises(ConfigError, match="min_score"):
        LangId(min_score=1.5)
