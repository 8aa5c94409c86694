"""What a class / id name says about an element, for the ``native`` engine: boilerplate,
hidden, an article body, or content. Whole tokens and word parts, never substrings.

A name is split into tokens at white space (``class="a b"`` is two tokens; the id is one
more), and each token into **word parts** at ``-``, ``_``, ``:``, ``.``, ``/``, digits and
camelCase humps (``c-share__button`` -> c, share, button; ``relatedPosts`` -> related,
posts; ``lg:block`` -> lg, block). A token says boilerplate when

* the whole token is in :data:`WHOLE_TOKENS` (short words that are chrome on their own and
  something else inside a compound: ``header`` but not ``entry-header``, ``meta`` but not
  ``meta-title``), or
* one of its parts is in :data:`PARTS` (``sidebar``, ``breadcrumb``, ``share``: so
  ``share`` matches ``post-share`` and ``shareButtons``, never ``shareholder``; ``toc``
  matches ``toc`` and ``js-toc``, never ``protocol``), or
* one of its parts *starts with* a stem of :data:`STEMS` (``comment`` -> ``comments``,
  ``commentlist``; ``subscri`` -> ``subscribe``, ``subscription``), except the words of
  :data:`STEM_EXCEPTIONS` (``commentary`` is an opinion piece, not its comments), or
* its parts hold a phrase of :data:`PHRASES` in order (``read more``, ``author bio``,
  ``cookie banner``: ``cookie`` alone is not chrome: WordPress's Cookie Notice plugin puts
  ``cookies-not-set`` on ``<body>``, and pages about cookies name their content so).

Hidden (:func:`hides`): ``hidden``, ``d-none``, ``sr-only`` ... as whole tokens, unless
another token shows the element again at a breakpoint (Tailwind ``hidden lg:block``,
Bootstrap 4+ ``d-none d-md-block``). Not hidden: ``overflow-hidden`` (clips, shows),
Bootstrap 3's ``hidden-xs`` / ``hidden-sm`` (hidden on phones only: a crawl is read as a
desktop page) and ``visible-*``.

The vocabulary is trafilatura's ``OVERALL_DISCARD_XPATH`` and readability's
``unlikelyCandidates`` (with the consent-banner compounds and CMP vendors of trafilatura's
``_COOKIE_CONSENT_RE``), rewritten as parts: those match substrings of the attribute, which
is what made ``hidden`` prune Tailwind's ``overflow-hidden`` here before.
"""

from __future__ import annotations

import re

# chrome only as a whole token (inside a compound they name content: entry-header, post-date)
WHOLE_TOKENS = frozenset("widget widgets nav menu tags meta extra header date author".split())
# chrome as any word part of a token
PARTS = frozenset("""
    sidebar sidebars widgetarea share shares sharing sharebar sharebuttons sharethis addthis shareaholic social
    socials sociable newsletter newsletters signup breadcrumb breadcrumbs footer masthead navbar navigation
    pagination pager popup modal promo promos sponsor sponsored advert adverts advertisement advertising ad ads
    adsbygoogle adslot adunit dfp teaser teasers tagcloud taglist byline disqus outbrain taboola trending
    mostpopular readmore login copyright toolbar rating ratings donate banner caption credit credits dateline
    timestamp postmeta entrymeta toc overlay offscreen skiplink related recommended recommendations
    cookiebot cookiebanner cookieconsent cookielaw cookienotice onetrust cmplz borlabs didomi usercentrics
    truste iubenda osano termly quantcast""".split())
# not parts: "cookie" (below), "cmp" (Adobe Experience Manager's core components, cmp-text, hold the
# article), "gdpr" (pages about the law): only in the phrases of their banners
# chrome as the beginning of a word part
STEMS = ("comment", "subscri", "recommend", "advertis", "breadcrumb", "paginat", "newsletter", "related")
STEM_EXCEPTIONS = frozenset(("commentary", "commentaries", "commentator", "commentators"))
# chrome as consecutive word parts (several words of one name)
PHRASES = tuple(tuple(p.split()) for p in (
    "widget area", "sign up", "tag list", "author bio", "author info", "about author", "about the author",
    "skip link", "skip to", "most popular", "most read", "read more", "print only", "screen reader", "post meta",
    "entry meta", "article meta", "meta info", "prev next", "nav links", "post navigation", "jump to", "ad container",
    "ad slot", "ad wrapper", "cookie banner", "cookie bar", "cookie consent", "cookie law", "cookie notice",
    "cookie policy", "cookie popup", "cookie modal", "cookie box", "cookie dialog", "cookie message",
    "cookies banner", "cookies bar", "cookies consent", "cookies notice", "notice cookie", "consent banner",
    "consent manager", "consent sdk", "consent modal", "consent popup", "consent dialog", "cc window", "cc banner",
    "moove gdpr", "sp message", "fc consent", "qc cmp", "cky consent"))
# hidden: whole tokens, shown again by a breakpoint-prefixed display token
HIDING_TOKENS = frozenset("hidden hide is-hidden d-none display-none invisible sr-only visually-hidden visuallyhidden "
                          "screen-reader-text screen-reader-only element-invisible".split())
_SHOWN_AGAIN = re.compile(r"^(?:(?:sm|md|lg|xl|2xl|print):(?:block|flex|grid|inline|inline-block|inline-flex|table|"
                          r"contents)|d-(?:sm|md|lg|xl|xxl|print)-(?:block|flex|grid|inline|inline-block|table))$")
# a name that says content: the element is kept even when another part says boilerplate
# ("l-sidebar-fixed l-article-body-segment", Blogger's "widget Blog"), unless a part says one
# of the always-boilerplate words
CONTENT_PARTS = frozenset("content contents article articles body main entry post posts story stories text blog "
                          "prose markdown".split())
ALWAYS_BOILER = frozenset("comment comments commentlist social share shares sharing sharebar sharebuttons sharethis "
                          "addthis newsletter subscribe subscription related recommended outbrain taboola disqus "
                          "promo sponsored advertisement".split())
# article-body containers (trafilatura's BODY_XPATH, learned from CMS themes): phrases of parts
BODY_PHRASES = tuple(tuple(p.split()) for p in (
    "article body", "articlebody", "article content", "articlecontent", "article text", "articletext", "story body",
    "storybody", "story content", "post content", "postcontent", "post body", "postbody", "post entry",
    "entry content", "entry body", "content body", "body text", "bodytext", "field body", "text content",
    "main text", "rich text"))
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
MAX_CACHED_NAMES = 200_000  # distinct "class id" strings remembered across pages (a few MB), then forgotten


def parts(token: str) -> list[str]:
    """The word parts of one class / id token, lowercased (digits and separators split)."""
    return [p.lower() for p in _PARTS.findall(token)]


_PHRASES = {k: frozenset(p for p in PHRASES if len(p) == k) for k in (2, 3)}
_BODY = {k: frozenset(p for p in BODY_PHRASES if len(p) == k) for k in (1, 2, 3)}


_PARTS_OR_SPACE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\s+")


def _spans(name: str) -> tuple[list[str], set, set]:
    """Every word part of a name's tokens, and their runs of two and of three parts (within
    one token: white space between tokens breaks a run)."""
    ps_all, pairs, triples = [], set(), set()
    a = b = None  # the two parts before, in this token
    for p in _PARTS_OR_SPACE.findall(name):
        if p[0] <= " ":
            a = b = None
            continue
        p = p.lower()
        ps_all.append(p)
        if b is not None:
            pairs.add((b, p))
            if a is not None:
                triples.add((a, b, p))
        a, b = b, p
    return ps_all, pairs, triples


def hides(tokens: list[str]) -> bool:
    """A hiding class token (``hidden``, ``d-none``, ``sr-only``) not undone by a breakpoint's display token."""
    return not HIDING_TOKENS.isdisjoint(tokens) and not any(_SHOWN_AGAIN.match(t) for t in tokens)


NAMES: dict = {}  # "class\0id" -> kind (names repeat across elements and pages; read inline by the scan)
HIDDEN, BOILER, NEUTRAL, CONTENT = 2, 1, 0, -1
TALK = 3  # the engine's mark for a BOILER name that names comments


def name_kind(cls: str, ident: str) -> tuple[bool, int, bool]:
    """(an article-body name?, HIDDEN / BOILER / NEUTRAL / CONTENT, a comment's name?) of one
    element's class and id. Comments are boilerplate beside an article and the content of a
    forum thread: the engine tells the two apart by how much of the page they hold."""
    key = f"{cls}\0{ident}"
    kind = NAMES.get(key)
    if kind is not None:
        return kind
    raw = cls.split() + ([ident] if ident else [])
    tokens = [t.lower() for t in raw]
    ps, pairs, triples = _spans(f"{cls} {ident}")
    body = not (_BODY[1].isdisjoint(ps) and _BODY[2].isdisjoint(pairs) and _BODY[3].isdisjoint(triples))
    stems = [p for p in ps if p.startswith(STEMS) and p not in STEM_EXCEPTIONS]
    boiler = bool(stems) or not (WHOLE_TOKENS.isdisjoint(tokens) and PARTS.isdisjoint(ps)
                                 and _PHRASES[2].isdisjoint(pairs) and _PHRASES[3].isdisjoint(triples))
    content = not CONTENT_PARTS.isdisjoint(ps)
    always = not ALWAYS_BOILER.isdisjoint(ps) or any(p.startswith("comment") for p in stems)
    if hides(tokens):
        verdict = HIDDEN
    elif content and not always:
        verdict = CONTENT
    else:
        verdict = BOILER if boiler else NEUTRAL
    if len(NAMES) > MAX_CACHED_NAMES:
        NAMES.clear()
    NAMES[key] = kind = (body, verdict, any(p.startswith("comment") for p in stems))
    return kind
