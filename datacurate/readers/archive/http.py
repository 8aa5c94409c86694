"""HTTP inside a record: the Content-Type's media type and charset, the transfer and content
encodings undone, an ARC record's status line and headers, and the payload decoded to text
(:mod:`datacurate.text.charset`)."""

from __future__ import annotations

import zlib

from datacurate.text import charset as charsets


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """(media type, lower-case; charset parameter) of a Content-Type value."""
    if not value:
        return None, None
    parts = value.split(";")
    mime = parts[0].strip().lower() or None
    charset = next((p.split("=", 1)[1].strip().strip("\"'") for p in parts[1:]
                    if p.strip().lower().startswith("charset=")), None)
    return mime, charset or None


def undo_encodings(raw: bytes, transfer: str | None, content: str | None) -> bytes:
    """The payload without HTTP chunking and compression (as received when they do not undo)."""
    if transfer and "chunked" in transfer.lower():
        raw = _dechunk(raw)
    enc = (content or "").strip().lower()
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompress(raw, 47)
        if enc == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -15)
        if enc == "br":
            import brotli

            return brotli.decompress(raw)
    except Exception:  # noqa: BLE001 - a payload that does not decompress is read as stored
        return raw
    return raw


def _dechunk(raw: bytes) -> bytes:
    out, pos = [], 0
    while True:
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            return raw  # not chunked after all (as warcio: the stored bytes)
        try:
            n = int(raw[pos:eol].split(b";")[0].strip(), 16)
        except ValueError:
            return raw
        if n == 0:
            return b"".join(out)
        out.append(raw[eol + 2:eol + 2 + n])
        pos = eol + 2 + n + 2


def split_http(body: bytes) -> tuple[int | None, dict, bytes]:
    end = body.find(b"\r\n\r\n")
    sep = 4
    if end < 0 or (0 <= body.find(b"\n\n") < end):
        end, sep = body.find(b"\n\n"), 2
    if end < 0:
        return None, {}, body
    lines = body[:end].decode("iso-8859-1").splitlines()
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, body
    headers = {}
    for h in lines[1:]:
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body[end + sep:]


def decode(payload: bytes, charset: str | None, content_type: str | None) -> tuple[str, str | None, int, str | None]:
    """(text, WHATWG encoding or None, U+FFFD put in, reject reason or None) of a payload: a
    binary one is empty text; a text one is decoded as a browser does (text/charset.py),
    and rejected only when its bytes are not text at all (``input/not_text``)."""
    if not charsets.is_text(content_type, payload):
        return "", None, 0, None
    d = charsets.decode(payload, charset)
    return d.text, d.encoding, d.n_replacement_chars, "input/not_text" if d.not_text else None
