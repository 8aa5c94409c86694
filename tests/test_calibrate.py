"""``datacurate calibrate`` recovers thresholds planted in a synthetic corpus (issue 47).

Each document is built from drawn parameters, so every statistic's distribution is known:
the threshold calibrate must find is the quantile of the planted distribution at the share
the English threshold removes from the planted English documents (10 % on each fitted side).
"""

import json
import string

import numpy as np
import pyarrow as pa
import yaml

from datacurate.cli import main
from datacurate.stages.heuristics import Heuristics
from datacurate.stages.langid import LangId

STOP = ["le", "la", "de", "et", "un", "il", "en", "du", "au", "ce"]
SHARE = 0.10  # of the English documents each English threshold removes, as planted


def doc(rng, n_long: int, n_punct: int, words_per_line: int, n_dup: int, stop: list[str]) -> str:
    """20 lines of ``words_per_line`` words: ``n_long`` % of words 12 letters long, the rest 2
    (half of those from ``stop``); ``n_punct`` lines end with '.'; ``n_dup`` lines repeat line 0."""
    n = 20 * words_per_line
    letters = np.array(list(string.ascii_lowercase))
    long_words = ["".join(w) for w in rng.choice(letters, (n, 12))]
    short_words = ["".join(w) for w in rng.choice(np.array(list("bcdfgkmnpqrstvwxz")), (n, 2))]
    stops = np.array(stop)[rng.integers(len(stop), size=n)]
    is_long, is_stop = rng.random(n) < n_long / 100, rng.random(n) < 0.5
    words = np.where(is_long, long_words, np.where(is_stop, stops, short_words)).reshape(20, words_per_line)
    lines = [" ".join(ws) for ws in words]
    for i in range(1, n_dup + 1):
        lines[i] = lines[0]
    return "\n".join(line + ("." if i < n_punct else "") for i, line in enumerate(lines))


def corpus(rng):
    rows, planted = [], {}
    n_en, n_fr = 300, 1000
    for i in range(n_en):  # English: 10 % beyond each English threshold, the rest well inside
        bad = i % 10 == 0
        n_long = 45 if not (i % 20 == 1) else (0 if i % 40 == 1 else 100)  # 2.5 % mean 2 (< 3), 2.5 % mean 12 (> 10)
        rows.append({"text": doc(rng, n_long, 0 if bad else 20, 2 if i % 10 == 3 else 10, 8 if i % 10 == 5 else 0,
                                 ["the", "of", "and", "to"]),
                     "lang": "en", "lang_score": 0.95})
    longs = rng.integers(0, 101, n_fr)
    punct = rng.integers(0, 21, n_fr)
    wpl = rng.integers(5, 51, n_fr)
    dups = rng.integers(0, 11, n_fr)
    scores = np.clip(rng.normal(0.8, 0.05, n_fr), 0, 1)
    for j in range(n_fr):
        rows.append({"text": doc(rng, int(longs[j]), int(punct[j]), int(wpl[j]), int(dups[j]), STOP),
                     "lang": "fr", "lang_score": float(scores[j])})
    mean_len = 2 + 0.1 * longs  # expected mean word length of each document
    planted["min_mean_word_length"] = np.quantile(mean_len, 0.025)
    planted["max_mean_word_length"] = np.quantile(mean_len, 0.975)
    planted["min_line_punct_ratio"] = np.quantile(punct / 20, SHARE)
    planted["max_list_ratio"] = np.quantile(19 / (20 * wpl), 1 - SHARE)
    planted["max_dup_line_frac"] = np.quantile(dups / 20, 1 - SHARE)
    planted["min_score"] = max(0.3, min(0.9, np.median(scores) - np.std(scores)))
    return rows, planted


def test_calibrate_recovers_planted_thresholds(tmp_path):
    rows, planted = corpus(np.random.default_rng(0))
    data = tmp_path / "corpus.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "thresholds.yaml"
    assert main(["calibrate", str(data), "--out", str(out), "--languages", "fr"]) == 0
    doc = yaml.safe_load(out.read_text())
    fr = doc["languages"]["fr"]
    assert list(doc["languages"]) == ["fr"] and doc["sample_docs"]["fr"] == 1000
    # stated tolerances: word lengths are whole numbers (+-1, the sampling of 12- and 2-letter
    # words around each document's planted mean); shares of 20 lines +-0.05; newlines per word
    # +-0.01; langid's tau +-0.01
    gq, fw = fr["gopher_quality"], fr["fineweb"]
    assert abs(gq["min_mean_word_length"] - planted["min_mean_word_length"]) <= 1
    assert abs(gq["max_mean_word_length"] - planted["max_mean_word_length"]) <= 1
    assert abs(fw["min_line_punct_ratio"] - planted["min_line_punct_ratio"]) <= 0.05
    assert abs(fw["max_list_ratio"] - planted["max_list_ratio"]) <= 0.01
    assert abs(fr["gopher_repetition"]["max_dup_line_frac"] - planted["max_dup_line_frac"]) <= 0.05
    assert abs(fr["langid"]["min_score"] - planted["min_score"]) <= 0.01
    assert set(gq["stop_words"]) == set(STOP)  # the planted frequent words, and only they
    assert (tmp_path / "thresholds.html").read_text().count("<svg") >= 10

    # both stages take the file
    assert LangId(thresholds=str(out)).min_scores["fr"] == fr["langid"]["min_score"]
    # a document of 13-letter words: above the fitted maximum for French (about 12), not above the default (20)
    short = " ".join(["".join(sorted(string.ascii_lowercase[i:i + 13])) for i in range(13)] * 5 + ["the", "of"]) + "."
    stage = Heuristics(thresholds=str(out), c4={"enabled": False}, gopher_repetition={"enabled": False},
                       fineweb={"enabled": False}, gopher_quality={"max_mean_word_length": 20})
    got = stage(pa.table({"text": pa.array([short, short], pa.large_string()), "lang": ["fr", "en"]}))
    assert got.column("reject_reason").to_pylist() == ["gopher/mean_word_length", None]


def test_calibrate_reads_parquet_and_labels_languages_itself(tmp_path):
    """No lang column: langid labels the documents (and gives the scores tau is fitted on)."""
    import pyarrow.parquet as pq

    from datacurate.calibrate import calibrate

    src = [json.loads(line) for line in open("tests/data/langrules/man1_man.jsonl")]
    paras = [(r["expected_lang"], p) for r in src for p in r["text"].split("\n\n")]
    pq.write_table(pa.table({"text": [p for _, p in paras]}), tmp_path / "paras.parquet")
    res = calibrate([str(tmp_path / "paras.parquet")], str(tmp_path / "t.yaml"), min_docs=10)
    fitted = res["languages"]
    assert {"de", "fr", "ru"} <= set(fitted)
    assert "die" in fitted["de"]["gopher_quality"]["stop_words"] and 0.3 <= fitted["fr"]["langid"]["min_score"] <= 0.9
    assert yaml.safe_load((tmp_path / "t.yaml").read_text())["languages"] == fitted


CYR_TO_LAT = dict(zip("абвгдђежзијклљмнњопрстћуфхцчџшАБВГДЂЕЖЗИЈКЛЉМНЊОПРСТЋУФХЦЧЏШ",
                      ["a", "b", "v", "g", "d", "đ", "e", "ž", "z", "i", "j", "k", "l", "lj", "m", "n", "nj", "o", "p",
                       "r", "s", "t", "ć", "u", "f", "h", "c", "č", "dž", "š", "A", "B", "V", "G", "D", "Đ", "E", "Ž",
                       "Z", "I", "J", "K", "L", "Lj", "M", "N", "Nj", "O", "P", "R", "S", "T", "Ć", "U", "F", "H", "C",
                       "Č", "Dž", "Š"]))


def test_calibrate_fits_each_script_of_a_language_apart(tmp_path):
    """Serbian in Cyrillic (man(1)) and the same text in Serbian Latin (its standard one-to-one
    transliteration): two keys, sr_Cyrl and sr_Latn, which both stages look up by lang_script."""
    from datacurate.calibrate import calibrate

    src = next(json.loads(line) for line in open("tests/data/langrules/man1_man.jsonl") if '"man1-sr"' in line)
    cyr = [p for p in src["text"].split("\n\n")]
    lat = ["".join(CYR_TO_LAT.get(c, c) for c in p) for p in cyr]
    rows = [{"text": p, "lang": "sr", "lang_script": "Cyrl", "lang_score": 0.9} for p in cyr]
    rows += [{"text": p, "lang": "sr", "lang_script": "Latn", "lang_score": 0.6} for p in lat]
    (tmp_path / "sr.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    fitted = calibrate([str(tmp_path / "sr.jsonl")], str(tmp_path / "t.yaml"), languages=["sr"], min_docs=5)["languages"]
    assert set(fitted) == {"sr_Cyrl", "sr_Latn"}
    assert fitted["sr_Latn"]["langid"]["min_score"] == 0.6 and fitted["sr_Cyrl"]["langid"]["min_score"] == 0.9
    assert LangId(thresholds=str(tmp_path / "t.yaml")).min_scores == {"sr_Cyrl": 0.9, "sr_Latn": 0.6}
    lat_stops = set(fitted["sr_Latn"]["gopher_quality"]["stop_words"])
    assert lat_stops and lat_stops == {"".join(CYR_TO_LAT.get(c, c) for c in w)
                                       for w in fitted["sr_Cyrl"]["gopher_quality"]["stop_words"]}
