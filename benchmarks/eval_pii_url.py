"""Recall and look-alike damage of the ``pii`` stage, and decisions of ``url_filter``, on
labelled sets built from real text (not the unit tests' cases).

PII: paragraphs of the Brown prose in ``sample_data/corpus`` (news, learned, fiction;
real prose, which has dates, years, prices, ranges and page numbers of its own) get
values planted at random sentence boundaries, each recorded with its kind and the text
around it:

* PII, generated: e-mail addresses (name patterns x real-looking domains), global IPv4
  and IPv6 addresses (random, kept when ``is_global``), phone numbers of US, GB, DE, FR,
  IN, BR, JP, AU (random digits kept when phonenumbers calls them valid; US ones in
  national and international formats, the others in international and E.164), payment
  card numbers of Visa, Mastercard, Amex, Discover and JCB with a valid Luhn digit,
  contiguous, in groups of 4 (Amex 4-6-5) with spaces or dashes;
* look-alikes: version strings with an octet over 255, ISBN-13 / ISBN-10, dates in four
  forms, prices, card-shaped numbers (network prefix, grouping) failing Luhn, years,
  year and page ranges, times, large counts, private / loopback / documentation IPs,
  national numbers of other regions (the stage's default region is US).

A planted PII value counts as found when the output holds exactly its kind's token
between the unchanged text around it; a look-alike is altered when the text around it
and itself are no longer intact. Separately: what the stage changes in the untouched
corpus (every file, all languages), listed for inspection.

URLs: a labelled list built from a blocklist of generated domains (a UT1 tree of three
categories) and the sample corpus's own URLs: every listed domain as is, with
subdomains, www, ports, user info, upper case, a trailing dot, Unicode / punycode
forms (blocked); look-alikes (a prefix glued to the name, the name as a subdomain of
another domain, another TLD, the domain in the path or query) and the corpus URLs
(passed); URL entries and their boundaries; unparsable values (bad_url). Expected
decisions come from the construction, never from the stage.

Run: ``python benchmarks/eval_pii_url.py [--docs 600] [--urls 2000] [--out results/pii_url.json]``
(one core); ``tests/stages/test_eval_pii_url.py`` runs a small version and asserts the
targets (PII recall >= 0.95 per kind, <= 1 % look-alikes altered, URL decisions exact).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from datacurate.stages.pii import KINDS, Pii, luhn_ok  # noqa: E402
from datacurate.stages.url_filter import UrlFilter  # noqa: E402

CORPUS = ROOT / "sample_data" / "corpus"
TOKENS = {"email": "<EMAIL>", "ip": "<IP_ADDRESS>", "phone": "<PHONE>", "card": "<CARD>"}
CTX = 12  # characters of context recorded on each side of a planted value

FIRST = ["john", "mary", "wei", "fatima", "olga", "carlos", "aiko", "pierre", "anna", "raj", "lena", "tom"]
LAST = ["smith", "garcia", "nguyen", "kowalski", "okafor", "schmidt", "rossi", "tanaka", "dubois", "patel"]
DOMAINS = ["gmail.com", "yahoo.co.uk", "outlook.com", "uni-heidelberg.de", "mit.edu", "company.io", "mail.ru",
           "example-shop.com.br", "post.harvard.edu", "web.de", "orange.fr", "bigpond.net.au"]
PHONE_REGIONS = ["US", "GB", "DE", "FR", "IN", "BR", "JP", "AU"]
CARD_PREFIXES = [("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16),
                 ("65", 16), ("3530", 16)]


def prose_paragraphs(rng: random.Random, n: int) -> list[str]:
    import gzip

    paras = []
    for name in ("news.jsonl", "learned.jsonl", "fiction.jsonl.gz"):
        raw = (CORPUS / name).read_bytes()
        raw = gzip.decompress(raw) if name.endswith(".gz") else raw
        for line in raw.splitlines():
            for p in json.loads(line)["text"].split("\n\n"):
                if 400 <= len(p) <= 3000:
                    paras.append(p)
    rng.shuffle(paras)
    return paras[:n]


# ----------------------------------------------------------------------------- generators


def email(rng):
    f, last = rng.choice(FIRST), rng.choice(LAST)
    local = rng.choice([f"{f}.{last}", f"{f[0]}{last}{rng.randint(1, 99)}", f"{f}_{last}", f"{last}+news",
                        f"{f.capitalize()}.{last.capitalize()}"])
    return f"{local}@{rng.choice(DOMAINS)}"


def global_ipv4(rng):
    while True:
        a = ipaddress.IPv4Address(rng.getrandbits(32))
        if a.is_global and not a.is_multicast:
            return str(a)


def global_ipv6(rng):
    while True:  # 2000::/3 (global unicast), often with a run of zero groups written as "::"
        groups = [rng.randrange(0x2000, 0x4000)] + [rng.randrange(1 << 16) for _ in range(7)]
        if rng.random() < 0.6:
            i = rng.randint(2, 6)
            j = rng.randint(i + 1, 7)
            groups[i:j] = [0] * (j - i)
        a = ipaddress.IPv6Address(sum(g << (16 * (7 - k)) for k, g in enumerate(groups)))
        if a.is_global:
            return str(a)  # compressed form, as people write them


def phone(rng):
    import phonenumbers as pn

    region = rng.choice(PHONE_REGIONS)
    example = pn.example_number_for_type(region, rng.choice([pn.PhoneNumberType.MOBILE,
                                                             pn.PhoneNumberType.FIXED_LINE]))
    nat = str(example.national_number)
    while True:  # random digits after the example's leading ones, until valid
        digits = nat[:3] + "".join(str(rng.randrange(10)) for _ in range(len(nat) - 3))
        num = pn.parse("+" + str(example.country_code) + digits)
        if pn.is_valid_number(num):
            break
    if region == "US":
        fmt = rng.choice([pn.PhoneNumberFormat.NATIONAL, pn.PhoneNumberFormat.INTERNATIONAL, "dashes", "dots"])
    else:
        fmt = rng.choice([pn.PhoneNumberFormat.INTERNATIONAL, pn.PhoneNumberFormat.E164])
    if fmt == "dashes":
        return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"
    if fmt == "dots":
        return f"{digits[:3]}.{digits[3:6]}.{digits[6:]}"
    return pn.format_number(num, fmt)


def _card_digits(rng, valid: bool):
    prefix, n = rng.choice(CARD_PREFIXES)
    body = prefix + "".join(str(rng.randrange(10)) for _ in range(n - len(prefix) - 1))
    good = next(d for d in "0123456789" if luhn_ok(body + d))
    return body + (good if valid else rng.choice([d for d in "0123456789" if d != good]))


def _group(rng, digits):
    sep = rng.choice(["", " ", "-"])
    if not sep:
        return digits
    n = len(digits)
    sizes = [4, 6, 5] if n == 15 else [4] * (n // 4) + ([n % 4] if n % 4 else [])
    if sizes[-1] < 3:  # 13 digits: 4-4-5
        sizes = sizes[:-2] + [sizes[-2] + sizes[-1]]
    out, i = [], 0
    for s in sizes:
        out.append(digits[i:i + s])
        i += s
    return sep.join(out)


def card(rng):
    return _group(rng, _card_digits(rng, True))


def isbn13(rng):
    body = rng.choice(["978", "979"]) + "".join(str(rng.randrange(10)) for _ in range(9))
    check = (10 - sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body)) % 10) % 10
    s = body + str(check)
    return rng.choice([s, f"{s[:3]}-{s[3]}-{s[4:6]}-{s[6:12]}-{s[12]}",
                       f"ISBN {s[:3]}-{s[3:5]}-{s[5:9]}-{s[9:12]}-{s[12]}"])


def isbn10(rng):
    body = "".join(str(rng.randrange(10)) for _ in range(9))
    check = sum((10 - i) * int(c) for i, c in enumerate(body)) % 11
    c = (11 - check) % 11
    return f"{body[0]}-{body[1:4]}-{body[4:9]}-{'X' if c == 10 else c}"


def look_alike(rng):
    y, m, d = rng.randint(1900, 2030), rng.randint(1, 12), rng.randint(1, 28)
    kind = rng.choice(["version", "isbn13", "isbn10", "date", "price", "luhn_fail", "year", "range", "time", "count",
                       "private_ip", "foreign_national"])
    if kind == "version":
        parts = [str(rng.randint(0, 20)), str(rng.randint(0, 255)), str(rng.randint(256, 999)), str(rng.randint(0, 99))]
        rng.shuffle(parts)
        return kind, rng.choice(["", "v", "version "]) + ".".join(parts)
    if kind == "isbn13":
        return kind, isbn13(rng)
    if kind == "isbn10":
        return kind, isbn10(rng)
    if kind == "date":
        return kind, rng.choice([f"{y}-{m:02d}-{d:02d}", f"{m:02d}/{d:02d}/{y}", f"{d}.{m}.{y}",
                                 f"{d:02d}/{m:02d}/{y}"])
    if kind == "price":
        return kind, rng.choice([f"${rng.randint(1, 99)},{rng.randint(0, 999):03d}.{rng.randint(0, 99):02d}",
                                 f"€{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}",
                                 f"{rng.randint(1, 999)}.{rng.randint(0, 999):03d},{rng.randint(0, 99):02d} EUR"])
    if kind == "luhn_fail":
        return kind, _group(rng, _card_digits(rng, False))
    if kind == "year":
        return kind, str(y)
    if kind == "range":
        a = rng.randint(1, 2000)
        return kind, rng.choice([f"{y}-{y + rng.randint(1, 30)}", f"{y}–{y + rng.randint(1, 30)}",
                                 f"pp. {a}-{a + rng.randint(1, 40)}", f"{a} - {a + rng.randint(1, 999)}"])
    if kind == "time":
        return kind, f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    if kind == "count":
        return kind, f"{rng.randint(1, 999)},{rng.randint(0, 999):03d},{rng.randint(0, 999):03d}"
    if kind == "private_ip":
        return kind, rng.choice([f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                                 f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}", "127.0.0.1",
                                 f"192.0.2.{rng.randint(1, 254)}", f"2001:db8::{rng.randrange(1 << 16):x}", "::1",
                                 f"fe80::{rng.randrange(1 << 16):x}:{rng.randrange(1 << 16):x}"])
    import phonenumbers as pn  # a national number of another region: not a US number

    region = rng.choice(["GB", "DE", "FR"])
    ex = pn.example_number_for_type(region, pn.PhoneNumberType.FIXED_LINE)
    return kind, pn.format_number(ex, pn.PhoneNumberFormat.NATIONAL)


GENERATORS = {"email": email, "ip": lambda r: r.choice([global_ipv4, global_ipv6])(r), "phone": phone, "card": card}


# ----------------------------------------------------------------------------- PII


def plant(rng, para: str, n_items: int):
    """Insert ``n_items`` values at distinct sentence ends -> (text, expected output,
    [(label, kind, value, left, right)]) with ``left`` / ``right`` the expected output's
    text around the item (neighbouring PII already replaced by its token)."""
    cuts = [m.end() for m in re.finditer(r"[.!?;,] ", para)]
    cuts = sorted(rng.sample(cuts, min(n_items, len(cuts))))
    src, exp, items, pos = [], [], [], 0
    for c in cuts:
        if rng.random() < 0.6:
            kind = rng.choice(KINDS)
            label, value = "pii", GENERATORS[kind](rng)
        else:
            label, (kind, value) = "look_alike", look_alike(rng)
        lead = rng.choice(["see ", "ref. ", "call ", "at ", "(", "\"", "on ", "no. "])
        tail = rng.choice([" ", ") ", "\" ", ", ", ". "])
        src += [para[pos:c], lead, value, tail]
        exp += [para[pos:c], lead, TOKENS[kind] if label == "pii" else value, tail]
        items.append((label, kind, value, len("".join(exp[:-2])), len("".join(exp[:-1]))))
        pos = c
    src.append(para[pos:])
    exp.append(para[pos:])
    expected = "".join(exp)
    return "".join(src), expected, [(lab, k, v, expected[max(0, a - CTX):a], expected[b:b + CTX])
                                     for lab, k, v, a, b in items]


def eval_pii(n_docs: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    paras = prose_paragraphs(rng, n_docs)
    docs, expected, labels = [], [], []
    for p in paras:
        text, exp, items = plant(rng, p, rng.randint(2, 6))
        docs.append(text)
        expected.append(exp)
        labels.append(items)
    stage = Pii()
    out = stage(pa.table({"text": pa.array(docs, pa.large_string())})).column("text").to_pylist()
    found, total, altered, seen = Counter(), Counter(), Counter(), Counter()
    misses, damage = defaultdict(list), defaultdict(list)
    for text, items in zip(out, labels):
        for label, kind, value, left, right in items:
            if label == "pii":
                total[kind] += 1
                if left + TOKENS[kind] + right in text:
                    found[kind] += 1
                else:
                    misses[kind].append(value)
            else:
                seen[kind] += 1
                if left + value + right not in text:
                    altered[kind] += 1
                    damage[kind].append(value)
    n_like = sum(seen.values())
    return {
        "documents": len(docs),
        "documents_exactly_as_expected": sum(o == e for o, e in zip(out, expected)),
        "recall": {k: round(found[k] / total[k], 4) if total[k] else None for k in KINDS},
        "planted": dict(total),
        "missed_examples": {k: v[:5] for k, v in misses.items()},
        "look_alikes": n_like,
        "look_alikes_by_kind": dict(seen),
        "look_alikes_altered": sum(altered.values()),
        "look_alikes_altered_share": round(sum(altered.values()) / max(n_like, 1), 4),
        "altered_examples": {k: v[:5] for k, v in damage.items()},
    }


def corpus_changes() -> dict:
    """Every change the stage makes to the untouched sample corpus (all files)."""
    import gzip

    import zstandard

    texts = []
    for f in sorted(CORPUS.iterdir()):
        raw = f.read_bytes()
        if f.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        elif f.name.endswith(".zst"):
            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
        texts += [json.loads(line)["text"] for line in raw.splitlines() if line.strip()]
    stage = Pii()
    table = pa.table({"text": pa.array(texts, pa.large_string())})
    t0 = time.process_time()
    out = stage(table)
    cpu = time.process_time() - t0
    counts = {k: int(sum(out.column(f"pii_{k}").to_pylist())) for k in KINDS}
    examples = defaultdict(list)
    for src, dst in zip(texts, out.column("text").to_pylist()):
        if src != dst:
            for k in KINDS:
                for m in re.finditer(re.escape(TOKENS[k]), dst):
                    examples[k].append(dst[max(0, m.start() - 30):m.end() + 30])
    mb = sum(len(t.encode()) for t in texts) / 1e6
    return {"documents": len(texts), "mb": round(mb, 2), "redacted": counts,
            "examples": {k: v[:8] for k, v in examples.items()},
            "cpu_seconds": round(cpu, 3), "docs_per_cpu_second": round(len(texts) / cpu, 1),
            "mb_per_cpu_second": round(mb / cpu, 2)}


# ----------------------------------------------------------------------------- URLs

BASE_NAMES = ["casino", "betwin", "adultzone", "phishbank", "malwarez", "tracker", "spamhub", "warez", "darkmail"]
TLDS = ["com", "net", "org", "info", "co.uk", "de", "ru", "xyz"]
IDN = ["bücher", "пример", "例え", "café", "straße"]


def url_set(rng: random.Random, n_domains: int, root: Path) -> tuple[list, list]:
    import idna

    cats = {"adult": [], "gambling": [], "malware": []}
    listed = set()
    while len(listed) < n_domains:
        name = rng.choice(BASE_NAMES + IDN) + str(rng.randint(1, 10**6))
        tld = rng.choice(TLDS)
        d = f"{name}.{tld}"
        if d not in listed:
            listed.add(d)
            cats[rng.choice(list(cats))].append(d)
    url_entries = {}
    for cat, doms in cats.items():
        (root / cat).mkdir(parents=True)
        lines = [f"# {cat}, generated"]
        for d in doms:  # list IDN domains half as Unicode, half as punycode
            lines.append(idna.encode(d).decode() if not d.isascii() and rng.random() < 0.5 else d)
        (root / cat / "domains").write_text("\n".join(lines) + "\n", encoding="utf-8")
        urls = [f"hosting{rng.randint(1, 10**6)}.com/~user{i}/page" for i in range(5)]
        (root / cat / "urls").write_text("\n".join(urls) + "\n")
        url_entries.update({u: cat for u in urls})
    cat_of = {d: c for c, ds in cats.items() for d in ds}
    labelled = []

    def host_forms(d):
        forms = [d]
        if not d.isascii():
            forms.append(idna.encode(d).decode())
        return forms

    for d, cat in cat_of.items():
        for h in host_forms(d):
            r = f"url_filter/{cat}"
            labelled += [
                (f"http://{h}/", r), (f"https://www.{h}/path?q=1", r), (f"http://sub.deep.{h}/x", r),
                (f"http://{h}:8080/", r), (f"http://user:pw@{h}/", r),
                (f"http://{h.upper() if h.isascii() else h}/", r),  # upper() of "straße" is another name
                (f"http://{h}./", r), (f"//{h}/a", r),
                (f"http://not{h}/", None), (f"http://{h}.example.org/", None), (f"http://{h}x/", None),
                (f"http://good.example/{h}", None), (f"http://good.example/?u=http://{h}/", None),
                (f"http://{h}@good.example/", None),
            ]
        labelled.append((f"http://{d.rsplit('.', 1)[0]}.example/", None))  # another TLD
    for u, cat in url_entries.items():
        r = f"url_filter/{cat}"
        host = u.split("/", 1)[0]
        labelled += [(f"http://{u}", r), (f"https://www.{u}/more", r), (f"http://{u}?x=1", r),
                     (f"http://{u}s", None), (f"http://{host}/", None), (f"http://sub.{u}", None)]
    labelled += [(u, "url_filter/bad_url") for u in ["not a url", "http://", "http://exa mple.com/", "mailto:a@b.com",
                                                     "http://a.com:port/", "javascript:alert(1)", "http://-x.com/"]]
    for f in sorted(CORPUS.glob("*.jsonl")):  # the corpus's own URLs (plain JSONL files only)
        records = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        labelled += [(r["url"], None) for r in records if "url" in r]
    rng.shuffle(labelled)
    return labelled, sorted(listed)


def eval_urls(n_domains: int, seed: int = 0, speed_urls: int = 200_000) -> dict:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "blacklists"
        labelled, _ = url_set(rng, n_domains, root)
        t0 = time.process_time()
        stage = UrlFilter(blocklist=[str(root)])
        load = time.process_time() - t0
    urls = [u for u, _ in labelled]
    got = stage(pa.table({"text": [""] * len(urls), "url": pa.array(urls, pa.string())})).column(
        "reject_reason").to_pylist()
    wrong = [(u, want, g) for (u, want), g in zip(labelled, got) if want != g]
    big = (urls * (speed_urls // len(urls) + 1))[:speed_urls]
    table = pa.table({"text": pa.array([""] * len(big)), "url": pa.array(big, pa.string())})
    t0 = time.process_time()
    for i in range(0, len(big), 2048):
        stage(table.slice(i, 2048))
    cpu = time.process_time() - t0
    return {"labelled_urls": len(labelled), "listed_domains": n_domains,
            "by_expected": dict(Counter(w or "pass" for _, w in labelled)),
            "wrong": len(wrong), "exact": not wrong, "wrong_examples": wrong[:10],
            "blocklist_load_cpu_seconds": round(load, 3),
            "urls_per_cpu_second": round(len(big) / cpu)}


PARTS = ["pii", "pii_on_sample_corpus", "url_filter"]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=600)
    ap.add_argument("--domains", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speed-urls", type=int, default=200_000, help="URLs in the url_filter speed run")
    ap.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="only these parts (tests: a small run)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import emit  # importing it: one core, one thread (the timings), as every benchmark here

    run = {"pii": lambda: eval_pii(args.docs, args.seed), "pii_on_sample_corpus": corpus_changes,
           "url_filter": lambda: eval_urls(args.domains, args.seed, args.speed_urls)}
    return emit({part: run[part]() for part in args.parts}, args.out)


if __name__ == "__main__":
    main()
