"""The HTML Standard's "prescan a byte stream to determine its encoding" (13.2.3.2), as written.

A ``<meta>`` tag declares the encoding by a ``charset`` attribute, or by ``content`` holding
``charset=...`` together with ``http-equiv="content-type"`` (the *need pragma* rule: a
``<meta name=description content="... charset=koi8-r ...">`` declares nothing). Attributes are
parsed as the standard's "get an attribute" does: quoted, unquoted and valueless values, a
repeated attribute ignored, names lowercased; comments (``<!-- -->``, ``<!-->``), other tags'
attributes (``<div title="<meta charset=x>">``), ``</...>``, ``<!...>`` and ``<?...>`` are
skipped. A UTF-16 label found this way means UTF-8 and ``x-user-defined`` means windows-1252,
as the standard says. The labels are the WHATWG table's (``webencodings``).

No maintained Python library exposes this algorithm: html5lib has one inside its private
``_inputstream`` module (last release 2020); tests/text/test_prescan.py checks this one
against it on every case. w3lib's ``html_body_declared_encoding`` is a regular expression,
the behaviour this module replaces (a ``charset=`` in any attribute of any ``<meta>`` won).

Limit: the standard scans the first 1024 bytes; here :data:`PRESCAN_BYTES` (4096), since a
crawl's pages often declare their encoding after long ``<head>`` boilerplate, and a browser
that missed it there would reparse on the ``<meta>`` its tokenizer meets later.
"""

from __future__ import annotations

import re

import webencodings

PRESCAN_BYTES = 4096  # bytes looked at (the standard: 1024; module docstring)
_SPACE = b"\t\n\x0c\r "
_UTF16 = ("utf-16le", "utf-16be")


def _encoding(label: bytes) -> str | None:
    """The standard's "get an encoding": the WHATWG name of a label, None for failure."""
    enc = webencodings.lookup(label.decode("ascii", "replace"))
    return enc.name if enc is not None else None


def _letter(b: int) -> bool:
    return 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A


_NAME = re.compile(rb"[^\t\n\x0c\r /=>]*")
_UNQUOTED = re.compile(rb"[^\t\n\x0c\r >]*")
_SPACES = re.compile(rb"[\t\n\x0c\r ]*")
_SPACES_SLASHES = re.compile(rb"[\t\n\x0c\r /]*")


def _attribute(data: bytes, pos: int) -> tuple[bytes, bytes, int] | None:
    """The standard's "get an attribute" at ``pos``: (name, value, position after it), or None
    (no more attributes: a ``>`` or the end of the bytes). Runs of bytes go through regular
    expressions; ``bytes.lower`` lowercases A-Z only, as the standard does."""
    n = len(data)
    pos = _SPACES_SLASHES.match(data, pos).end()
    if pos >= n or data[pos] == 0x3E:
        return None
    first = data[pos:pos + 1] if data[pos] == 0x3D else b""  # "=" as a name's first byte is part of it
    m = _NAME.match(data, pos + len(first))
    name, pos = (first + m.group()).lower(), m.end()
    if pos >= n:
        return None
    if data[pos] in (0x2F, 0x3E):  # "/" or ">": valueless
        return name, b"", pos
    pos = _SPACES.match(data, pos).end()
    if pos >= n:
        return None
    if data[pos] != 0x3D:  # a valueless attribute; the position stays on the next byte
        return name, b"", pos
    pos = _SPACES.match(data, pos + 1).end()
    if pos >= n:
        return None
    c = data[pos]
    if c in (0x22, 0x27):  # a quoted value
        end = data.find(bytes([c]), pos + 1)
        if end < 0:
            return None
        return name, data[pos + 1:end].lower(), end + 1
    m = _UNQUOTED.match(data, pos)  # unquoted, to a space or ">" (empty when ">" comes first)
    if m.end() >= n:
        return None
    return name, m.group().lower(), m.end()


def from_content(value: bytes) -> str | None:
    """The standard's "extract a character encoding from a meta element" (a ``content`` value)."""
    low, pos = value.lower(), 0
    while True:
        i = low.find(b"charset", pos)
        if i < 0:
            return None
        pos = i + 7
        while pos < len(value) and value[pos] in _SPACE:
            pos += 1
        if pos < len(value) and value[pos] == 0x3D:
            break
    pos += 1
    while pos < len(value) and value[pos] in _SPACE:
        pos += 1
    if pos >= len(value):
        return None
    if value[pos] in (0x22, 0x27):
        end = value.find(bytes([value[pos]]), pos + 1)
        return _encoding(value[pos + 1:end]) if end > 0 else None
    end = pos
    while end < len(value) and value[end] not in _SPACE and value[end] != 0x3B:
        end += 1
    return _encoding(value[pos:end])


def _meta(data: bytes, pos: int) -> tuple[str | None, int]:
    """The encoding a ``<meta`` tag at ``pos`` declares (None: none), and where scanning goes on."""
    pos += 5
    seen, got_pragma, need_pragma, charset = set(), False, None, None
    while True:
        attr = _attribute(data, pos)
        if attr is None:
            break
        name, value, pos = attr
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv":
            got_pragma = got_pragma or value == b"content-type"
        elif name == b"content" and charset is None:
            found = from_content(value)
            if found is not None:
                charset, need_pragma = found, True
        elif name == b"charset" and charset is None:
            charset, need_pragma = _encoding(value) or False, False
    if need_pragma is None or (need_pragma and not got_pragma) or not charset:
        return None, pos
    return ("utf-8" if charset in _UTF16 else "windows-1252" if charset == "x-user-defined" else charset), pos


def prescan(payload: bytes, most: int = PRESCAN_BYTES) -> str | None:
    """The encoding the first ``most`` bytes declare in a ``<meta>`` tag (None: none)."""
    data, pos = payload[:most], 0
    if b"charset" not in data.lower():  # every declaration holds it (an attribute's name, or content's value)
        return None
    n = len(data)
    while pos < n:
        if data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 2)  # "<!-->" ends a comment too
            if end < 0:
                return None
            pos = end + 3
            continue
        head = data[pos:pos + 6].lower()
        if head[:5] == b"<meta" and len(head) == 6 and (head[5] in _SPACE or head[5] == 0x2F):
            found, pos = _meta(data, pos)
            if found is not None:
                return found
            continue
        if data[pos] == 0x3C and pos + 1 < n:
            nxt = data[pos + 1]
            if _letter(nxt) or (nxt == 0x2F and pos + 2 < n and _letter(data[pos + 2])):
                pos += 2
                while pos < n and data[pos] not in _SPACE and data[pos] != 0x3E:
                    pos += 1
                while (attr := _attribute(data, pos)) is not None:  # its attributes: skipped whole
                    pos = attr[2]
                pos += 1
                continue
            if nxt in (0x21, 0x2F, 0x3F):  # "<!", "</", "<?": to the next ">"
                end = data.find(b">", pos + 2)
                if end < 0:
                    return None
                pos = end + 1
                continue
        pos = data.find(b"<", pos + 1)  # the standard's "next byte", to the next "<" (nothing else matches)
        if pos < 0:
            return None
    return None
