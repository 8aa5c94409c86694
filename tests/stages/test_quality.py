"""Stage ``quality``: the shipped fastText classifier on handmade and sample_data texts.

The "clean prose" cases are text the model never saw in training: tests/texts.py's
handmade article and sample_data's target/ Brown samples (held out of the recipe).
The spam and boilerplate cases are sample_data web pages built by sample_data/build.py
with its own phrase banks, not the recipe's.
"""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from datacurate.configs.pipeline import ConfigError
from datacurate.stages.quality import Quality
from datacurate.stages.quality import pareto_draws
from tests.texts import PROSE

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"

SPAM = ("cheap flights cheap flights online best cheap flights deals flights flights discount flights "
        "book cheap flights now cheap hotel flights best price flights cheap flights 2024 cheap flights") * 3
BOILERPLATE = "\n".join([
    "Home | News | Sport | Weather | Contact us | Log in",
    "Accept cookies | Manage settings",
    "Subscribe to our newsletter for the latest updates",
    "Share on Facebook | Share on Twitter | Email",
    "Related: Ten things you did not know | Watch the video | Top stories",
    "Copyright 2021 Example Media Ltd. All rights reserved. Terms | Privacy",
])


def table(texts, **cols):
    return pa.table({"text": pa.array(texts, pa.large_string()), **cols})


def web_noise(kind):
    docs = [json.loads(x) for x in (SAMPLE / "corpus" / "web_noise.jsonl").open()]
    return [d["text"] for d in docs if d["meta"].get("kind") == kind]


@pytest.fixture(scope="module")
def stage():
    return Quality()


def test_clean_prose_scores_high(stage):
    target = [json.loads(x)["text"] for x in (SAMPLE / "target" / "target.jsonl").open()]
    out = stage(table([PROSE] + target))
    scores = np.array(out.column("quality_score").to_pylist())
    assert scores[0] > 0.9
    assert np.median(scores) > 0.95 and scores.min() > 0.5
    assert out.column("reject_reason").null_count == out.num_rows


@pytest.mark.parametrize("kind", ["spam", "links", "lorem"])
def test_spam_and_boilerplate_pages_score_low(stage, kind):
    docs = web_noise(kind)
    out = stage(table(docs))
    assert max(out.column("quality_score").to_pylist()) < 0.5
    assert set(out.column("reject_reason").to_pylist()) == {"quality/low_score"}


def test_handmade_spam_and_boilerplate(stage):
    out = stage(table([SPAM, BOILERPLATE, PROSE]))
    s = out.column("quality_score").to_pylist()
    # the repeated-keyword page scores ~0.5, above the 0.1 default: the model alone keeps it (a
    # known gap, classifiers/README.md); the pipeline's heuristics stage removes it first
    assert s[1] < 0.1 and s[2] > 0.9 and s[0] < s[2]
    assert out.column("reject_reason").to_pylist() == [None, "quality/low_score", None]
    from datacurate.stages.heuristics import Heuristics

    assert Heuristics()(table([SPAM])).column("reject_reason")[0].as_py().startswith("gopher/")


def _real_pages():
    import sys

    sys.path.append(str(Path(__file__).resolve().parents[2] / "classifiers" / "recipes"))
    import web_sources

    return web_sources.article_pages()


def test_modern_articles_above_threshold_and_their_boilerplate_below(stage):
    """Real 2019-2020 news and blog pages (benchmarks/data/article-extraction): the article
    bodies were never training examples; the shipped threshold keeps most of them and
    rejects most of the same pages' non-article text (menus, notices, related headlines)."""
    pages = _real_pages()
    art = stage(table([" ".join(p) for _, p, _ in pages]))
    boiler = stage(table(["\n".join(b) for _, _, b in pages]))
    kept_art = art.column("reject_reason").null_count / art.num_rows
    kept_boiler = boiler.column("reject_reason").null_count / boiler.num_rows
    assert kept_art >= 0.85 and kept_boiler <= 0.15, (kept_art, kept_boiler)


def test_model_card_matches_the_file():
    from datacurate.stages.quality import DEFAULT_MODEL, QualityConfig
    import hashlib

    card = json.loads(DEFAULT_MODEL.with_suffix(".json").read_text())
    assert card["sha256"] == hashlib.sha256(DEFAULT_MODEL.read_bytes()).hexdigest()
    assert card["size_bytes"] == DEFAULT_MODEL.stat().st_size
    assert card["decision_threshold"]["threshold"] == QualityConfig().min_score
    assert card["decision_threshold"]["heldout"]["articles_kept"] >= 0.8
    readme = (DEFAULT_MODEL.parent / "README.md").read_text()
    assert card["sha256"][:8] in readme and f"{card['heldout']['roc_auc']:.3f}" in readme


def test_the_model_reads_a_prefix_of_max_chars(stage):
    """A long page: clean prose first, then spam. The default bound (2,000 characters)
    scores the prose alone; the whole page is scored with a larger bound."""
    page = PROSE * (2000 // len(PROSE) + 1) + "\n" + SPAM * 20
    head = page[:2000]
    assert len(page) > 2000 and SPAM not in head
    short, whole = stage(table([page, head])), Quality(max_chars=100_000)(table([page]))
    a, b = short.column("quality_score").to_pylist()
    assert a == b > 0.5
    assert whole.column("quality_score")[0].as_py() < 0.5


def test_threshold_is_configurable(stage):
    scores = stage(table([SPAM, PROSE])).column("quality_score").to_pylist()
    none_rejected = Quality(min_score=0.0)(table([SPAM, PROSE]))
    assert none_rejected.column("reject_reason").null_count == 2
    strict = Quality(min_score=min(1.0, scores[1] + 1e-6))(table([SPAM, PROSE]))
    assert strict.column("reject_reason").to_pylist() == ["quality/low_score"] * 2


def test_only_listed_languages_are_scored(stage):
    out = stage(table([BOILERPLATE] * 3, lang=pa.array(["en", "de", None])))
    assert out.column("quality_score").is_valid().to_pylist() == [True, False, False]
    assert out.column("reject_reason").to_pylist() == ["quality/low_score", None, None]
    every = Quality(languages=None)(table([BOILERPLATE] * 2, lang=pa.array(["en", "de"])))
    assert every.column("reject_reason").to_pylist() == ["quality/low_score"] * 2


def test_bad_input_scores_without_error(stage):
    texts = ["", "   \n\t ", "word " * 200_000, "a" * 1_000_000, "Погода была холодной, и лодки всю зиму оставались в гавани.",
             "天気は寒く、船は冬の間ずっと港に停泊していた。", "مرحبا بالعالم", "\x00\x01 \ufffd", "🙂" * 1000]
    out = Quality(languages=None)(table(texts))
    s = np.array(out.column("quality_score").to_pylist(), dtype=float)
    assert out.num_rows == len(texts) and np.all((s >= 0) & (s <= 1))
    assert s[0] == 0.0 and s[1] == 0.0  # empty text: nothing to score


def test_pareto_sampling_keeps_mostly_high_scores():
    ids = [f"doc-{i}" for i in range(400)]
    prose = Quality(mode="pareto")(table([PROSE] * 400, id=ids))
    spam = Quality(mode="pareto")(table([BOILERPLATE] * 400, id=ids))
    p_keep = (2.0 - prose.column("quality_score")[0].as_py()) ** -9.0  # P(Lomax(9) > 1 - s)
    assert p_keep > 0.99 and prose.column("reject_reason").null_count >= 390  # score ~1: nearly always kept
    n_kept = spam.column("reject_reason").null_count
    assert n_kept < 10  # score ~0: P(keep) = 2 ** -9
    assert set(spam.column("reject_reason").drop_null().to_pylist()) == {"quality/pareto_sample"}


def test_pareto_draws_are_per_document_and_seeded():
    keys = [f"doc-{i}" for i in range(20_000)]
    d = pareto_draws(keys, seed=0, alpha=9.0)
    assert d.min() >= 0 and abs(d.mean() - 1 / 8) < 0.01  # Lomax(alpha) mean = 1 / (alpha - 1)
    # a document's draw does not depend on the batch it arrives in, but does on the seed
    assert np.array_equal(np.concatenate([pareto_draws(keys[:7], 0, 9.0), pareto_draws(keys[7:], 0, 9.0)]), d)
    assert not np.array_equal(pareto_draws(keys, seed=1, alpha=9.0), d)


def test_pareto_verdicts_do_not_depend_on_batching():
    texts = [PROSE[: 60 * (i + 1)] for i in range(30)] + [SPAM] * 10  # a spread of scores
    ids = [f"d{i}" for i in range(len(texts))]
    st = Quality(mode="pareto", seed=3)
    whole = st(table(texts, id=ids)).column("reject_reason").to_pylist()
    parts = st(table(texts[:13], id=ids[:13])).column("reject_reason").to_pylist() + \
        st(table(texts[13:], id=ids[13:])).column("reject_reason").to_pylist()
    assert whole == parts


def test_histogram_metric(stage):
    out = stage(table([BOILERPLATE, PROSE, ""], lang=pa.array(["en", "en", "de"])))
    hist = stage.metrics(out)["quality_score_hist"]
    assert list(hist) == [f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in range(10)]
    assert sum(hist.values()) == 2 and hist["0.0-0.1"] == 1 and hist["0.9-1.0"] == 1


@pytest.mark.parametrize("params, message", [
    ({"min_score": 1.5}, "min_score"),
    ({"mode": "top_k"}, "is not one of"),
    ({"pareto_alpha": 0}, "pareto_alpha"),
    ({"min_scor": 0.5}, "did you mean 'min_score'"),
])
def test_config_errors(params, message):
    with pytest.raises(ConfigError, match=message):
        Quality(**params)


def test_missing_model_or_label():
    with pytest.raises(FileNotFoundError):
        Quality(model="/nonexistent/model.ftz")
    with pytest.raises(ValueError, match="no label 'good'"):
        Quality(label="good")
