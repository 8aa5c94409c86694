"""Writing system of every document of a batch (ISO 15924 codes), vectorised.

lid.176 names a language, not its script: ``zh`` is written in simplified (Hans) or
traditional (Hant) characters, ``sr`` in Cyrillic or Latin, ``hi`` in Devanagari or
romanised. FineWeb-2 keys its configs by language *and* script (``srp_Latn``,
``hin_Latn``), so :func:`scripts_of` labels each document's dominant script.

How, without a Python loop over documents: the UTF-8 bytes of the whole batch (each
document's first ``max_chars`` characters) are decoded to code points in NumPy, each code
point gets a script by one ``searchsorted`` over the block table below (Unicode's
blocks for the letters of each script; punctuation, digits and symbols count for none),
and ``bincount`` over (document, script) gives the counts. Derived labels:

- ``Jpan``: Han with kana making >= 10 % of them (Japanese mixes both);
- ``Hang``: Hangul (FineWeb-2's ``kor_Hang``);
- ``Hans`` / ``Hant``: Han text whose characters in the simplified-only list outnumber those
  in the traditional-only list (or the reverse); ``Hani`` when neither decides. The two
  lists are the forms of frequent characters whose simplified and traditional shapes
  differ (这/這, 们/們, 国/國 ...); a character common to both systems decides nothing.

Documents with no letter get ``Zyyy`` (ISO 15924's "undetermined").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# (first code point, last code point, script): letters of each script by Unicode block
_BLOCKS = [
    (0x41, 0x5A, "Latn"), (0x61, 0x7A, "Latn"), (0xC0, 0xD6, "Latn"), (0xD8, 0xF6, "Latn"), (0xF8, 0x24F, "Latn"),
    (0x370, 0x3FF, "Grek"), (0x400, 0x52F, "Cyrl"), (0x530, 0x58F, "Armn"), (0x591, 0x5FF, "Hebr"),
    (0x620, 0x64A, "Arab"), (0x66E, 0x6D3, "Arab"), (0x6D5, 0x6FF, "Arab"), (0x700, 0x74F, "Syrc"),
    (0x750, 0x77F, "Arab"), (0x780, 0x7BF, "Thaa"), (0x8A0, 0x8FF, "Arab"), (0x900, 0x963, "Deva"),
    (0x966, 0x97F, "Deva"), (0x980, 0x9FF, "Beng"), (0xA00, 0xA7F, "Guru"), (0xA80, 0xAFF, "Gujr"),
    (0xB00, 0xB7F, "Orya"), (0xB80, 0xBFF, "Taml"), (0xC00, 0xC7F, "Telu"), (0xC80, 0xCFF, "Knda"),
    (0xD00, 0xD7F, "Mlym"), (0xD80, 0xDFF, "Sinh"), (0xE00, 0xE7F, "Thai"), (0xE80, 0xEFF, "Laoo"),
    (0xF00, 0xFFF, "Tibt"), (0x1000, 0x109F, "Mymr"), (0x10A0, 0x10FF, "Geor"), (0x1100, 0x11FF, "Hang"),
    (0x1200, 0x139F, "Ethi"), (0x13A0, 0x13FF, "Cher"), (0x1780, 0x17FF, "Khmr"), (0x1800, 0x18AF, "Mong"),
    (0x1C80, 0x1C8F, "Cyrl"), (0x1C90, 0x1CBF, "Geor"), (0x1E00, 0x1EFF, "Latn"), (0x1F00, 0x1FFF, "Grek"),
    (0x2C60, 0x2C7F, "Latn"), (0x2D00, 0x2D2F, "Geor"), (0x2D30, 0x2D7F, "Tfng"), (0x2DE0, 0x2DFF, "Cyrl"),
    (0x3040, 0x309F, "Hira"), (0x30A0, 0x30FF, "Kana"), (0x3130, 0x318F, "Hang"), (0x31F0, 0x31FF, "Kana"),
    (0x3400, 0x4DBF, "Hani"), (0x4E00, 0x9FFF, "Hani"), (0xA640, 0xA69F, "Cyrl"), (0xA720, 0xA7FF, "Latn"),
    (0xA8E0, 0xA8FF, "Deva"), (0xAB30, 0xAB6F, "Latn"), (0xAC00, 0xD7AF, "Hang"), (0xF900, 0xFAFF, "Hani"),
    (0xFB1D, 0xFB4F, "Hebr"), (0xFB50, 0xFDFF, "Arab"), (0xFE70, 0xFEFF, "Arab"), (0xFF21, 0xFF3A, "Latn"),
    (0xFF41, 0xFF5A, "Latn"), (0xFF66, 0xFF9D, "Kana"), (0x20000, 0x3134F, "Hani"),
]
SCRIPTS = sorted({s for _, _, s in _BLOCKS})
_STARTS = np.array([b[0] for b in _BLOCKS], dtype=np.int64)
_ENDS = np.array([b[1] for b in _BLOCKS], dtype=np.int64)
_IDS = np.array([SCRIPTS.index(b[2]) for b in _BLOCKS], dtype=np.int64)
_S = len(SCRIPTS)
# frequent characters with different simplified / traditional forms, pair by pair
_SIMPLIFIED = "这们个来时说国会对发经学实为与么没过还样长开关问题门见现电话语车东书买卖头让认识应该动机体区万亿历边进运难听从众业产务设计记论议报场风飞马鸟鱼龙华连钱银觉热爱写读员亲传总统号际种两师页网"
_TRADITIONAL = "這們個來時說國會對發經學實為與麼沒過還樣長開關問題門見現電話語車東書買賣頭讓認識應該動機體區萬億歷邊進運難聽從眾業產務設計記論議報場風飛馬鳥魚龍華連錢銀覺熱愛寫讀員親傳總統號際種兩師頁網"
_HANS = np.array(sorted(ord(c) for c in _SIMPLIFIED), dtype=np.int64)
_HANT = np.array(sorted(ord(c) for c in _TRADITIONAL), dtype=np.int64)


def codepoints(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(code point of every character, its document index) of a string array, in NumPy."""
    texts = texts.cast(pa.large_string()).fill_null("")
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    _, off_buf, data_buf = texts.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[texts.offset: texts.offset + len(texts) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]: offsets[-1]] if data_buf is not None else \
        np.zeros(0, np.uint8)
    offsets = offsets - offsets[0]
    b = data.astype(np.int64)
    lead = np.flatnonzero((b & 0xC0) != 0x80)  # first byte of each character
    n = np.diff(np.append(lead, len(b)))  # bytes per character (1-4)
    cp = np.where(n == 1, b[lead], 0)
    for k, mask in ((2, 0x1F), (3, 0x0F), (4, 0x07)):
        sel = n == k
        if sel.any():
            i = lead[sel]
            v = b[i] & mask
            for j in range(1, k):
                v = (v << 6) | (b[i + j] & 0x3F)
            cp[sel] = v
    doc = np.repeat(np.arange(len(texts)), np.diff(offsets))[lead]  # document of each byte, of each lead byte
    return cp, doc


def script_counts(texts: pa.Array, max_chars: int = 1000) -> np.ndarray:
    """(D, len(SCRIPTS)) letters of each script per document (first ``max_chars`` characters)."""
    texts = pc.utf8_slice_codeunits(texts, 0, max_chars)
    cp, doc = codepoints(texts)
    blk = np.searchsorted(_STARTS, cp, side="right") - 1
    inside = (blk >= 0) & (cp <= _ENDS[np.maximum(blk, 0)])
    key = doc[inside] * _S + _IDS[blk[inside]]
    return np.bincount(key, minlength=len(texts) * _S).reshape(len(texts), _S)


def allowed_for(scripts: set[str]) -> np.ndarray:
    """(len(SCRIPTS),) mask of the letter scripts that make up ISO 15924 ``scripts`` (``Jpan``:
    Han and kana; ``Hans``, ``Hant``, ``Hani``: Han; ``Kore``, ``Hang``: Hangul and Han)."""
    parts = {"Jpan": {"Hani", "Hira", "Kana"}, "Hans": {"Hani"}, "Hant": {"Hani"}, "Kore": {"Hang", "Hani"},
             "Hang": {"Hang", "Hani"}}
    want = set().union(*(parts.get(s, {s}) for s in scripts)) if scripts else set(SCRIPTS)
    return np.array([s in want for s in SCRIPTS])


def scripts_of(texts: pa.Array, max_chars: int = 1000, allowed: np.ndarray | None = None) -> pa.Array:
    """The dominant script of each document (``Latn``, ``Cyrl``, ``Hans``, ``Jpan`` ...).

    ``allowed``: (D, len(SCRIPTS)) mask of the scripts each document's language is written in
    (:func:`allowed_for`): the dominant one among those, where the document has any of their
    letters (a Chinese help text full of Latin command names is still Han; a Serbian page
    is Cyrillic or Latin, whatever it quotes)."""
    texts = pc.utf8_slice_codeunits(texts, 0, max_chars)
    counts = script_counts(texts, max_chars).astype(np.float64)
    if allowed is not None:
        masked = counts * allowed
        counts = np.where(masked.sum(axis=1, keepdims=True) > 0, masked, counts)
    ix = {s: SCRIPTS.index(s) for s in ("Hani", "Hira", "Kana", "Hang")}
    kana = counts[:, ix["Hira"]] + counts[:, ix["Kana"]]
    han = counts[:, ix["Hani"]]
    japanese = kana >= 0.1 * (han + kana)
    # Japanese and Korean text is one script with its kana / Hangul
    merged = counts.copy()
    merged[:, ix["Hani"]] += kana
    merged[:, ix["Hira"]] = merged[:, ix["Kana"]] = 0
    names = np.array(SCRIPTS, dtype=object)
    best = merged.argmax(axis=1)
    out = names[best]
    out[merged.max(axis=1) == 0] = "Zyyy"
    is_han = (best == ix["Hani"]) & (merged.max(axis=1) > 0)
    out[is_han & japanese & (kana > 0)] = "Jpan"
    chinese = np.flatnonzero(is_han & ~(japanese & (kana > 0)))
    if len(chinese):
        cp, doc = codepoints(texts.take(pa.array(chinese)))
        hans = np.bincount(doc[np.isin(cp, _HANS)], minlength=len(chinese))
        hant = np.bincount(doc[np.isin(cp, _HANT)], minlength=len(chinese))
        out[chinese] = np.where(hans > hant, "Hans", np.where(hant > hans, "Hant", "Hani"))
    return pa.array(out, pa.string())
