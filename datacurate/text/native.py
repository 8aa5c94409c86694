"""Main-content extraction of our own over lexbor's DOM (selectolax): the ``native`` engine.

Rules learned from the published main-content extractors and written here anew:

* **Pruning** (trafilatura's ``MANUALLY_CLEANED`` tags and ``OVERALL_DISCARD_XPATH``,
  readability's ``unlikelyCandidates`` / ``okMaybeItsACandidate``): tags that are never the
  article (scripts, media, forms' controls, ``nav`` / ``aside`` / ``footer``, figures of
  images; a figure holding a table, code or a quote stays: WordPress's ``wp-block-table``),
  subtrees hidden from the reader (``hidden``, ``aria-hidden``, ``display:none``, hiding
  class tokens), even when their name says content, ARIA roles of page chrome
  (``navigation``, ``banner``, ``contentinfo``, ``complementary`` ...), and subtrees whose
  class / id names say boilerplate (sidebar, share, comments, related, cookie banners ...)
  unless the name also says content (``l-sidebar l-article-body``). Names are matched as
  whole tokens and word parts, never substrings (:mod:`datacurate.text.native_names`:
  ``hidden`` is not ``overflow-hidden``, ``toc`` not "protocol"). A match holding most of
  the article's text is a wrapper and stays. Declarative shadow roots and ``<noframes>``
  are read as content (:func:`datacurate.text.native_dom.prepare`).
* **The article's container** (trafilatura's ``BODY_XPATH``, schema.org microdata): the
  first landmark level of ``itemprop=articleBody``, article-body class / id names,
  ``<article>``, ``<main>`` / ``role=main`` whose largest match holds a quarter of the page's
  text; several large matches of one level (a body split over frames): their common
  ancestor; no landmark: the whole body.
* **Paragraphs** (jusText, Pomikálek 2011; boilerpipe's text blocks, Kohlschütter et al.
  2010): the text between block-level tags, with its characters inside links (a block
  inside an ``<a>``, a teaser card, is all link text). A paragraph is good by its words
  (12+, or 5+ ending in punctuation) and a low link density, bad when link-heavy, short
  otherwise; short paragraphs, headings and list / table cells take their neighbours'
  class (jusText's context step); a page with no prose keeps what is not link-heavy.
* **The main region** (readability's candidate scoring, Arc90 2009): good paragraphs score
  their parent, grandparent and great-grandparent by their length; good paragraphs after
  the best node (widened until it holds 65 % of the prose) are teasers, bios or asides
  and go; those before it (leads, standfirsts) stay.

Headings, lists, tables and ``<pre>`` code are kept as trafilatura keeps them, comments left
out; ``<br>`` is a line break (addresses, poems). Every selection runs in lexbor's CSS engine
(C) or in one Python scan of the named elements (decisions cached per class / id string); one
``traverse`` walks the text nodes; every walk up the tree is memoised, so no pass is
quadratic on nested matches (:mod:`datacurate.text.native_dom`).
Measured in ``benchmarks/eval_extract.py`` beside trafilatura (``results/extract_issue49.json``;
two public sets, dev and held-back quarters, and the long-tail set of ``tests/data/longtail``):
F1 0.961 / 0.965 / 0.920 / 0.916 / 0.954 against trafilatura's 0.960 / 0.976 / 0.922 / 0.922 /
0.938 (aeb dev / aeb held / trafilatura dev / trafilatura held / long tail) at 6-11x its pages
per CPU-second, in process. The trade-off: one pass, no fallback extractor to compare
with, so pages whose structure fools the rules are not rescued as trafilatura rescues them.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from datacurate.text import native_dom
from datacurate.text.native_names import BOILER, HIDDEN, NAMES, NEUTRAL, TALK, name_kind

# never content: scripts, styles, embedded media, page chrome and form controls (the
# <form> itself stays: ASP.NET pages wrap the whole body in one)
UNWANTED_TAGS = ["script", "style", "noscript", "template", "head", "iframe", "object", "embed", "applet",
                 "svg", "math", "canvas", "video", "audio", "map", "picture", "source", "track", "nav",
                 "footer", "menu", "button", "select", "textarea", "input", "label", "fieldset",
                 "legend", "option", "datalist", "dialog", "frameset", "frame", "marquee"]
# a figure is an image with its caption unless it holds one of these (WordPress's wp-block-table,
# wp-block-code, wp-block-pullquote; Jekyll's <figure class="highlight"><pre>)
FIGURE_CONTENT = "table, pre, code, blockquote, ul, ol, dl"

# ARIA roles of page chrome
BOILERPLATE_ROLES = frozenset("navigation banner contentinfo complementary menu menubar search dialog alertdialog "
                              "alert toolbar tablist".split())
_HIDDEN_STYLE = re.compile(r"display:\s*none|visibility:\s*hidden")
# a short paragraph that asks for cookie consent (a banner whose name says nothing: "notice-bar")
_COOKIE_TEXT = re.compile(r"\b(?:we|this (?:web)?site|our (?:web)?site|the (?:web)?site) (?:use|uses|utili[sz]es?) "
                          r"cookies|\baccept all cookies|\bcookie (?:settings|preferences)\b|"
                          r"\bby continuing to (?:use|browse)", re.I)
COOKIE_MAX_WORDS = 80  # consent banners run 15-60 words; an article about cookies has longer paragraphs

# what one CSS query (C) hands to the Python scan: elements with a name, role, style or landmark tag
_SCAN = "[class], [id], [role], [style], [hidden], [aria-hidden], [itemprop], article, main"

BLOCK_TAGS = frozenset(
    "address article blockquote body dd details div dl dt figure figcaption h1 h2 h3 h4 h5 h6 hr html li main ol p "
    "pre section summary table tbody td tfoot th thead tr ul center form".split())
LIST_TAGS = frozenset("li dd dt td th".split())
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_SPACE = re.compile(r"\s+")
_END_PUNCT = (".", "!", "?", ":", ";", '"', "”", "»", "。", "！", "？", ")", "…")
# scripts written without spaces between words: Han, kana, Thai, Lao, Tibetan, Myanmar, Khmer
_NO_SPACE_SCRIPT = re.compile("[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
                              "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

MIN_ROOT_SHARE = 0.25  # a landmark holds at least this share of the page's text ...
MIN_ROOT_CHARS = 250   # ... and at least this many characters (less: the page is a stub, keep its all)
SPLIT_SHARE = 0.3      # matches of one landmark this large beside the largest: take their common ancestor
GUARD_SHARE = 0.6      # a boilerplate match holding more of the container's text is a wrapper and stays
ASIDE_GUARD_SHARE = 0.5  # an <aside> holding more of the page's text is where the page put its article
HIDDEN_GUARD_SHARE = 0.9  # a hidden match stays only when it is nearly the whole page (shown by its scripts)
DISCUSSION_SHARE = 0.5  # comment-named subtrees holding this much of the container's text: a thread, kept ...
MAX_POST_SHARE = 0.5    # ... when no one of them holds this much of it (not one comment section's wrapper)
MAX_LINK_DENSITY = 0.5  # more of a paragraph's characters inside links: navigation
SHORT_LINK_DENSITY = 0.25  # ... and for a paragraph under GOOD_WORDS words, this much already
MAX_OUTSIDE = 0.35     # the main region holds at least 65 % of the good paragraphs' text
GOOD_WORDS = 12        # a paragraph of this many words (few links) is content
SHORT_WORDS = 5        # under this many words and no final punctuation: boilerplate unless context says
MAX_MEAN_WORD_CHARS = 20  # more characters per space-separated word: no-space script, or not words at all
MAX_WORD_CHARS = 45    # a longer run without spaces is no word (base64, a hash, a minified line)
NO_SPACE_CHARS_PER_WORD = 3  # Chinese / Japanese / Thai: ~1.5-3 characters a word (counted low: fewer "words")
JUNK_MIN_CHARS = 200   # this long with under SHORT_WORDS words: a data string, not text
SCORE_LEVELS = (1, 2, 3)  # readability: a paragraph scores its parent / 1, grandparent / 2, great-grandparent / 3
SIBLING_SHARE = 0.2    # readability: siblings scoring a fifth of the best node join the region
MAX_CHAIN = 40         # ancestors a paragraph's chain follows in the region step (deeper: one region)
_IN_LINK = ", ".join(f"a {t}" for t in ("p", "div", "li", "span", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt"))
_PARAGRAPHS = native_dom.Paragraphs(BLOCK_TAGS, _IN_LINK)


def scan(body) -> tuple[list[list], list, list[int]]:
    """One pass over the named elements: the landmark candidates by level (``itemprop=
    articleBody``, article-body class / id names, ``<article>``, ``<main>`` / ``role=main``),
    the boilerplate subtrees (a boilerplate class / id, a chrome ARIA role, or hidden) and,
    for each, why: :data:`HIDDEN`, :data:`TALK` (a comment's name) or :data:`BOILER`."""
    levels: list[list] = [[], [], [], []]
    boiler, hidden = [], []
    seen = set()  # lexbor returns an element once per selector of the list it matches
    for n in body.css(_SCAN):
        if n.mem_id in seen:
            continue
        seen.add(n.mem_id)
        a = n.attributes
        cls, ident = a.get("class") or "", a.get("id") or ""
        is_body, kind, talk = NAMES.get(f"{cls}\0{ident}") or name_kind(cls, ident)
        prop = a.get("itemprop")
        if prop is not None and prop.lower() == "articlebody":
            levels[0].append(n)
        elif is_body:
            levels[1].append(n)
        tag, role = n.tag, a.get("role")
        if tag == "article":
            levels[2].append(n)
        elif tag == "main" or role == "main":
            levels[3].append(n)
        if kind == BOILER:
            boiler.append(n)
            hidden.append(TALK if talk else BOILER)
            continue
        style = a.get("style")
        if (kind == HIDDEN or "hidden" in a or a.get("aria-hidden") == "true"
                or (style is not None and _HIDDEN_STYLE.search(style.lower()))):
            boiler.append(n)
            hidden.append(HIDDEN)
        elif kind == NEUTRAL and role in BOILERPLATE_ROLES:
            boiler.append(n)
            hidden.append(BOILER)
    return levels, boiler, hidden


def container(levels: list[list], body, total: int):
    """The article's container: the first landmark level with a match holding enough text."""
    need = max(MIN_ROOT_CHARS, MIN_ROOT_SHARE * total)
    nodes = list({n.mem_id: n for level in levels for n in level}.values())
    if len(nodes) <= native_dom.MAX_NESTED_DIRECT:  # lexbor measures each (at most so many passes)
        chars = {n.mem_id: len(n.text(deep=True)) for n in nodes}
    else:  # many candidates, maybe nested: one walk
        sub = native_dom.Subtrees(nodes, body)
        chars = {i: sub.chars(k) for k, i in enumerate(sub.ids)}
    for level in levels:
        hits = [(chars[n.mem_id], n) for n in level]
        best_len = max((k for k, _ in hits), default=0)
        if best_len < need:
            continue
        # several large matches (a page split in frames or articles): their common ancestor
        big = [n for k, n in hits if k >= SPLIT_SHARE * best_len]
        return native_dom.common_ancestor(big) if len(big) > 1 else next(n for k, n in hits if k == best_len)
    return body


def _discussion(boiler: list, why: list[int], body, root_chars: int) -> bool:
    """Are the comment-named subtrees the page (a forum thread, a Q&A page), not its margin?
    The outermost ones hold :data:`DISCUSSION_SHARE` of the container's text, as separate
    posts: none holds :data:`MAX_POST_SHARE` of it alone (an article's comment section is one
    wrapper around them all)."""
    talk = [n for n, w in zip(boiler, why) if w == TALK]
    sub = native_dom.Subtrees(talk, body)
    posts = [sub.chars(k) for k, a in enumerate(sub.above) if a is None]
    held = sum(posts)
    return held >= DISCUSSION_SHARE * root_chars and max(posts) < MAX_POST_SHARE * held


def _chrome_name(node) -> bool:
    a = node.attributes
    return name_kind(a.get("class") or "", a.get("id") or "")[1] in (BOILER, HIDDEN)


def _drop_image_figures(tree) -> None:
    for f in tree.css("figure"):
        if f.css_first(FIGURE_CONTENT) is None:
            f.decompose()


def _main_region(paras: list[list], cls: list[str], texts: list[str]) -> None:
    """Readability's candidate step (Arc90 2009) over the good paragraphs: each one's length
    scores its parent (x1), grandparent (x1/2) and great-grandparent (x1/3); good paragraphs
    outside the best-scored node and its well-scored siblings (>= 1/5 of its score) turn
    bad: teaser cards and "more stories" lists with sentences of their own."""
    good = [i for i, c in enumerate(cls) if c == "good"]
    if len(good) < 2:
        return
    chains, score, parent = [], {}, {}
    for i in good:
        chain, node = [], paras[i][3]
        while node is not None and len(chain) < MAX_CHAIN:
            chain.append(node.mem_id)
            node = node.parent
        chains.append(chain)
        for a, b in zip(chain, chain[1:]):
            parent[a] = b
        for level, anc in enumerate(chain[1:4]):
            score[anc] = score.get(anc, 0.0) + len(texts[i]) / SCORE_LEVELS[level]
    top = max(score, key=score.get)
    total = sum(len(texts[i]) for i in good)
    while True:
        floor = score.get(top, 0.0) * SIBLING_SHARE
        up = parent.get(top)
        region = {top} | {a for a, s in score.items() if up is not None and parent.get(a) == up and s >= floor}
        outside = [i for i, chain in zip(good, chains) if region.isdisjoint(chain)]
        # a region that leaves out most of the good text is a fragment of the article: widen it
        if up is None or sum(len(texts[i]) for i in outside) <= MAX_OUTSIDE * total:
            break
        top = up
    # good paragraphs before the region's first (a lead or standfirst in a wrapper of its own)
    # belong to it; those after it or between its paragraphs are teasers, bios, asides
    inside = [i for i in good if i not in set(outside)]
    start = inside[0] if inside else len(cls)
    for i in outside:
        if i > start:
            cls[i] = "bad"


def _classify(paras: list[list], region: bool = True, landmark: bool = False) -> list[str]:
    """Each paragraph's text, "" when it is boilerplate (jusText-like: link density, length,
    punctuation, then short paragraphs judged by their neighbours)."""
    texts, cls, words = [], [], []
    br = native_dom.Paragraphs.BR
    for tag, parts, link_chars, _ in paras:
        raw = "".join(parts)
        if tag == "pre":
            text = raw.replace(br, "\n").strip("\n")
        elif br in raw:  # <br>: one paragraph of several lines
            text = "\n".join(ln for ln in (_SPACE.sub(" ", x).strip() for x in raw.split(br)) if ln)
        else:
            text = _SPACE.sub(" ", raw).strip()
        texts.append(text)
        n = len(text)
        if not n or (text[0] == "<" and text[-1] == ">"):  # markup shown as text (a <noscript> pixel)
            cls.append("bad")
            words.append(0)
            continue
        w = text.count(" ") + text.count("\n") + 1
        if w * MAX_MEAN_WORD_CHARS < n:  # few spaces: a no-space script, or a string that is no text
            w = sum(len(t) <= MAX_WORD_CHARS for t in text.split()) + (
                len(_NO_SPACE_SCRIPT.findall(text)) // NO_SPACE_CHARS_PER_WORD)
        words.append(w)
        density = link_chars / n
        if tag in HEADINGS and (w < 2 * GOOD_WORDS or tag == "h1"):
            cls.append("heading" if density <= MAX_LINK_DENSITY else "bad")
        elif density > MAX_LINK_DENSITY or (density > SHORT_LINK_DENSITY and w < GOOD_WORDS):
            cls.append("bad")
        elif tag != "pre" and w < SHORT_WORDS and n >= JUNK_MIN_CHARS:  # base64, a hash, a minified line
            cls.append("bad")
        elif w < COOKIE_MAX_WORDS and "ookie" in text and _COOKIE_TEXT.search(text):
            cls.append("bad")
        elif tag == "pre" or w >= GOOD_WORDS or (w >= SHORT_WORDS and text.endswith(_END_PUNCT)):
            cls.append("good")
        else:
            cls.append("short")
    if region:
        _main_region(paras, cls, texts)
    no_prose = "good" not in cls  # a table or list page: what is not link-heavy is its content
    # short paragraphs and headings: content when the nearest judged paragraphs after them is good
    # (headings, list items), or when content lies on both sides
    n = len(cls)
    nxt, prev = [None] * n, [None] * n
    last = None
    for i in range(n):
        prev[i] = last
        if cls[i] in ("good", "bad"):
            last = cls[i]
    last = None
    for i in range(n - 1, -1, -1):
        nxt[i] = last
        if cls[i] in ("good", "bad"):
            last = cls[i]
    # inside an article landmark, a list or table after the first prose is the article's
    good_before, seen = [False] * n, False
    for i in range(n):
        good_before[i] = seen
        seen = seen or cls[i] == "good"
    out = []
    for i, c in enumerate(cls):
        if c == "good":
            keep = True
        elif c == "heading":
            keep = nxt[i] == "good" or no_prose
        elif c == "short":  # between content, or a list / table row or a longer line beside it
            keep = no_prose or (prev[i] == "good" and nxt[i] != "bad") or (nxt[i] == "good" and prev[i] != "bad") or (
                (paras[i][0] in LIST_TAGS or words[i] >= SHORT_WORDS) and "good" in (prev[i], nxt[i])) or (
                landmark and paras[i][0] in LIST_TAGS and (prev[i] == "good" or nxt[i] == "good" or good_before[i]))
        else:
            keep = False
        out.append(texts[i] if keep else "")
    return out


def native_text(html: str, options: dict | None = None) -> str:
    """The main text of one page, paragraphs on their own lines ("" when none)."""
    tree = LexborHTMLParser(html)
    if tree.css_first(native_dom.PREPARE) is not None:  # rare: rewrite the page, parse it again
        html = native_dom.prepare(html)
        tree = LexborHTMLParser(html)
    tree.strip_tags(UNWANTED_TAGS, recursive=True)
    _drop_image_figures(tree)
    body = tree.body
    if body is None:
        return ""
    total = len(body.text(deep=True))
    asides = body.css("aside")
    if asides:  # an <aside> holding most of the page, not named as chrome, is where a CMS put its article
        native_dom.prune(asides, [total if _chrome_name(a) else int(ASIDE_GUARD_SHARE * total) for a in asides], body)
        total = len(body.text(deep=True))
    if total < MIN_ROOT_CHARS:  # a page whose text sits inside a <noscript>, <nav> ... : scripts out only
        tree = LexborHTMLParser(html)
        tree.strip_tags(["script", "style", "template", "head"], recursive=True)
        body = tree.body
        total = len(body.text(deep=True)) if body is not None else 0
    if not total:
        return ""
    levels, boiler, why = scan(body)
    root = container(levels, body, total)
    root_chars = len(root.text(deep=True))
    if TALK in why and _discussion(boiler, why, body, root_chars):  # a forum thread: its posts are the page
        boiler, why = [n for n, w in zip(boiler, why) if w != TALK], [w for w in why if w != TALK]
    native_dom.prune(boiler, [int((HIDDEN_GUARD_SHARE if w == HIDDEN else GUARD_SHARE) * root_chars) for w in why],
                     body)
    paras = _PARAGRAPHS(root)
    lines = [t for t in _classify(paras, (options or {}).get("region", True), root.mem_id != body.mem_id) if t]
    return "\n".join(lines)
