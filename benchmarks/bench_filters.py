"""Side by side with datatrove: ``decontaminate``, ``pii`` and ``url_filter``, one core.

* **decontaminate** vs datatrove ``NGramsDecontIndexer`` / ``NGramsDecontFilter`` (n = 13
  on both sides). The benchmark is ``eval_decontaminate.py``'s (3,000 records from
  standard-library docstrings); datatrove's index is made with its own
  ``NGramsDecontIndexer.compute_hashes`` on every text of every record (called on a
  stand-in ``self``: building the class requires lighteval) and written as its
  ``run()`` writes it (``<task>.index.hashes``, uint64): ``run()`` itself would import
  lighteval to fetch tasks, which is not installed and needs the network. datatrove
  splits words with its English word tokenizer (spaCy's, blank model). Documents: the eval's labelled set (Brown
  paragraphs, clean and with plants). Both sides build their index once (timed apart).
* **pii** vs datatrove ``PIIFormatter`` (e-mail and IP addresses, public IPs only; it has
  no phone or card detector): datacurate ``Pii`` with ``phone`` and ``card`` off, both
  replacing with ``<EMAIL>`` / ``<IP_ADDRESS>``, so the outputs compare as text.
  Documents: every document of ``sample_data/corpus`` (1,698, 8.4 MB; the man pages hold
  ~1,000 e-mail addresses).
* **url_filter** vs datatrove ``URLFilter(use_integrated_lists=False)`` given the same
  lists (``sample_data/blocklist``: a domain and two URL prefixes) as ``extra_domains`` /
  ``extra_urls``, and no banned words. Documents: the corpus records with a ``url`` and
  URL variants of the listed domain (subdomains, ports, case, ``www.``, paths under and
  beside the listed URLs), 20,000 in all.

Agreement: the same keep / reject decision (decontaminate, url_filter) or the same output
text (pii) per document. Timed: the stage call on Arrow batches (datacurate) or
``filter`` / ``format`` per ``Document`` (datatrove), ``time.process_time`` on one pinned
core, median of ``--repeats``.

Run: ``benchmarks/.venv/bin/python benchmarks/bench_filters.py`` (rewrites the block in
``benchmarks/README.md`` and ``results/filters.json``).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from _common import CORPUS, ROOT, bench_parser, clock, loadavg, machine_info, read_jsonl, replace_block

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import eval_decontaminate  # noqa: E402

from datacurate.stages.pii import Pii  # noqa: E402
from datacurate.stages.url_filter import UrlFilter  # noqa: E402
from datacurate.stages.decontaminate import DecontaminateConfig, build_index, decisions  # noqa: E402

BLOCKLIST = ROOT / "sample_data" / "blocklist"


def timed(fn, repeats: int, tick) -> tuple[float, object]:
    fn()  # warm-up: lazy tables, regex compilation
    times, out = [], None
    for _ in range(repeats):
        t0 = tick()
        out = fn()
        times.append(tick() - t0)
    return statistics.median(times), out


def batches(texts: list[str], size: int, **cols) -> list[pa.Table]:
    return [pa.table({"text": pa.array(texts[s:s + size], pa.large_string()), "_ord": pa.array(range(s, s + len(texts[s:s + size])), pa.int64()),
                      **{k: v[s:s + size] for k, v in cols.items()}}) for s in range(0, len(texts), size)]


# ----------------------------------------------------------------------------- decontaminate
def bench_decont(repeats: int, size: int, tick) -> dict:
    from datatrove.data import Document
    from datatrove.pipeline.decont import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import create_hash_func
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    records, docs = eval_decontaminate.build_set(600, 3000, 0)
    texts = [d["text"] for d in docs]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stdlib.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        cfg = DecontaminateConfig(benchmarks=[path], n=13)
        t0 = tick()
        index = build_index(cfg)
        dc_build = tick() - t0
        dt_cfg = NGramsDecontConfig(n_grams=13)
        # the class asks for lighteval when built: its own hashing method, on a stand-in self
        indexer = SimpleNamespace(config=dt_cfg, tokenizer=load_word_tokenizer("en"),
                                  hash_func=create_hash_func(dt_cfg.hash_config))
        t0 = tick()
        hashes = set()
        for r in records:
            for s in eval_decontaminate_strings(r):
                hashes.update(NGramsDecontIndexer.compute_hashes(indexer, s))
        os.makedirs(os.path.join(d, "dt_index"))
        np.array(sorted(hashes), dtype="<u8").tofile(os.path.join(d, "dt_index", "stdlib.index.hashes"))
        dt_build = tick() - t0
        flt = NGramsDecontFilter(os.path.join(d, "dt_index"), config=dt_cfg)
        flt.load_index_hashes()
        parts = batches(texts, size)
        dc_s, dc_dec = timed(lambda: [decisions(b, index, 1)[0] for b in parts], repeats, tick)
        documents = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
        dt_s, dt_keep = timed(lambda: [flt.filter(doc) is True for doc in documents], repeats, tick)
    dc_reject = np.zeros(len(texts), bool)
    for dec in dc_dec:
        o = np.asarray(dec["_ord"])[np.asarray(dec["reject_reason"].is_valid())]
        dc_reject[o] = True
    dt_reject = ~np.asarray(dt_keep)
    labels = np.array([d["label"] for d in docs])
    by_label = {k: {"docs": int((labels == k).sum()), "datacurate_flagged": int(dc_reject[labels == k].sum()),
                    "datatrove_flagged": int(dt_reject[labels == k].sum())}
                for k in ("ngram", "option", "near_miss", "clean")}
    return {"docs": len(texts), "mean_chars": round(sum(map(len, texts)) / len(texts)),
            "datacurate_docs_per_s": len(texts) / dc_s, "datatrove_docs_per_s": len(texts) / dt_s,
            "index_build_s": {"datacurate": round(dc_build, 3), "datatrove": round(dt_build, 3)},
            "index_entries": {"datacurate": len(index.keys), "datatrove": len(hashes)},
            "agreement": float((dc_reject == dt_reject).mean()), "by_label": by_label}


def eval_decontaminate_strings(rec: dict) -> list[str]:
    return [rec["question"], *rec["choices"]]


# ----------------------------------------------------------------------------- pii
def bench_pii(repeats: int, size: int, tick) -> dict:
    from datatrove.pipeline.formatters import PIIFormatter

    texts = [r["text"] for f in sorted(CORPUS.iterdir()) for r in read_jsonl(f)]
    stage = Pii(phone={"enabled": False}, card={"enabled": False})
    fmt = PIIFormatter(email_replacement="<EMAIL>", ip_replacement="<IP_ADDRESS>")
    parts = batches(texts, size)
    dc_s, dc_out = timed(lambda: [stage(b) for b in parts], repeats, tick)
    dt_s, dt_out = timed(lambda: [fmt.format(t) for t in texts], repeats, tick)
    dc_text = [t for b in dc_out for t in b.column("text").to_pylist()]
    same = [a == b for a, b in zip(dc_text, dt_out)]
    differ = [(t, a, b) for t, a, b, s in zip(texts, dc_text, dt_out, same) if not s]
    return {"docs": len(texts), "mb": round(sum(len(t.encode()) for t in texts) / 1e6, 2),
            "datacurate_docs_per_s": len(texts) / dc_s, "datatrove_docs_per_s": len(texts) / dt_s,
            "agreement": sum(same) / len(same), "changed": {"datacurate": sum(a != t for t, a in zip(texts, dc_text)),
                                                             "datatrove": sum(b != t for t, b in zip(texts, dt_out))},
            "differences": [_diff(a, b) for _, a, b in differ[:8]]}


def _diff(a: str, b: str) -> dict:
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return {"datacurate": a[max(0, i - 40):i + 60], "datatrove": b[max(0, i - 40):i + 60]}


# ----------------------------------------------------------------------------- url_filter
def url_set(n: int, rng: random.Random) -> list[str]:
    urls = [r["url"] for f in sorted(CORPUS.iterdir()) for r in read_jsonl(f) if r.get("url")]
    variants = ["http://shop.example.com/item/{k}", "https://a.shop.example.com/{k}", "http://SHOP.example.com:8080/x{k}",
                "http://www.shop.example.com/", "http://notshop.example.com/{k}", "http://blog.example.net/2009/{k}/post",
                "https://blog.example.net/2010/", "http://blog.example.net/2011/{k}", "http://blog.example.net/20090/{k}",
                "http://news.example.org/{k}"]
    while len(urls) < n:
        urls.append(rng.choice(variants).format(k=rng.randrange(10**6)))
    rng.shuffle(urls)
    return urls[:n]


def bench_url(repeats: int, size: int, tick) -> dict:
    from datatrove.data import Document
    from datatrove.pipeline.filters import URLFilter

    urls = url_set(20_000, random.Random(0))
    domains = (BLOCKLIST / "shopping" / "domains").read_text().split()
    listed = [u for u in (BLOCKLIST / "blogs" / "urls").read_text().split() if not u.startswith("#")]
    stage = UrlFilter(blocklist=[str(BLOCKLIST)])
    flt = URLFilter(extra_domains=domains, extra_urls=listed, use_integrated_lists=False)
    parts = batches(["x"] * len(urls), size, url=pa.array(urls))
    dc_s, dc_out = timed(lambda: [stage(b) for b in parts], repeats, tick)
    documents = [Document(text="x", id=str(i), metadata={"url": u}) for i, u in enumerate(urls)]
    dt_s, dt_out = timed(lambda: [flt.filter(d) for d in documents], repeats, tick)
    dc_reject = np.array([r is not None for b in dc_out for r in b.column("reject_reason").to_pylist()])
    dt_reject = np.array([o is not True for o in dt_out])
    differ = sorted({u for u, a, b in zip(urls, dc_reject, dt_reject) if a != b},
                    key=lambda u: u.split("/")[2].lower())
    return {"docs": len(urls), "datacurate_docs_per_s": len(urls) / dc_s, "datatrove_docs_per_s": len(urls) / dt_s,
            "agreement": float((dc_reject == dt_reject).mean()),
            "rejected": {"datacurate": int(dc_reject.sum()), "datatrove": int(dt_reject.sum())},
            "disagreements": {"datacurate_only": int((dc_reject & ~dt_reject).sum()),
                              "datatrove_only": int((~dc_reject & dt_reject).sum())},
            "examples": [(u, "datacurate" if dc_reject[urls.index(u)] else "datatrove") for u in differ[::max(1, len(differ) // 8)][:8]]}


def main() -> None:
    ap = bench_parser(__doc__, "filters.json")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    args = ap.parse_args()
    tick = clock(args.clock)
    load0 = loadavg()
    res = {"decontaminate": bench_decont(args.repeats, args.batch_size, tick),
           "pii": bench_pii(args.repeats, args.batch_size, tick),
           "url_filter": bench_url(args.repeats, args.batch_size, tick)}
    res["machine"] = machine_info(["datatrove", "nltk", "tldextract", "phonenumbers", "pyarrow", "numpy"])
    res["load"] = [load0, loadavg()]
    res["command"] = f"benchmarks/.venv/bin/python benchmarks/bench_filters.py --repeats {args.repeats} --clock {args.clock}"
    Path(args.out).write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    rows = []
    for name, peer in (("decontaminate", "NGramsDecontFilter (n_grams=13)"), ("pii", "PIIFormatter (e-mail, IP)"),
                       ("url_filter", "URLFilter (same lists, no banned words)")):
        r = res[name]
        ratio = r["datacurate_docs_per_s"] / r["datatrove_docs_per_s"]
        rows.append(f"| {name} | {r['docs']:,} | {r['datacurate_docs_per_s']:,.0f} | datatrove {peer} | "
                    f"{r['datatrove_docs_per_s']:,.0f} | **{ratio:.1f}x** | {100 * r['agreement']:.2f} % |")
    m = res["machine"]
    body = "\n".join([
        "<!-- filters:begin -->",
        f"Command: `{res['command']}`  ",
        f"Machine: {m['cpu_model']}, nproc {m['nproc']}, pinned to core {m['pinned_to']} (load {load0[0]} at start, "
        f"{res['load'][1][0]} at end); Python {m['python']}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
        "",
        "| stage | documents | datacurate docs/s/core | peer | peer docs/s/core | ratio | agreement |",
        "|---|---:|---:|---|---:|---:|---:|",
        *rows,
        "<!-- filters:end -->",
    ])
    replace_block(Path(args.readme), "<!-- filters:begin -->", "<!-- filters:end -->", body)
    print(body)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk in ("by_label", "index_build_s", "changed", "rejected",
                                                                   "disagreements", "examples", "differences")}
                      for k, v in res.items() if isinstance(v, dict) and k in ("decontaminate", "pii", "url_filter")},
                     indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
