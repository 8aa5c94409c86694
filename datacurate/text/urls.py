"""URLs, whole batches at a time (Arrow): the one URL grammar of ``url_filter``, URL dedup
(``exact_dedup`` with ``key: url``) and the report's per-host view.

Rules (a subset of RFC 3986 / the WHATWG URL Standard, enough for crawled URLs):

* **Parse**: surrounding whitespace trimmed; ``scheme:`` (optional: ``//host/x`` and, for
  the blocklist's own entries and hand-written URLs, ``host.tld/x``), ``//``, user info up
  to the last ``@`` of the authority (dropped), the host (a name, or an IPv6 literal in
  brackets), an optional port, then the rest (path, query), which must begin with ``/``
  or ``?``, then the fragment, dropped from every URL (``http://h#a`` is ``http://h/``). A
  port is digits, read as a number (at most 65535; leading zeros dropped, as the WHATWG URL
  parser does: ``:080`` is 80; empty means the default): ``http://h:abc/x`` is **no URL**
  (null host), never ``http://h/abc/x``.
  Anything else (``mailto:``, ``not a url``, a space in the host) has a null host.
* **Host**: lowercased, a trailing dot dropped, an internationalised name in punycode
  (IDNA 2008 with UTS 46 through ``idna``; IDNA 2003 for the names 2008 refuses), then
  checked to be letters, digits, ``-`` and ``_`` in dot-separated labels (or an IPv6
  literal): null otherwise. ``url_filter`` also drops a leading ``www.``.
* **Canonical URL** (URL dedup's key): ``scheme://host[:port]/path?query`` with the scheme
  lowercased, the scheme's default port dropped (http 80, https 443, ftp 21, ws 80, wss
  443), an empty path written ``/``; the path and query byte for byte (paths are
  case-sensitive, and reordering query parameters, as w3lib's ``canonicalize_url`` does,
  can merge pages a server tells apart). ``http`` and ``https`` stay apart (mirrors are
  text duplicates, for the text dedup). Null without a scheme or a valid host.
* **Registered domain** (the report's host table): the host's public suffix plus one
  label, by the Public Suffix List shipped in the ``tld`` package (``a.b.example.co.uk``
  -> ``example.co.uk``); an IP address or a name under no known suffix is itself.

Why not w3lib (Scrapy's ``canonicalize_url``; benchmarks/bench_urls.py, 200k real URLs,
one core): it runs per URL in Python (9.0x the CPU time of these Arrow kernels), raises on
an invalid port (one URL would stop a batch), sorts the query and rewrites it (``?56186``
becomes ``?56186=``, another URL to some servers), and has no host validity, IDNA 2008 or
registered-domain step.
Hosts go through Python once per *distinct* host of a batch (a crawl repeats its hosts).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# scheme (optional), user info, host (or [IPv6]), port (digits or empty), the rest
URL_RE = (r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):)?//(?:[^/?#\\]*@)?"
          r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/?#\\@\[\]\s]+)(?::(?P<port>\d*))?(?P<rest>[/?][^#]*)?(?:#.*)?$")
BARE_RE = (r"^(?P<host>[^:/?#\\@\s]+\.[^:/?#\\@\s]+)(?::(?P<port>\d*))?(?P<rest>[/?][^#]*)?(?:#.*)?$")  # example.com/x
HOST_OK = r"(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?|\[[0-9a-f:.]+\]"
DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"}
_NULL = pa.scalar(None, pa.string())


class Parts(NamedTuple):
    """The parts of a batch of URLs (Arrow string arrays, one value per URL); ``host`` as
    written (see :func:`normalise_hosts`), null where the value is no URL."""

    scheme: pa.Array  # lowercased; null for //host and host.tld/x
    host: pa.Array
    port: pa.Array  # "" when absent or the scheme's default
    rest: pa.Array  # path + query ("" when none), fragment dropped


def _strings(urls) -> pa.Array:
    if isinstance(urls, pa.ChunkedArray):
        urls = urls.combine_chunks()
    return pc.utf8_trim_whitespace(urls.cast(pa.string()))


def parse(urls, bare: bool = True) -> Parts:
    """Every URL's parts; with ``bare`` the values with no ``//`` (``example.com/x``, the
    few) go through a second pattern alone."""
    trimmed = _strings(urls)
    parts = pc.extract_regex(trimmed, URL_RE)
    scheme, host = pc.struct_field(parts, "scheme"), pc.struct_field(parts, "host")
    port, rest = pc.struct_field(parts, "port"), pc.struct_field(parts, "rest")
    if bare:
        retry = np.flatnonzero(np.asarray(pc.fill_null(pc.and_(pc.is_null(host), pc.is_valid(trimmed)), False)))
        if len(retry):
            got = pc.extract_regex(trimmed.take(pa.array(retry)), BARE_RE)
            mask = pa.array(np.isin(np.arange(len(trimmed)), retry))
            host = pc.replace_with_mask(host, mask, pc.struct_field(got, "host"))
            port = pc.replace_with_mask(port, mask, pc.struct_field(got, "port"))
            rest = pc.replace_with_mask(rest, mask, pc.struct_field(got, "rest"))
    scheme = pc.utf8_lower(pc.if_else(pc.equal(pc.fill_null(scheme, ""), ""), _NULL, scheme))
    port = pc.fill_null(port, "")
    digits = pc.replace_substring_regex(port, r"^0+", "")  # the port as a number: ":080" is 80, ":0443" 443
    port = pc.if_else(pc.and_(pc.not_equal(port, ""), pc.equal(digits, "")), "0", digits)
    long_ = pc.greater(pc.utf8_length(port), 5)
    number = pc.cast(pc.if_else(pc.or_(long_, pc.equal(port, "")), "0", port), pa.int64())
    host = pc.if_else(pc.or_(long_, pc.greater(number, 65535)), _NULL, host)
    default = pc.equal(port, "")
    for name, p in DEFAULT_PORTS.items():
        default = pc.or_(default, pc.and_(pc.fill_null(pc.equal(scheme, name), False), pc.equal(port, p)))
    port = pc.if_else(default, "", port)
    return Parts(scheme, host, port, pc.fill_null(rest, ""))


@functools.lru_cache(maxsize=1 << 16)  # ~30 us a name through idna; a crawl repeats its hosts
def _punycode(host: str) -> str | None:
    import idna

    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        pass
    try:  # IDNA 2003 accepts some names 2008 refuses (symbols, emoji domains)
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def normalise_hosts(hosts: pa.Array, strip_www: bool = False) -> pa.Array:
    """The one form of every host (module docstring); null where it is not a valid host."""
    hosts = pc.utf8_rtrim(pc.utf8_lower(hosts.cast(pa.string())), ".")
    if strip_www:
        hosts = pc.replace_substring_regex(hosts, r"^www\.", "")
    ascii_ = np.asarray(pc.fill_null(pc.string_is_ascii(hosts), True))
    if not ascii_.all():  # internationalised names: punycode, one by one (few)
        idx = np.flatnonzero(~ascii_)
        coded = [_punycode(h) for h in hosts.take(pa.array(idx)).to_pylist()]
        mask = np.zeros(len(hosts), dtype=bool)
        mask[idx] = True
        hosts = pc.replace_with_mask(hosts, pa.array(mask), pa.array(coded, hosts.type))
    ok = pc.fill_null(pc.match_substring_regex(hosts, f"^(?:{HOST_OK})$"), False)
    return pc.if_else(ok, hosts, pa.scalar(None, hosts.type))


def _per_distinct(values: pa.Array, fn) -> pa.Array:
    """``fn`` (Arrow array -> Arrow array) over the distinct values of ``values`` only."""
    enc = values.dictionary_encode()
    return fn(enc.dictionary).take(enc.indices)


def hosts(urls) -> pa.Array:
    """The normalised host of every URL (null: no URL)."""
    return _per_distinct(parse(urls).host, normalise_hosts)


def canonical(urls) -> pa.Array:
    """URL dedup's key (module docstring): null without a scheme or a valid host."""
    p = parse(urls, bare=False)
    host = _per_distinct(p.host, normalise_hosts)
    port = pc.if_else(pc.equal(p.port, ""), "", pc.binary_join_element_wise(":", p.port, ""))
    rest = pc.if_else(pc.starts_with(p.rest, "/"), p.rest, pc.binary_join_element_wise("/", p.rest, ""))
    out = pc.binary_join_element_wise(p.scheme, "://", host, port, rest, "")
    return pc.if_else(pc.and_(pc.is_valid(p.scheme), pc.is_valid(host)), out, _NULL)


@functools.lru_cache(maxsize=1 << 16)
def _registered(host: str) -> str:
    from tld import get_fld

    if host.startswith("[") or host.replace(".", "").isdigit():  # an IP address
        return host
    return get_fld(host, fix_protocol=True, fail_silently=True) or host


def registered_domains(hosts: pa.Array) -> pa.Array:
    """The registered domain of every normalised host (module docstring); null stays null."""
    def fn(distinct: pa.Array) -> pa.Array:
        return pa.array([None if h is None else _registered(h) for h in distinct.to_pylist()], pa.string())

    return _per_distinct(hosts.cast(pa.string()), fn)
