"""Capture dates in one form: ISO 8601, UTC, to the microsecond (``2014-02-16T05:02:21.000000Z``).

A crawl writes its dates in several forms: WARC/1.0 ``WARC-Date`` to the second
(``2014-02-16T05:02:21Z``), WARC/1.1 with a fraction (``...:21.123456Z``; the WARC 1.1
standard allows any W3C-DTF granularity, ``2014-02-16`` or ``2014-02-16T06:02+01:00``
too), ARC ``Archive-date`` as 14 digits (``20140216050221``; the Wayback Machine's
17-digit form adds milliseconds). Readers write every one in the single fixed-width form
above, so two dates compare alike as strings and as times (URL dedup's
``priority_column: date``). Fractions below the microsecond are cut (Arrow's and Python's
time unit); a value that parses as none of these forms is ``None``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

# W3C-DTF (the WARC standard's date grammar): YYYY[-MM[-DD[Thh:mm[:ss[.s+]]TZD]]]
_W3C = re.compile(r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?"
                  r"\s*([Zz]|[+-]\d\d:?\d\d)?)?)?)?")
# ARC / Wayback 14-digit timestamps (YYYYMMDDhhmmss), shorter ones padded, 15-20 digits a fraction
_DIGITS = re.compile(r"(\d{4})(?:(\d\d)(?:(\d\d)(?:(\d\d)(?:(\d\d)(?:(\d\d)(\d{1,6})?)?)?)?)?)?")


def iso_utc(value: str | None) -> str | None:
    """``value`` (a W3C-DTF / ISO 8601 date or a 4-20 digit ARC timestamp) as
    ``YYYY-MM-DDThh:mm:ss.ffffffZ`` in UTC; None when it is neither."""
    if not value:
        return None
    value = value.strip()
    if not value.isdigit():
        try:  # the common forms, in C
            t = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            t = t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t
            return t.isoformat(timespec="microseconds") + "Z"
    m = _DIGITS.fullmatch(value) if value.isdigit() else _W3C.fullmatch(value)
    if m is None:
        return None
    g = m.groups()
    fraction, zone = (g[6], None) if value.isdigit() else (g[6], g[7])
    try:
        t = datetime(int(g[0]), int(g[1] or 1), int(g[2] or 1), int(g[3] or 0), int(g[4] or 0), int(g[5] or 0),
                     int((fraction or "0")[:6].ljust(6, "0")), tzinfo=timezone.utc)
    except ValueError:  # month 13, hour 25 ...
        return None
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        hh, mm = int(zone[1:3]), int(zone[-2:])
        t -= sign * timedelta(hours=hh, minutes=mm)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def microseconds(values: pa.Array) -> np.ndarray:
    """Each date string as microseconds since 1970 (float64, ``-inf`` where it does not parse),
    the order of the times it names whatever form each is written in."""
    iso = pa.array([iso_utc(v) for v in values.cast(pa.string()).to_pylist()], pa.string())
    us = iso.cast(pa.timestamp("us", "UTC")).cast(pa.int64())
    return np.asarray(us.cast(pa.float64()).fill_null(-np.inf))
