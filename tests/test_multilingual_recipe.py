"""pipelines/multilingual.yaml end to end through a real local Ray, on the multilingual test set
(48 language-scripts): accounting, per-language outputs (kept/, stats, report), and token shards
mixed over languages by temperature sampling and by a DoReMi-style weights file."""

import json
import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacurate.configs.pipeline import load_config
from datacurate.engine import run_pipeline
from tests import multilingual as ml


SURVIVOR = "fr_Latn-good-1"


def near_copies(doc: dict) -> list[dict]:
    """Two near-copies of a document (one line dropped, one word changed): a cluster of three."""
    lines = doc["text"].split("\n")
    return [dict(doc, id=f"{doc['id']}-copy-1", text="\n".join(lines[:-1])),
            dict(doc, id=f"{doc['id']}-copy-2", text=doc["text"].replace(" la ", " une ", 1))]


def _run(tmp_path_factory, name: str, overrides: list[str], parquet: bool = False):
    docs = ml.documents()
    docs += near_copies(next(d for d in docs if d["id"] == SURVIVOR))
    src = tmp_path_factory.mktemp(f"{name}-in") / ("ml.parquet" if parquet else "ml.jsonl")
    if parquet:
        pq.write_table(pa.Table.from_pylist(docs), src)
    else:
        src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    n = len(docs)
    out = tmp_path_factory.mktemp(name)
    cfg = load_config(ml.RECIPE, ["ray.progress=false", *overrides], input_path=str(src), output_path=str(out))
    return n, run_pipeline(cfg), out


@pytest.fixture(scope="module")
def temperature_run(ray_session, tmp_path_factory):
    return _run(tmp_path_factory, "ml-alpha", [])


def _shard_tokens(shards) -> Counter:
    """Tokens written per domain, read back from the shard files with numpy alone."""
    manifest = json.loads((shards / "manifest.json").read_text())
    got = Counter()
    for L, b in manifest["buckets"].items():
        for f in b["files"]:
            dom = np.memmap(shards / f["domains"], dtype="<u2", mode="r", shape=(f["n"],))
            for i, c in zip(*np.unique(dom, return_counts=True)):
                got[manifest["domains"][i]] += int(c) * int(L)
    return got


def test_accounting_and_languages(temperature_run):
    n, report, out = temperature_run
    t = report["totals"]
    assert t["read"] == n and t["read"] == t["kept"] + t["rejected"] and t["accounted"]
    kept = pq.read_table(out / "kept", columns=["id", "lang", "expect_lang", "variant"]).to_pylist()
    rejected = pq.read_table(out / "rejected", columns=["id", "lang", "reject_stage", "reject_reason"]).to_pylist()
    assert len(kept) == t["kept"] and len(rejected) == t["rejected"]
    stages = [s.name for s in load_config(ml.RECIPE).stages]
    assert all(r["reject_stage"].split(":")[0] in ["input", *stages] and r["reject_reason"] for r in rejected)
    assert all(r["lang"] for r in kept)  # kept/ is columned by language
    # every document the in-process judge keeps (langid + heuristics) is kept here unless a
    # later stage (dedup, decompose) says why not, and every kept one was kept by the judge
    docs = ml.documents()
    judged = {d["id"]: d for d in ml.judge(docs + near_copies(next(d for d in docs if d["id"] == SURVIVOR)))}
    later = {r["id"] for r in rejected if r["reject_stage"] not in ml.RULE_STAGES}
    passed = {i for i, d in judged.items() if d["recipe_reason"] is None}
    assert {r["id"] for r in kept} <= passed
    assert {r["id"] for r in kept} | later >= passed
    # per-language counts in stats.json's profile match kept/ and rejected/
    prof = json.loads((out / "stats.json").read_text())["profile"]["lang"]
    by_lang = Counter(r["lang"] for r in kept)
    assert {k: v["kept"]["docs"] for k, v in prof.items() if "kept" in v} == dict(by_lang)
    assert sum(c["docs"] for v in prof.values() for c in v.values()) == n
    # the report's per-language table: one row per language langid saw
    html = (out / "report.html").read_text()
    table = html[html.index("Per language"):]
    rows = set(re.findall(r"<tr><th>([^<]+)</th><td", table[:table.index("</table>")]))
    assert rows == set(prof)


def test_near_dedup_within_languages_and_rehydration(temperature_run):
    """near_dedup by lang: the two near-copies join the survivor's cluster (size 3, FineWeb-2's
    weight 3); the survivor's tokens count three times in its language's mixture."""
    n, report, out = temperature_run
    kept = {r["id"]: r for r in pq.read_table(out / "kept", columns=["id", "lang", "cluster_size", "upsampling_weight",
                                                                      "n_tokens"]).to_pylist()}
    rejected = {r["id"]: r for r in pq.read_table(out / "rejected", columns=["id", "reject_reason"]).to_pylist()}
    assert kept[SURVIVOR]["cluster_size"] == 3 and kept[SURVIVOR]["upsampling_weight"] == 3
    for i in (f"{SURVIVOR}-copy-1", f"{SURVIVOR}-copy-2"):
        assert rejected[i]["reject_reason"].startswith("near_dedup/")
    assert {r["upsampling_weight"] for i, r in kept.items() if i != SURVIVOR} == {1}
    per = json.loads((out / "shards" / "manifest.json").read_text())["per_domain"]["fr"]
    n_tok = kept[SURVIVOR]["n_tokens"]
    bucketed = n_tok - (n_tok % 2048) % 64  # buckets 64 ... 2048: the tail below 64 is dropped
    assert per["weighted_tokens"] - per["tokens_in_buckets"] == 2 * bucketed


def test_shards_mixed_by_temperature(temperature_run):
    n, report, out = temperature_run
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    kept_langs = set(pq.read_table(out / "kept", columns=["lang"]).column("lang").to_pylist())
    assert set(manifest["domains"]) == kept_langs and len(kept_langs) >= 2
    assert manifest["mixture"]["source"] == "temperature alpha=0.3 over lang"
    per = manifest["per_domain"]
    avail = {d: v["weighted_tokens"] for d, v in per.items()}  # after rehydration
    total = sum(avail.values())
    expect = {d: (a / total) ** 0.3 for d, a in avail.items()}
    norm = sum(expect.values())
    for d, v in per.items():
        assert v["weight"] == pytest.approx(expect[d] / norm, rel=1e-9)
        assert v["target_tokens"] == pytest.approx(total * expect[d] / norm, abs=0.1)
    # the smallest language is up-sampled, the largest down-sampled
    small, large = min(avail, key=avail.get), max(avail, key=avail.get)
    assert per[small]["rate"] > 1 > per[large]["rate"]
    got = _shard_tokens(out / "shards")
    assert got == Counter({d: v["tokens_written"] for d, v in per.items() if v["tokens_written"]})


def test_shards_mixed_by_doremi_weights(ray_session, tmp_path_factory, temperature_run):
    """DoReMi over languages as domains: its domain_weights.json (``{"domain_weights": {...}}``)
    is decompose's mixture_file; here a hand-written one over the languages the run keeps."""
    _, _, first = temperature_run
    langs = sorted(json.loads((first / "shards" / "manifest.json").read_text())["domains"])
    weights = {lang: float(i + 1) for i, lang in enumerate(langs)}
    wfile = tmp_path_factory.mktemp("weights") / "domain_weights.json"
    wfile.write_text(json.dumps({"domain_weights": weights}))
    n, report, out = _run(tmp_path_factory, "ml-doremi",
                          ["decompose.alpha=null", f"decompose.mixture_file={wfile}"], parquet=True)
    assert report["totals"]["read"] == n and report["totals"]["accounted"]  # the same set, as Parquet
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert manifest["mixture"]["source"] == str(wfile)
    norm = sum(weights.values())
    for d, v in manifest["per_domain"].items():
        assert v["weight"] == pytest.approx(weights[d] / norm)


def test_warc_input(ray_session, tmp_path):
    """The same recipe on a WARC (sample_data/commoncrawl: 18 captures): pages are extracted,
    then labelled and filtered per language; the French and Japanese man pages are kept."""
    out = tmp_path / "warc"
    cfg = load_config(ml.RECIPE, ["ray.progress=false"], output_path=str(out),
                      input_path=str(ml.REPO / "sample_data" / "commoncrawl" / "sample.warc.gz"))
    report = run_pipeline(cfg)
    t = report["totals"]
    assert t["read"] == 18 == t["kept"] + t["rejected"] and t["accounted"]
    kept = pq.read_table(out / "kept", columns=["url", "lang", "lang_script"]).to_pylist()
    assert {(r["lang"], r["lang_script"]) for r in kept} >= {("fr", "Latn"), ("ja", "Jpan"), ("en", "Latn")}
    rejected = pq.read_table(out / "rejected", columns=["reject_reason"]).column("reject_reason").to_pylist()
    assert {"extract/http_status", "extract/not_html"} <= set(rejected)
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert set(manifest["domains"]) == {r["lang"] for r in kept}
