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


BYTES_PER_CHAR = 4  # the most bytes a WHATWG encoding spends on one character (UTF-8, gb18030)
RAW_SLACK = 1 << 16  # stored bytes beyond the cap a payload may take and still decode under it


def payload_cap(max_doc_chars: int) -> int:
    """The most payload bytes worth holding for a document of ``max_doc_chars``: more bytes
    decode to more characters in any encoding a browser knows (one character per at most 4
    bytes), so the record is ``input/doc_too_large`` without the rest being read."""
    return BYTES_PER_CHAR * max_doc_chars


def stored_cap(cap: int) -> int:
    """The most stored (chunked, compressed) bytes read for a payload capped at ``cap``:
    chunk headers and incompressible deflate / brotli blocks add well under 1/64 (the
    decoded size of compressed data is at least its stored size less its framing)."""
    return cap + cap // 64 + RAW_SLACK


def read_capped(stream, most: int | None) -> tuple[bytes, int]:
    """(the first ``most`` + 1 bytes of ``stream``, all of it with None; how many bytes it
    holds): the rest is read in 1 MB pieces and counted, never held."""
    if most is None:
        data = stream.read()
        return data, len(data)
    data = stream.read(most + 1)
    total = len(data)
    while piece := stream.read(1 << 20):
        total += len(piece)
    return data, total


def undo_encodings(raw: bytes, transfer: str | None, content: str | None, cap: int | None = None) -> bytes:
    """The payload without HTTP chunking and compression (as received when they do not undo);
    with ``cap`` decompressed to at most ``cap`` + 1 bytes (more: the caller's reject), so a
    decompression bomb costs ``cap`` bytes, not the reader process."""
    if transfer and "chunked" in transfer.lower():
        raw = _dechunk(raw)
    enc = (content or "").strip().lower()
    most = 0 if cap is None else cap + 1  # zlib: 0 is no limit
    try:
        if enc in ("gzip", "x-gzip"):
            return _inflate(raw, 47, most)
        if enc == "deflate":
            try:
                return _inflate(raw, 15, most)
            except zlib.error:
                return _inflate(raw, -15, most)
        if enc == "br":
            import brotli

            if cap is None:
                return brotli.decompress(raw)
            d = brotli.Decompressor()
            out = d.process(raw, output_buffer_limit=most)
            return out if len(out) > cap or d.is_finished() else raw
    except Exception:  # noqa: BLE001 - a payload that does not decompress is read as stored
        return raw
    return raw


def _inflate(raw: bytes, wbits: int, most: int) -> bytes:
    """zlib-inflated ``raw``, at most ``most`` bytes (0: all); a stream that ends before its end
    (cut, or not compressed after all) raises, as ``zlib.decompress`` does."""
    d = zlib.decompressobj(wbits)
    out = d.decompress(raw, most)
    if d.eof or (most and len(out) >= most):
        return out
    raise zlib.error("incomplete or truncated stream")


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
