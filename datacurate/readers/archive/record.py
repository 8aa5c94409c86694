"""One WARC / ARC record, format-neutral (:class:`Record`), and what every part of the reader
shares: the record types that are documents, the starts of a record, how a damaged record
is reported, and a record's URL and date in one form."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from datacurate.formats import storage
from datacurate.text.dates import iso_utc


DOCUMENTS = ("response", "resource", "conversion")


WEB_SCHEMES = ("http:", "https:", "ftp:")  # a document record of another scheme is counted, not a row (is_document)


GZIP_MAGIC = b"\x1f\x8b\x08"


WARC_START = re.compile(rb"WARC/\d")


ARC_START = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]*://")


class Record(NamedTuple):
    """One record, format-neutral: what a row needs (``payload``: HTTP encodings undone)."""

    offset: int
    warc_type: str
    record_id: str | None
    url: str | None
    date: str | None
    content_type: str | None
    charset: str | None  # of the HTTP Content-Type header
    http_status: int | None
    payload: bytes
    damage: str | None = None  # a reject reason: this "record" is damage found at ``offset``
    oversize: bool = False  # its payload is over the reader's cap (``payload``: its first bytes only)


def damaged(offset: int, error: BaseException, reason: str) -> Record:
    return Record(offset, None, None, None, None, None, None, None, str(error).encode(), damage=reason)


def file_size(path: str) -> int:
    return storage.size(path) if storage.is_remote(path) else os.path.getsize(path)


def warc_date(value: str | None) -> str | None:
    """A WARC-Date (or ARC date) in one form, ISO 8601 UTC to the microsecond; as written when it is no date."""
    return iso_utc(value) or value


def target_url(value: str | None) -> str | None:
    """A target URI as a URL: wget's ``<...>`` brackets off, spaces escaped (as warcio does)."""
    if not value:
        return None
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    return value.replace(" ", "%20") or None
