"""The ``native`` engine on the page shapes that used to empty or mangle a page (issue 49):
class / id names as whole tokens and word parts, tables in figures, <br>, hidden content,
strings that are no text, cookie banners, shadow roots, <noframes>, and deep nests that must
cost linear work (counted steps, never a clock)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from selectolax.lexbor import LexborHTMLParser

from datacurate.text import native, native_dom
from datacurate.text.native_names import BOILER, CONTENT, HIDDEN, NEUTRAL, name_kind

PROSE = ["The harbour commission met on Tuesday and approved the dredging plan after three hours of debate.",
         "Fishermen had asked for the channel to be deepened since the storm of last winter filled it with sand.",
         "Work starts in April and should be finished before the summer season brings the ferries back to town.",
         "The mayor said the cost would be shared between the port authority, the region and the national fund."]


def para(i: int) -> str:
    return f"<p>{PROSE[i % len(PROSE)]}</p>"


def page(inner: str, head: str = "") -> str:
    return f"<html><head><title>t</title>{head}</head><body>{inner}</body></html>"


@pytest.mark.parametrize("name,kind", [
    ("overflow-hidden", NEUTRAL), ("hidden lg:block", NEUTRAL), ("d-none d-md-block", NEUTRAL),
    ("hidden-xs", NEUTRAL), ("hidden", HIDDEN), ("d-none", HIDDEN), ("sr-only", HIDDEN), ("content hidden", HIDDEN),
    ("toc", BOILER), ("js-toc", BOILER), ("protocol", NEUTRAL), ("share", BOILER), ("shareButtons", BOILER),
    ("post-share", BOILER), ("shareholder", NEUTRAL), ("shareholders-letter", NEUTRAL), ("comments", BOILER),
    ("commentary", NEUTRAL), ("relatedPosts", BOILER), ("cookie-notice", BOILER), ("cookies-not-set", NEUTRAL),
    ("CybotCookiebotDialog", BOILER), ("onetrust-banner-sdk", BOILER), ("cmp-text", CONTENT),
    ("entry-content", CONTENT), ("entry-header", CONTENT), ("header", BOILER), ("widget Blog", CONTENT),
    ("l-sidebar-fixed l-article-body-segment", CONTENT), ("read-more", BOILER), ("readMore", BOILER),
    ("read more", NEUTRAL), ("thread", NEUTRAL), ("loading", NEUTRAL), ("adsbygoogle", BOILER)])
def test_names_are_whole_tokens_and_word_parts(name, kind):
    assert name_kind(name, "")[1] == kind


def test_article_body_names():
    assert name_kind("article__body", "")[0] and name_kind("", "articleBody")[0] and name_kind("entry-content", "")[0]
    assert not name_kind("article-list", "")[0] and not name_kind("body-wrapper", "")[0]


def test_tailwind_main_of_overflow_hidden_sections_is_kept():
    """Three ``overflow-hidden`` sections in a <main>: all kept (before: an empty page)."""
    sections = "".join(f'<section class="relative overflow-hidden rounded-lg">{para(i)}{para(i + 1)}</section>'
                       for i in range(3))
    wide = "<p>On wide screens this column adds the timetable of the works and the names of the contractors.</p>"
    html = page(f'<main class="mx-auto max-w-3xl">{sections}'
                f'<div class="hidden lg:block">{wide}</div><div class="hidden">Menu Close Open</div></main>')
    out = native.native_text(html)
    assert out.count("harbour commission") == 1 and out.count("Fishermen had asked") == 2
    assert out.count("Work starts in April") == 2 and "mayor said" in out
    assert "timetable of the works" in out  # hidden at the base breakpoint, shown from lg: a desktop reads it
    assert "Menu Close" not in out


def test_bootstrap_responsive_hiding_keeps_desktop_text():
    """Bootstrap 3's ``hidden-xs`` hides on phones only; a crawl is read as a desktop page."""
    html = page('<div class="container"><div class="row"><div class="col-md-8 hidden-xs">'
                + "".join(para(i) for i in range(4)) + '</div><div class="col-md-4 d-none">Sign in Register</div>'
                "</div></div>")
    out = native.native_text(html)
    assert "harbour commission" in out and "mayor said" in out and "Sign in" not in out


def test_toc_and_share_do_not_match_inside_words():
    html = page('<div class="protocol-notes">' + para(0) + para(1) + "</div>"
                '<div class="shareholder-report">' + para(2) + para(3) + "</div>"
                '<div class="toc"><p>Contents: Introduction, Methods, Results, Discussion and more.</p></div>'
                '<div class="share"><p>Share this story with your friends on every network you use.</p></div>')
    out = native.native_text(html)
    assert all(p in out for p in PROSE)
    assert "Contents:" not in out and "Share this story" not in out


def test_table_in_a_wordpress_figure_is_kept_and_an_image_figure_goes():
    html = page('<article class="post">' + para(0) + para(1)
                + '<figure class="wp-block-table"><table><thead><tr><th>Port</th><th>Depth (m)</th></tr></thead>'
                "<tbody><tr><td>North basin</td><td>7.5</td></tr><tr><td>South basin</td><td>6.0</td></tr>"
                "</tbody></table></figure>" + para(2)
                + '<figure class="wp-block-image"><img src="a.jpg"><figcaption>Photo: the harbour at dawn '
                "(Agency)</figcaption></figure>" + para(3) + "</article>")
    out = native.native_text(html)
    assert "North basin" in out and "7.5" in out and "South basin" in out
    assert "Photo: the harbour" not in out


def test_br_is_a_line_break():
    poem = ("<p>Whose woods these are I think I know.<br>His house is in the village though;<br>"
            "He will not see me stopping here<br>To watch his woods fill up with snow.</p>")
    address = "<address>Harbour Commission<br>12 Quay Street<br>Portsmouth PO1 3AX</address>"
    out = native.native_text(page("<article>" + para(0) + poem + para(1) + address + para(2) + "</article>"))
    assert "Whose woods these are I think I know.\nHis house is in the village though;\n" in out
    assert "Harbour Commission\n12 Quay Street\nPortsmouth PO1 3AX" in out


@pytest.mark.parametrize("attr", ['hidden', 'style="display:none"', 'aria-hidden="true"', 'class="content hidden"'])
def test_hidden_is_dropped_even_when_named_content(attr):
    CONTENT_CLASS = 'class="content" '
    html = page('<div class="article-content">' + "".join(para(i) for i in range(3))
                + f'<div {attr if attr.startswith("class") else CONTENT_CLASS + attr}><p>Subscriber-only sequel: this paragraph is hidden from readers '
                "until they log in, and should never reach the corpus.</p></div></div>")
    out = native.native_text(html)
    assert "harbour commission" in out and "Subscriber-only" not in out


def test_a_page_hidden_until_its_scripts_run_is_not_emptied():
    """A hidden element holding nearly the whole page (shown by its scripts) stays."""
    html = page('<div id="app" style="display:none">' + "".join(para(i) for i in range(4)) + "</div>")
    assert "harbour commission" in native.native_text(html)


def test_base64_and_hashes_are_not_prose():
    blob = base64.b64encode(hashlib.sha512(b"x").digest() * 40).decode()  # ~3,400 characters, no space
    lines = "\n".join(blob[i:i + 76] for i in range(0, len(blob), 76))  # wrapped as MIME wraps it
    html = page("<article>" + para(0) + f"<p>{blob}</p>" + para(1) + f"<div>{lines}</div>" + para(2) + "</article>")
    out = native.native_text(html)
    assert "harbour commission" in out and "Fishermen had asked" in out and "Work starts in April" in out
    assert blob[:40] not in out and blob[76:116] not in out


def test_cjk_prose_still_counts_as_words():
    zh = "港口委员会星期二开会，经过三个小时的辩论后批准了疏浚计划。渔民们自去年冬天的风暴以来一直要求加深航道。"
    out = native.native_text(page("<article>" + "".join(f"<p>{zh}</p>" for _ in range(3)) + "</article>"))
    assert out.count("港口委员会") == 3


def test_cookie_banners_are_dropped():
    html = page('<div class="notice-bar"><p>We use cookies to improve your experience on our website. By '
                "continuing to browse, you agree to our use of cookies.</p></div>"
                '<div id="onetrust-banner-sdk"><p>This site stores data such as identifiers to enable '
                "essential site functionality, marketing and analytics.</p></div>"
                "<article>" + "".join(para(i) for i in range(4)) + "</article>")
    out = native.native_text(html)
    assert "harbour commission" in out and "We use cookies" not in out and "identifiers" not in out


def test_a_page_about_cookies_keeps_its_text():
    html = page('<article class="cookies-not-set">' + "".join(
        f"<p>{t}</p>" for t in [
            "The regulator fined three publishers this week for setting advertising cookies before visitors had "
            "given their consent, the first fines under the new rules.",
            "Publishers argue that the banners asking readers to accept cookies have made the web harder to use, "
            "while privacy groups say the rules are still not enforced often enough."]) + "</article>")
    out = native.native_text(html)
    assert "fined three publishers" in out and "accept cookies" in out


def test_declarative_shadow_dom_and_noframes_are_content():
    shadow = page('<blog-post><template shadowrootmode="open"><article>' + "".join(para(i) for i in range(3))
                  + "</article></template></blog-post>")
    assert "harbour commission" in native.native_text(shadow)
    frames = ('<html><head><title>t</title></head><frameset cols="20%,80%"><frame src="menu.html">'
              '<frame src="main.html"><noframes><body>' + "".join(para(i) for i in range(4))
              + "</body></noframes></frameset></html>")
    out = native.native_text(frames)
    assert "harbour commission" in out and "mayor said" in out


def nested_wrappers(depth: int) -> str:
    """``depth`` nested boilerplate-named wrappers, each with a paragraph, around an article:
    every outer one holds most of the text (a wrapper kept by the guard)."""
    inner = "<article>" + "".join(para(i) for i in range(8)) + "</article>"
    return page('<div class="has-sidebar"><p>x</p>' * depth + inner + "</div>" * depth)


def prune_work(html: str) -> int:
    tree = LexborHTMLParser(html)
    body = tree.body
    levels, boiler, hidden = native.scan(body)
    return native_dom.prune(boiler, [int(0.6 * len(body.text(deep=True)))] * len(boiler), body)


def test_pruning_is_linear_on_nested_matches():
    """Steps counted, not time: doubling the nest at most ~doubles the work (quadratic: 4x)."""
    small, large = prune_work(nested_wrappers(400)), prune_work(nested_wrappers(800))
    assert large <= 2.3 * small, (small, large)
    assert "harbour commission" in native.native_text(nested_wrappers(800))


def test_paragraph_walk_is_linear_on_deep_inline_nests():
    def steps(depth: int) -> int:
        html = page("<p>" + "<span>word " * depth + "</span>" * depth + "</p>" + para(0))
        walk = native_dom.Paragraphs(native.BLOCK_TAGS, "a p")
        paras = walk(LexborHTMLParser(html).body)
        assert paras[0][1].count("word ") == depth
        return walk.steps
    assert steps(4000) <= 2.3 * steps(2000)


def test_nested_landmarks_and_common_ancestor_are_linear():
    """Thousands of nested <article> (each a landmark candidate): the right container, found."""
    html = page("<article>" * 3000 + "".join(para(i) for i in range(4)) + "</article>" * 3000)
    assert "mayor said" in native.native_text(html)
    tree = LexborHTMLParser(html)
    arts = tree.css("article")
    assert native_dom.common_ancestor(arts).mem_id == arts[0].mem_id


def test_subtree_lengths_by_walk_equal_lexbor_text():
    """The walk (many nested matches) measures exactly what lexbor's text() measures."""
    tree = LexborHTMLParser(nested_wrappers(40))
    nodes = tree.css("div.has-sidebar")
    sub = native_dom.Subtrees(nodes, tree.body)
    walked = [sub.chars(k) for k in range(len(nodes))]
    assert sub._walked is not None
    assert walked == [len(n.text(deep=True)) for n in nodes]


def test_an_aside_holding_the_article_is_kept_and_a_sidebar_aside_goes():
    """rnz.de put its article in ``<aside class="nfy-pa nfy-pa-direct-content">``; a big
    ``<aside class="sidebar widget-area">`` is still chrome."""
    article = "".join(para(i) for i in range(4))
    kept = native.native_text(page(f'<main><aside class="nfy-pa-direct-content">{article}</aside>'
                                   '<aside class="related"><p>More news from the region today.</p></aside></main>'))
    assert "harbour commission" in kept and "More news" not in kept
    sidebar = ('<aside class="sidebar widget-area">' + "".join(
        f"<p>Our shop ships blankets and cushions to every country in Europe within {i + 2} days.</p>"
        for i in range(6)) + "</aside>")
    gone = native.native_text(page(f'<div class="product">{article}</div>{sidebar}'))
    assert "harbour commission" in gone and "ships blankets" not in gone
