"""datacurate.text.urls: the one URL grammar of url_filter, URL dedup and the report's host
view — its rules case by case, and the two stages agreeing on every case."""

import pyarrow as pa
import pytest

from datacurate.stages.url_filter import split_urls
from datacurate.text import urls

CASES = [  # (URL, canonical form or None, normalised host or None)
    ("HTTP://Example.COM:80/news?id=1#top", "http://example.com/news?id=1", "example.com"),
    ("https://example.com", "https://example.com/", "example.com"),
    ("https://example.com:443?q=1", "https://example.com/?q=1", "example.com"),
    ("http://example.com:8080/a", "http://example.com:8080/a", "example.com"),
    ("http://example.com:/a", "http://example.com/a", "example.com"),  # an empty port is the default
    ("http://user:pw@Example.com./A/B", "http://example.com/A/B", "example.com"),  # path case kept
    ("  http://example.com/x  ", "http://example.com/x", "example.com"),
    ("http://h:abc/x", None, None),  # an invalid port is no URL, never the path /abc/x
    ("http://h:99999/", None, None),  # past 65535
    ("http://h:123456789012345678901234/", None, None),
    ("http://h:65535/", "http://h:65535/", "h"),
    ("http://[2001:db8::1]:80/", "http://[2001:db8::1]/", "[2001:db8::1]"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ("http://exa mple.com/", None, None),
    ("http://-bad.com/", None, None),
    ("//example.com/x", None, "example.com"),  # no scheme: a host, but no dedup key
    ("example.com/x", None, "example.com"),
    ("mailto:someone@example.com", None, None),
    ("not a url", None, None),
    ("http://", None, None),
    ("", None, None),
    (None, None, None),
    # the fragment dropped from every URL, a bare host's too; explicit default ports, zero-padded, are default
    ("http://h.example#a", "http://h.example/", "h.example"),
    ("http://h.example?q=1#a", "http://h.example/?q=1", "h.example"),
    ("http://h.example:080/x", "http://h.example/x", "h.example"),
    ("https://h.example:0443", "https://h.example/", "h.example"),
    ("http://h.example:0000000080/", "http://h.example/", "h.example"),
    ("http://h.example:08080/x#f", "http://h.example:8080/x", "h.example"),
]


@pytest.mark.parametrize("url, canonical, host", CASES)
def test_rules(url, canonical, host):
    assert urls.canonical(pa.array([url], pa.string())).to_pylist() == [canonical]
    assert urls.hosts(pa.array([url], pa.string())).to_pylist() == [host]


def test_url_filter_and_url_dedup_share_the_grammar():
    """The host url_filter looks up is the canonical URL's host (less ``www.``), for every case."""
    values = pa.array([u for u, _, _ in CASES] + ["http://www.Example.com/x", "https://WWW.a.org:8443/"], pa.string())
    raw_host, _ = split_urls(values)
    listed = urls.normalise_hosts(raw_host, strip_www=True).to_pylist()
    for got, host in zip(listed, urls.hosts(values).to_pylist()):
        assert got == (host[4:] if host and host.startswith("www.") else host)
    keys = urls.canonical(values).to_pylist()
    assert keys[-2:] == ["http://www.example.com/x", "https://www.a.org:8443/"]  # dedup keeps www.

def test_registered_domains():
    hosts = pa.array(["a.b.example.co.uk", "example.com", "www.example.com", "127.0.0.1", "[2001:db8::1]",
                      "localhost", "x.github.io", None], pa.string())
    assert urls.registered_domains(hosts).to_pylist() == [
        "example.co.uk", "example.com", "example.com", "127.0.0.1", "[2001:db8::1]", "localhost", "x.github.io", None]


def test_chunked_and_empty_input():
    chunked = pa.chunked_array([["http://a.org/x"], ["http://b.org:81"]])
    assert urls.canonical(chunked).to_pylist() == ["http://a.org/x", "http://b.org:81/"]
    assert urls.canonical(pa.array([], pa.string())).to_pylist() == []
    assert urls.hosts(pa.array([None, None], pa.string())).to_pylist() == [None, None]
