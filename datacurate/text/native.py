"""Main-content extraction of our own over lexbor's DOM (selectolax): the ``native`` engine.

Rules learned from the published main-content extractors and written here anew:

* **Pruning** (trafilatura's ``MANUALLY_CLEANED`` tags and ``OVERALL_DISCARD_XPATH``,
  readability's ``unlikelyCandidates`` / ``okMaybeItsACandidate``): tags that are never the
  article (scripts, media, forms' controls, ``nav`` / ``aside`` / ``footer``, figures),
  subtrees hidden from the reader (``hidden``, ``aria-hidden``, ``display:none``), ARIA roles
  of page chrome (``navigation``, ``banner``, ``contentinfo``, ``complementary`` ...), and
  subtrees whose class / id names say boilerplate (sidebar, share, comments, related,
  newsletter ...) unless the name also says content (``l-sidebar l-article-body``). A
  match holding most of the article's text is a wrapper and stays.
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
out. Every selection runs in lexbor's CSS engine (C) or in one Python scan of the named
elements (decisions cached per class / id string); one ``traverse`` walks the text nodes.
Measured in ``benchmarks/eval_extract.py`` beside trafilatura and resiliparse (two public
sets, dev and held-back quarters): F1 0.960 / 0.966 / 0.917 / 0.922 against trafilatura's
0.960 / 0.976 / 0.922 / 0.922 at ~8x its pages per CPU-second, in process; resiliparse
0.931 / 0.916 / 0.862 / 0.863. The trade-off: one pass, no fallback extractor to compare
with, so pages whose structure fools the rules are not rescued as trafilatura rescues them.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

# never content: scripts, styles, embedded media, page chrome and form controls (the
# <form> itself stays: ASP.NET pages wrap the whole body in one)
UNWANTED_TAGS = ["script", "style", "noscript", "template", "head", "iframe", "object", "embed", "applet",
                 "svg", "math", "canvas", "video", "audio", "map", "picture", "source", "track", "nav",
                 "aside", "footer", "menu", "button", "select", "textarea", "input", "label", "fieldset",
                 "legend", "option", "datalist", "dialog", "frameset", "frame", "marquee", "figure", "figcaption"]

# ARIA roles of page chrome
BOILERPLATE_ROLES = frozenset("navigation banner contentinfo complementary menu menubar search dialog alert toolbar "
                              "tablist".split())
# class / id substrings of boilerplate subtrees
BOILERPLATE_NAMES = (
    "sidebar", "widget-area", "share", "sharing", "social", "comment", "related", "recommend", "newsletter",
    "subscri", "signup", "sign-up", "cookie", "consent", "gdpr", "breadcrumb", "footer", "masthead", "navbar",
    "navigation", "pagination", "pager", "popup", "modal", "promo", "sponsor", "advert", "teaser", "tagcloud",
    "tag-list", "taglist", "byline", "author-bio", "author-info", "authorinfo", "about-author", "skip-link",
    "disqus", "outbrain", "taboola", "most-popular", "mostpopular", "trending", "read-more", "readmore",
    "login", "copyright", "toolbar", "rating", "donate", "banner", "print-only", "screen-reader", "sr-only",
    "visually-hidden", "visuallyhidden", "caption", "credit", "dateline", "timestamp", "post-meta",
    "entry-meta", "article-meta", "meta-info", "prev-next", "nav-links", "post-navigation", "jump-to",
    "toc", "hidden", "offscreen", "overlay", "ad-container", "ad-slot", "adslot", "ad-wrapper", "dfp",
)
_BOILER_NAME = re.compile("|".join(map(re.escape, BOILERPLATE_NAMES)))
# short names matched as whole class tokens / ids (as substrings they would hit "head", "load" ...)
BOILERPLATE_TOKENS = frozenset(("widget", "widgets", "nav", "menu", "ad", "ads", "tags", "meta", "share", "extra",
                                "header", "date", "author"))
# a matched name that also says content ("l-sidebar-fixed l-article-body-segment", "widget Blog")
# is kept (readability's okMaybeItsACandidate), unless it is one of these
_CONTENT_NAME = re.compile(r"content|article|body|main|entry|post|story|text|blog")
_ALWAYS_BOILER = re.compile(r"comment|related|social|newsletter|cookie|consent|disqus|outbrain|taboola|"
                            r"subscri|recommend|promo|advert|sponsor")
_HIDDEN_STYLE = re.compile(r"display:\s*none|visibility:\s*hidden")

# class / id names of article-body containers (trafilatura's BODY_XPATH, learned from CMS themes)
_BODY_NAME = re.compile("|".join((
    "article-body", "articlebody", "article__body", "article_body", "article-content", "article__content",
    "articlecontent", "article-text", "articletext", "story-body", "storybody", "story-content", "post-content",
    "postcontent", "post-body", "postbody", "post-entry", "entry-content", "entry-body", "blog-post-body",
    "content-body", "body-text", "bodytext", "field-body", "text-content", "main-text", "rich-text")))
# what one CSS query (C) hands to the Python scan: elements with a name, role, style or landmark tag
_SCAN = "[class], [id], [role], [style], [hidden], [aria-hidden], [itemprop], article, main"

BLOCK_TAGS = frozenset(
    "address article blockquote body dd details div dl dt figure h1 h2 h3 h4 h5 h6 hr html li main ol p pre "
    "section summary table tbody td tfoot th thead tr ul center form".split())
LIST_TAGS = frozenset("li dd dt td th".split())
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_SPACE = re.compile(r"\s+")
_END_PUNCT = (".", "!", "?", ":", ";", '"', "”", "»", "。", "！", "？", ")", "…")

MIN_ROOT_SHARE = 0.25  # a landmark holds at least this share of the page's text ...
MIN_ROOT_CHARS = 250   # ... and at least this many characters
SPLIT_SHARE = 0.3      # matches of one landmark this large beside the largest: take their common ancestor
MAX_LINK_DENSITY = 0.5
MAX_OUTSIDE = 0.35     # the main region holds at least 65 % of the good paragraphs' text
GOOD_WORDS = 12        # a paragraph of this many words (few links) is content
SHORT_WORDS = 5        # under this many words and no final punctuation: boilerplate unless context says


def _scan(body) -> tuple[list[list], list]:
    """One pass over the named elements: the landmark candidates by level (``itemprop=
    articleBody``, article-body class / id names, ``<article>``, ``<main>`` / ``role=main``)
    and the boilerplate subtrees (hidden, a chrome ARIA role, a boilerplate class / id)."""
    levels: list[list] = [[], [], [], []]
    boiler = []
    for n in body.css(_SCAN):
        a = n.attributes
        name = f"{a.get('class') or ''} {a.get('id') or ''}"
        kind = _NAMES.get(name)
        if kind is None:
            kind = _name_kind(name)
        prop = a.get("itemprop")
        if prop is not None and prop.lower() == "articlebody":
            levels[0].append(n)
        elif kind[0]:
            levels[1].append(n)
        tag, role = n.tag, a.get("role")
        if tag == "article":
            levels[2].append(n)
        elif tag == "main" or role == "main":
            levels[3].append(n)
        if kind[1] == 1:
            boiler.append(n)
        elif kind[1] == 0:
            style = a.get("style")
            if ("hidden" in a or a.get("aria-hidden") == "true" or role in BOILERPLATE_ROLES
                    or (style is not None and _HIDDEN_STYLE.search(style.lower()))):
                boiler.append(n)
    return levels, boiler


_NAMES: dict = {}  # "class id" -> _name_kind (names repeat across elements and pages)


def _name_kind(name: str) -> tuple[bool, int]:
    """(an article-body name?, 1: a boilerplate name, 0: neutral, -1: says content)."""
    low = name.lower()
    says_content = _CONTENT_NAME.search(low) is not None and _ALWAYS_BOILER.search(low) is None
    boiler = _BOILER_NAME.search(low) is not None or not BOILERPLATE_TOKENS.isdisjoint(low.split())
    kind = (_BODY_NAME.search(low) is not None, -1 if says_content else int(boiler))
    if len(_NAMES) > 200_000:
        _NAMES.clear()
    _NAMES[name] = kind
    return kind


def _prune(hits: list, guard_chars: int) -> None:
    """Unlink the boilerplate subtrees, outermost only (a nested match goes with its
    ancestor), except one holding more than ``guard_chars`` of text: a wrapper whose name
    happens to match (``has-sidebar``), or an ancestor of the article's container."""
    ids = {n.mem_id for n in hits}
    above = []  # the matched ancestors of each match, all found before the tree changes
    for n in hits:
        anc, p = [], n.parent
        while p is not None:
            if p.mem_id in ids:
                anc.append(p.mem_id)
            p = p.parent
        above.append(anc)
    removed: set = set()
    for n, anc in zip(hits, above):  # document order: an ancestor is decided before its descendants
        if removed.isdisjoint(anc) and len(n.text(deep=True)) <= guard_chars:
            removed.add(n.mem_id)
            n.decompose()


def _container(levels: list[list], body, total: int):
    """The article's container: the first landmark level with a match holding enough text."""
    need = max(MIN_ROOT_CHARS, MIN_ROOT_SHARE * total)
    for nodes in levels:
        hits = [(len(n.text(deep=True)), n) for n in nodes]
        best_len = max((k for k, _ in hits), default=0)
        if best_len < need:
            continue
        # several large matches (a page split in frames or articles): their common ancestor
        big = [n for k, n in hits if k >= SPLIT_SHARE * best_len]
        return _common_ancestor(big) if len(big) > 1 else next(n for k, n in hits if k == best_len)
    return body


def _common_ancestor(nodes):
    chains = []
    for n in nodes:
        chain = []
        while n is not None:
            chain.append(n)
            n = n.parent
        chains.append(chain[::-1])
    common = chains[0][0]
    for level in zip(*chains):
        if len({n.mem_id for n in level}) > 1:
            break
        common = level[0]
    return common


_IN_LINK = ", ".join(f"a {t}" for t in ("p", "div", "li", "span", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt"))


def _paragraphs(root) -> list[list]:
    """[tag, text parts, link chars, block node] of each run of text under one block element, in order;
    the text of a block inside a link (a teaser card wrapped in <a>) is all link text."""
    in_link = {n.mem_id for n in root.css(_IN_LINK)}
    paras: list[list] = []
    cur_id = None
    cur = None
    for node in root.traverse(include_text=True, skip_empty=True):
        if not node.is_text_node:
            if node.tag == "br" and cur is not None:
                cur[1].append("\n")
            continue
        p = node.parent
        link = False
        tag = p.tag
        while tag not in BLOCK_TAGS:
            if tag == "a" or p.mem_id in in_link:
                link = True
            q = p.parent
            if q is None:
                break
            p, tag = q, q.tag
        pid = p.mem_id
        if pid in in_link:
            link = True
        if pid != cur_id:
            cur_id = pid
            cur = [tag, [], 0, p]
            paras.append(cur)
        t = node.text_content
        cur[1].append(t)
        if link:
            cur[2] += len(t)
    return paras


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
        while node is not None and len(chain) < 40:
            chain.append(node.mem_id)
            node = node.parent
        chains.append(chain)
        for a, b in zip(chain, chain[1:]):
            parent[a] = b
        for level, anc in enumerate(chain[1:4]):
            score[anc] = score.get(anc, 0.0) + len(texts[i]) / (1, 2, 3)[level]
    top = max(score, key=score.get)
    total = sum(len(texts[i]) for i in good)
    while True:
        floor = score.get(top, 0.0) / 5
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
    for tag, parts, link_chars, _ in paras:
        text = _SPACE.sub(" ", "".join(parts)).strip() if tag != "pre" else "".join(parts).strip("\n")
        texts.append(text)
        n = len(text)
        if not n or (text[0] == "<" and text[-1] == ">"):  # markup shown as text (a <noscript> pixel)
            cls.append("bad")
            words.append(0)
            continue
        w = text.count(" ") + 1
        if w * 20 < n:  # Chinese, Japanese, Thai: no spaces between words
            w = n // 3
        words.append(w)
        density = link_chars / n
        if tag in HEADINGS and (w < 2 * GOOD_WORDS or tag == "h1"):
            cls.append("heading" if density <= MAX_LINK_DENSITY else "bad")
        elif density > MAX_LINK_DENSITY or (density > 0.25 and w < GOOD_WORDS):
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
    tree.strip_tags(UNWANTED_TAGS, recursive=True)
    body = tree.body
    if body is None:
        return ""
    total = len(body.text(deep=True))
    if total < MIN_ROOT_CHARS:  # a page whose text sits inside a <noscript>, <nav> ... : scripts out only
        tree = LexborHTMLParser(html)
        tree.strip_tags(["script", "style", "template", "head"], recursive=True)
        body = tree.body
        total = len(body.text(deep=True)) if body is not None else 0
    if not total:
        return ""
    levels, boiler = _scan(body)
    root = _container(levels, body, total)
    _prune(boiler, guard_chars=int(0.6 * len(root.text(deep=True))))
    lines = [t for t in _classify(_paragraphs(root), (options or {}).get("region", True), root.mem_id != body.mem_id) if t]
    return "\n".join(lines)
