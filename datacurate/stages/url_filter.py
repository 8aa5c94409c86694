"""Stage ``url_filter``: reject documents whose URL is on a blocklist.

Blocklists are what web pipelines start with: C4 and RefinedWeb (Penedo et al. 2023)
drop pages of the adult categories of the Université Toulouse 1 list (UT1, "blacklists",
about 4 M domains in ~100 categories); datatrove's ``URLFilter``, Dolma and NeMo Curator
ship the same step. The list layouts (UT1 folders or plain lists), the one normal form of
a host (IDNA 2008 with UTS 46 through ``idna``, IDNA 2003 as a fallback), what blocks a
URL and the reasons are in the README's ``url_filter`` section.

URLs are parsed and hosts normalised by :mod:`datacurate.text.urls` (its docstring has
the rules; URL dedup uses the same module). Cost: one RE2 regex over the batch (Arrow; a
second one only for the URLs without ``//``); hosts are normalised (Arrow) and looked up (dict probes, one
per host suffix, about 1 us each) once per distinct host of the batch (a crawl repeats
its hosts), and URL entries are probed only for hosts that have some. The lists are held
as a dict from domain to category index in every worker: about 100 bytes per domain,
~400 MB for the whole of UT1, loaded in a few seconds; a run on a few categories holds
only those.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.formats import fields
from datacurate.core.coerce import ConfigError, opt
from datacurate.stages.base import Stage
from datacurate.text import urls

BAD_URL = "url_filter/bad_url"
MISSING = "url_filter/missing"
UT1_FILES = ("domains", "urls")


@dataclass
class UrlFilterConfig:
    blocklist: list[str] = opt(list, "files or directories: UT1 layout or plain lists")
    categories: Optional[list[str]] = opt(None, "use only these categories; null = every one found")
    url_field: str = opt("url", "the input record's field (column) holding the document's URL")
    missing: Literal["keep", "reject"] = opt("keep", "a document without a URL: pass, or reject (url_filter/missing)")

    def validate(self) -> None:
        if not self.blocklist:
            raise ValueError("blocklist: give at least one file or directory")
        for p in self.blocklist:
            if not Path(p).exists():
                raise ValueError(f"blocklist: no such file or directory: {p}")
        # absolute, as read where the driver started: Ray workers need not share its working directory
        self.blocklist = [str(Path(p).resolve()) for p in self.blocklist]


def normalise_hosts(hosts: pa.Array) -> pa.Array:
    """The one form of a host for the lists (:func:`datacurate.text.urls.normalise_hosts`, ``www.`` dropped)."""
    return urls.normalise_hosts(hosts, strip_www=True)


def split_urls(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(host as written, path + query) of every URL (:func:`datacurate.text.urls.parse`); a null host where it does not parse."""
    parts = urls.parse(values)
    return parts.host, parts.rest


def _entries(path: Path) -> list[str]:
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise ConfigError(f"url_filter: blocklist {path} is not a text file (it holds NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"url_filter: blocklist {path} is not UTF-8 text (byte {e.start})") from None
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def list_files(paths: list[str]) -> list[tuple[str, Path]]:
    """(category, file) of every list under ``paths``, in sorted order."""
    out: list[tuple[str, Path]] = []
    for p in map(Path, paths):
        if p.is_file():
            out.append((p.parent.name if p.name in UT1_FILES else p.stem, p))
        elif any((p / f).is_file() for f in UT1_FILES):
            out += [(p.name, p / f) for f in UT1_FILES if (p / f).is_file()]
        else:
            for child in sorted(p.iterdir()):
                if child.name.startswith("."):
                    continue
                if child.is_dir():
                    out += list_files([str(child)])
                elif child.is_file():
                    out.append((child.stem, child))
    return out


class Blocklist:
    """Listed domains and URLs -> category, in normalised form."""

    def __init__(self, paths: list[str], categories: list[str] | None = None):
        self.domains: dict[str, int] = {}
        self.urls: dict[str, int] = {}
        files = [(c, f) for c, f in list_files(paths) if categories is None or c in categories]
        self.categories: list[str] = sorted({c for c, _ in files})
        index = {c: i for i, c in enumerate(self.categories)}
        for cat, f in sorted(files, key=lambda cf: (cf[0], str(cf[1]))):
            entries = _entries(f)
            if not entries:
                continue
            host, rest = split_urls(pa.array([e if "//" in e else "//" + e for e in entries], pa.string()))
            host = normalise_hosts(host).to_pylist()
            bad = host.count(None)
            if bad > len(entries) / 2:
                raise ConfigError(f"url_filter: blocklist {f}: {bad} of {len(entries)} entries are not domains "
                                  "or URLs; is it a blocklist?")
            for h, r in zip(host, rest.to_pylist()):
                if h is None:
                    continue
                if r.rstrip("/") or f.name == "urls":
                    self.urls.setdefault(h + r.rstrip("/"), index[cat])
                else:
                    self.domains.setdefault(h, index[cat])
        if not self.domains and not self.urls:
            what = f" of categories {categories}" if categories is not None else ""
            raise ConfigError(f"url_filter: no domain or URL{what} in blocklist {', '.join(paths)}")
        lengths: dict[str, set[int]] = {}
        for u in self.urls:
            lengths.setdefault(u.split("/", 1)[0].split("?", 1)[0], set()).add(len(u))
        self.url_lengths = {h: sorted(ls) for h, ls in lengths.items()}  # the URL entries' lengths, per host

    def lookup(self, host: str, rest: str) -> int:
        """Category index of a normalised host and its path + query, -1 when not listed."""
        c = self.domain(host)
        return c if c >= 0 or host not in self.url_lengths else self.url(host, rest)

    def domain(self, host: str) -> int:
        """Category of the listed domain ``host`` equals or is a subdomain of; -1 when none."""
        h = host
        while True:
            c = self.domains.get(h)
            if c is not None:
                return c
            i = h.find(".")
            if i < 0 or h[-1].isdigit() or h[-1] == "]":  # an IP address: itself only
                return -1
            h = h[i + 1:]

    def url(self, host: str, rest: str) -> int:
        """Category of a listed URL equal to host + path, or a prefix of it ending at / or ?."""
        key = host + rest.rstrip("/")
        for n in self.url_lengths.get(host, ()):  # shortest first: the prefixes a listed URL could be
            if n > len(key):
                break
            if n == len(key) or key[n] in "/?":
                c = self.urls.get(key[:n])
                if c is not None:
                    return c
        return -1


class UrlFilter(Stage):
    name = "url_filter"
    side_inputs = ("blocklist",)
    local_side_inputs = ("blocklist",)
    Config = UrlFilterConfig

    def __init__(self, config: UrlFilterConfig | None = None, **params):
        super().__init__(config, **params)
        self.blocklist = Blocklist(self.config.blocklist, self.config.categories)

    def _categories(self, raw_host: pa.Array, rest: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """((N,) category index of every URL, -1 when not listed; (N,) no valid host).

        A crawl repeats its hosts, so hosts are normalised and looked up once per distinct
        host of the batch; URL entries are probed only for the rows whose host has some."""
        bl = self.blocklist
        enc = raw_host.dictionary_encode()
        norm = normalise_hosts(enc.dictionary).to_pylist()
        per_host = np.array([bl.domain(h) if h is not None else -1 for h in norm] + [-1], dtype=np.int64)
        no_host = np.array([h is None for h in norm] + [True])
        rows_host = np.asarray(pc.fill_null(enc.indices, len(norm)))
        cat = per_host[rows_host]
        if bl.urls:
            url_host = np.array([h in bl.url_lengths for h in norm] + [False])
            rows = np.flatnonzero(url_host[rows_host] & (cat < 0))
            rests = rest.take(pa.array(rows)).to_pylist()
            cat[rows] = [bl.url(norm[rows_host[i]], r) for i, r in zip(rows, rests)]
        return cat, no_host[rows_host]

    def annotate(self, table: pa.Table):
        n = table.num_rows
        out = np.full(n, None, dtype=object)
        col = table.column(self.config.url_field) if self.config.url_field in table.column_names else None
        if col is None or pa.types.is_null(col.type):
            missing = np.ones(n, dtype=bool)
        else:
            col, not_a_string = fields.string_values(col)  # numbers, lists, mappings: not a URL
            out[not_a_string] = BAD_URL
            missing = np.asarray(pc.fill_null(pc.equal(pc.utf8_trim_whitespace(col), ""), True)) & ~not_a_string
            cat, no_host = self._categories(*split_urls(col))
            out[no_host & ~missing] = BAD_URL
            listed = cat >= 0
            out[listed] = np.asarray(["url_filter/" + c for c in self.blocklist.categories], dtype=object)[cat[listed]]
        if self.config.missing == "reject":
            out[missing] = MISSING
        return {}, pa.array(out, pa.string())
