"""Bytes of a web page -> text, as a browser decodes them.

Labels are looked up in the WHATWG Encoding Standard's label table (the ``webencodings``
package): ``latin1``, ``iso-8859-1`` and ``ascii`` are windows-1252, ``shift_jis`` is
Windows-31J, ``gb2312`` is GBK (decoded as gb18030), ``euc-kr`` is windows-949, ``big5``
is Big5-HKSCS. A label the table does not hold falls through to the next source: Python's
non-text codecs (``hex``, ``base64``, ``rot13``, ``zlib``, ``unicode_escape``,
``charmap``, ``idna``, ``punycode``, ``undefined`` ...), ``utf-7`` (no browser decodes it)
and the standard's ``replacement`` labels (``iso-2022-kr``, ``hz-gb-2312``: a browser shows
one U+FFFD; detection does better).

The sources, in the order of the standard (its encoding sniffing algorithm): a byte-order
mark, which is final (the page is decoded with it, whatever its bytes, as a browser does);
the HTTP ``Content-Type`` charset; a ``<meta>`` tag found by the standard's prescan
(:mod:`datacurate.text.prescan`: ``charset``, or ``http-equiv=content-type`` with
``content``; need-pragma and attribute parsing as written), or an XML declaration, in the
first 4 KB (a ``utf-16`` label there means UTF-8, as the HTML standard says, since a page
whose ASCII bytes were read to find it is not UTF-16);
UTF-8; resiliparse's ``detect_encoding``. A browser takes the first declaration and shows
what comes out; here each source is tried until one decodes, so a label the bytes
contradict gives way to the next (a header saying ``utf-8`` over windows-1252 bytes).
Bytes valid as UTF-8 are read as UTF-8 before any detection (non-ASCII text in another
encoding is almost never valid UTF-8 by chance), and UTF-8 that decodes nearly everything (four valid non-ASCII characters for
each invalid sequence: a page cut inside its last character) is kept with U+FFFD where it
does not. When none decodes, the reading with the fewest U+FFFD is kept if it nearly
decodes (a Shift_JIS page with one stray byte), else windows-1252, the browser's default
for an undeclared page, which decodes any bytes.

``utf-16`` labels without a byte-order mark: the HTTP header is the one place the standard
honours them (it decodes UTF-16LE), which turns an ASCII page into CJK garbage; here a
UTF-16 reading is used only when the bytes look like UTF-16 (NUL in at least a quarter of
the high or low bytes of the first 1 KB), else the next source decides.

Single-byte tables are the browser's: the windows-125x bytes 0x80-0x9F that Python's codecs
leave undefined (cp1252's 0x81, 0x8D, 0x8F, 0x90, 0x9D) are the C1 code points, as in the
standard's indexes, so a windows-1252 page always decodes.

Browsers never refuse a page: the result is the text and the number of U+FFFD the
decoding put in (``n_replacement_chars``). Only bytes that are not text at all are refused:
more than 5% of the characters (of the first 64 KB) C0 controls other than tab, line feed,
form feed and carriage return, or U+FFFD (a compressed or binary payload labelled text).
"""

from __future__ import annotations

import codecs
import re
import threading
from functools import lru_cache
from typing import NamedTuple

import webencodings

from datacurate.text.prescan import PRESCAN_BYTES, prescan as meta_prescan

# WHATWG encoding name -> the Python codec that decodes as the standard does (where
# webencodings' own codec is narrower)
_PYTHON = {"gbk": "gb18030", "euc-jp": "euc_jis_2004"}
# single-byte Windows tables: 0x80-0x9F undefined in Python's codec are the C1 code points
_C1 = frozenset({"windows-874", "windows-1250", "windows-1251", "windows-1252", "windows-1253", "windows-1254",
                 "windows-1255", "windows-1256", "windows-1257", "windows-1258"})
_UTF16 = ("utf-16le", "utf-16be")

_XML = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([^"']+)""", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"))
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\ufffd]")
_TEXT = ("text/", "application/xhtml", "application/xml", "application/json", "application/javascript",
         "application/rss", "application/atom", "message/")
MAX_NOT_TEXT = 0.05  # share of control characters / U+FFFD above which bytes are not text


class Decoded(NamedTuple):
    text: str
    encoding: str | None  # the WHATWG name used (None: not decoded, a binary payload)
    n_replacement_chars: int  # U+FFFD put in by the decoding
    not_text: bool = False  # the bytes are not text at all


_count = threading.local()  # U+FFFD put in by the current decoding (error handlers are process-wide)


def _replace(e: UnicodeDecodeError) -> tuple[str, int]:
    _count.n += 1
    return "\ufffd", e.end


def _c1(e: UnicodeDecodeError) -> tuple[str, int]:
    b = e.object[e.start]
    if 0x80 <= b <= 0x9F:
        return chr(b), e.start + 1
    return _replace(e)


codecs.register_error("datacurate.replace", _replace)
codecs.register_error("datacurate.c1", _c1)


def lookup(label: str | bytes | None) -> str | None:
    """The WHATWG encoding name of a charset label (None: no such label)."""
    if label is None:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    enc = webencodings.lookup(label.strip().strip("\"'"))
    return enc.name if enc is not None else None


@lru_cache(maxsize=None)
def python_codec(name: str) -> codecs.CodecInfo | None:
    """The Python codec that decodes a WHATWG encoding as browsers do (None: none does)."""
    if name == "replacement":
        return None
    return codecs.lookup(_PYTHON[name]) if name in _PYTHON else webencodings.lookup(name).codec_info


def codec(label: str | None) -> str | None:
    """The name of the Python codec for a charset label, as a browser reads it (None: unknown)."""
    name = lookup(label)
    info = python_codec(name) if name else None
    return info.name if info is not None else None


def prescan(payload: bytes) -> str | None:
    """The encoding a ``<meta>`` tag declares, by the HTML Standard's prescan
    (:mod:`datacurate.text.prescan`), else an XML declaration at the start (an XHTML or XML
    payload; ``utf-16`` there is UTF-8, as in a ``<meta>``)."""
    name = meta_prescan(payload)
    if name is not None:
        return name
    m = _XML.search(payload[:PRESCAN_BYTES])
    name = lookup(m.group(1)) if m else None
    return "utf-8" if name in _UTF16 else name


def bom(payload: bytes) -> str | None:
    return next((name for mark, name in _BOMS if payload.startswith(mark)), None)


def detect(payload: bytes) -> str | None:
    from resiliparse.parse.encoding import detect_encoding

    return lookup(detect_encoding(payload[:65536]))


def looks_utf16(payload: bytes, name: str) -> bool:
    head = payload[:1024]
    zeros = head[1::2] if name == "utf-16le" else head[0::2]
    return len(zeros) > 0 and zeros.count(0) * 4 >= len(zeros)


def is_text(content_type: str | None, payload: bytes) -> bool:
    """Whether a payload is to be decoded at all (by its media type; without one, no NUL
    in its first 1 KB)."""
    if content_type:
        return content_type.startswith(_TEXT) or content_type.endswith(("+xml", "+json"))
    return b"\x00" not in payload[:1024]


def _try(payload: bytes, name: str) -> tuple[str, int] | None:
    """(text, U+FFFD put in) of ``payload`` read as ``name``; None where it cannot be."""
    info = python_codec(name)
    if info is None:
        return None
    try:
        return info.decode(payload, "strict")[0], 0
    except UnicodeDecodeError:
        pass
    _count.n = 0
    text = info.decode(payload, "datacurate.c1" if name in _C1 else "datacurate.replace")[0]
    return text, _count.n


def _nearly(text: str, bad: int) -> bool:
    """At least four valid non-ASCII characters per invalid sequence."""
    return 4 * bad <= len(text) - len(text.encode("ascii", "ignore")) - bad


def _sources(payload: bytes, charset: str | None, first: str | None):
    """The encodings to try, in order (computed as needed: detection only when reached)."""
    yield first
    header = lookup(charset)
    if header in _UTF16 and first is None and not looks_utf16(payload, header):
        header = None  # the standard's UTF-16LE over ASCII bytes is CJK garbage
    yield header
    yield prescan(payload)
    yield "utf-8"  # before detection: valid UTF-8 is UTF-8 (and the detector's time is saved)
    yield detect(payload)


def decode(payload: bytes, charset: str | None = None) -> Decoded:
    """``payload`` (a text payload: :func:`is_text`) as text, the browser's way (module doc).
    ``charset``: the HTTP header's label."""
    first = bom(payload)
    if first is not None:  # a byte-order mark is final (the standard's BOM sniff): no other source is asked
        text, bad = _try(payload[3 if first == "utf-8" else 2:], first)
        return Decoded(text, first, bad, _not_text(text))
    best: tuple[int, str, str] | None = None  # (U+FFFD, name, text) of the fewest U+FFFD so far
    tried = set()
    for name in _sources(payload, charset, first):
        if name is None or name in tried:
            continue
        tried.add(name)
        got = _try(payload, name)
        if got is None:
            continue
        text, bad = got
        if bad == 0 or (name == "utf-8" and _nearly(text, bad)):
            best = (bad, name, text)
            break
        if best is None or bad < best[0]:
            best = (bad, name, text)
    bad, name, text = best
    if bad and not _nearly(text, bad):
        name = "windows-1252"
        text, bad = _try(payload, name)
    return Decoded(text, name, bad, _not_text(text))


def _not_text(text: str) -> bool:
    head = text[:65536]
    return len(_CONTROL.findall(head)) > MAX_NOT_TEXT * max(len(head), 1)
