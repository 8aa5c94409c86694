"""The text language ID and the rules read: layout characters normalised, vectorised over a batch.

Web pages carry characters that only lay text out: non-breaking and other Unicode spaces
(U+00A0 between every word of DocBook pages such as valgrind's manual, U+2009, U+202F,
U+3000 ...) and invisible format characters (soft hyphen U+00AD, zero-width space U+200B,
word joiner U+2060, U+FEFF, the bidi marks and embeddings). fastText splits words at ASCII
white space only, so a page whose words are joined by U+00A0 is one long "word" to it: the
15 pages of Debian's valgrind manual with the most U+00A0, all English, scored ``ca`` /
``fr`` at 0.13-0.25 with lid.176, and ``en`` at 0.73-0.95 once the spaces are spaces.

What the peers do: datatrove (FineWeb) hands fastText ``text.replace("\\n", " ")`` and DCLM
``text.replace("\\n", "")``, no more; their extractors keep U+00A0 (trafilatura and
resiliparse left 259-33,898 per valgrind page, measured here), so as released both score
those pages as we did. Their rules split words with Python's Unicode-aware ``str.split`` /
``\\s``, for which U+00A0 is a space (RedPajama-v2's and CCNet's normalisers too). Here the
language ID and the rules read one view with the same convention: every Unicode space
separator (category Zs) is an ASCII space, and invisible format characters that sit inside
or between words are removed (zero-width joiner and non-joiner, which change how Arabic,
Indic scripts and emoji are written, are kept). Newlines are never touched, so lines keep
their positions (C4's line removal judges the view and cuts the stored text).

The stored ``text`` is not changed: peers change it only where a stage rewrites it (C4's
line removal), and a user's non-breaking spaces may mean something (French typography puts
U+202F before ``;:!?``). A batch with none of these characters is returned as it is.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

SPACES = r"\x{A0}\x{1680}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}"  # Unicode Zs but U+0020
INVISIBLE = (r"\x{AD}\x{61C}\x{180E}\x{200B}\x{200E}\x{200F}\x{202A}-\x{202E}\x{2060}-\x{2064}"
             r"\x{2066}-\x{2069}\x{FEFF}")


def layout_normalized(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``texts`` with Unicode spaces as ASCII spaces and invisible format characters removed."""
    if not pc.any(pc.match_substring_regex(texts, f"[{SPACES}{INVISIBLE}]")).as_py():
        return texts
    return pc.replace_substring_regex(pc.replace_substring_regex(texts, f"[{SPACES}]", " "), f"[{INVISIBLE}]", "")
