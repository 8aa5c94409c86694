"""The ``native`` engine's passes over lexbor's DOM (selectolax), each linear in the page.

A page is hostile input: 5,000 nested ``<div class="sidebar">`` or ``<span>`` must cost
5,000 steps, not 12.5 million. Every "which matched element is above this one?" question
goes through :class:`Nearest`, whose walks up the tree are memoised (each element is
stepped over once per index, however deep the nest), and text lengths of nested elements
come from one walk over the text nodes (:class:`Subtrees`) once more than
:data:`MAX_NESTED_DIRECT` of them nest; below that, lexbor's own ``text()`` (C) is cheaper.
Each pass counts its steps (``work``), so the tests assert linear growth without a clock.
"""

from __future__ import annotations

import re

# Up to this many matched elements that hold other matched elements are measured one by one
# with lexbor's text() (C; each call reads its subtree, so at most this many passes over
# the page); past it, one Python walk over the text nodes measures them all.
MAX_NESTED_DIRECT = 16

# A text node climbs this many inline levels to its block directly; deeper, through a memo.
MAX_DIRECT_CLIMB = 8

_TEMPLATE_TAG = re.compile(r"<(/?)template\b([^>]*)>", re.I)
_SHADOW_ATTR = re.compile(r"\bshadowroot(?:mode)?\s*=", re.I)
_NOFRAMES_TAG = re.compile(r"<(/?)noframes\b[^>]*>", re.I)
_FRAMESET_TAG = re.compile(r"</?frameset\b[^>]*>", re.I)


PREPARE = "template[shadowrootmode], template[shadowroot], noframes"  # what prepare() rewrites, found by lexbor


def prepare(html: str) -> str:
    """The page as a reader sees it. A declarative shadow root (``<template shadowrootmode>``)
    is rendered content, which lexbor keeps in a template fragment no walk reaches: it becomes
    a ``<div>``. ``<noframes>`` holds raw text for browsers without frames (old sites' whole
    text): it becomes a ``<div>`` and ``<frameset>`` tags go, so the parser reads a body.
    Called only for a page where lexbor found one of them (:data:`PREPARE`)."""
    if "shadowroot" in html:  # shadowrootmode= (and Chrome's older shadowroot=), as pages write it
        html = _open_shadow_roots(html)
    if "noframes" in html or "NOFRAMES" in html or "Noframes" in html:
        html = _FRAMESET_TAG.sub("", _NOFRAMES_TAG.sub(lambda m: "</div>" if m.group(1) else "<div>", html))
    return html


def _open_shadow_roots(html: str) -> str:
    out, last, stack = [], 0, []  # stack: is each open <template> a shadow root?
    for m in _TEMPLATE_TAG.finditer(html):
        if m.group(1):
            if stack and stack.pop():
                out += [html[last:m.start()], "</div>"]
                last = m.end()
        else:
            shadow = _SHADOW_ATTR.search(m.group(2)) is not None
            stack.append(shadow)
            if shadow:
                out += [html[last:m.start()], "<div data-shadowroot>"]
                last = m.end()
    return "".join(out) + html[last:]


class Nearest:
    """For any node: the nearest of ``listed`` (element ids) at or above it, None when none.
    Walks up are memoised with path compression, so answering for every node of a page
    steps over each element once."""

    def __init__(self, listed: set):
        self.listed, self.memo, self.steps = listed, {}, 0

    def find(self, node):
        path, found, memo = [], None, self.memo
        while node is not None:
            i = node.mem_id
            if i in self.listed:
                found = i
                break
            if i in memo:
                found = memo[i]
                break
            path.append(i)
            node = node.parent
        self.steps += len(path)
        for i in path:
            memo[i] = found
        return found


class Subtrees:
    """Text lengths of ``nodes`` (document order), as ``len(node.text(deep=True))``, and which
    of them sits inside which (``above[k]``: the id of the nearest listed ancestor). A node
    holding no other listed node is measured by lexbor (such nodes are disjoint: one pass over
    the page in all); one holding others too, up to :data:`MAX_NESTED_DIRECT` of them, then
    one walk measures the rest."""

    def __init__(self, nodes: list, root):
        self.nodes, self.root = nodes, root
        self.ids = [n.mem_id for n in nodes]
        self.index = Nearest(set(self.ids))
        self.above = [self.index.find(n.parent) for n in nodes]
        self.outer = {a for a in self.above if a is not None}  # ids holding another listed node
        self._walked: dict | None = None
        self._direct_outer = 0
        self.work = 0

    def chars(self, k: int) -> int:
        if self._walked is not None:
            return self._walked[self.ids[k]]
        if self.ids[k] in self.outer:
            self._direct_outer += 1
            if self._direct_outer > MAX_NESTED_DIRECT:
                self._walked = self._walk()
                return self._walked[self.ids[k]]
        text = self.nodes[k].text(deep=True)
        self.work += len(text)  # lexbor reads the subtree's text once
        return len(text)

    def _walk(self) -> dict:
        """One pass over the root's nodes: each text node's length goes to its nearest listed
        ancestor, then each listed node's total to the one above it (reverse document order)."""
        own = dict.fromkeys(self.ids, 0)
        above = dict(zip(self.ids, self.above))
        order = []
        for t in self.root.traverse(include_text=True):
            self.work += 1
            if t.tag == "-text":
                h = self.index.find(t.parent)
                if h is not None:
                    own[h] += len(t.text_content or "")
            elif t.mem_id in own:
                order.append(t.mem_id)
        for i in reversed(order):
            if above[i] is not None:
                own[above[i]] += own[i]
        return own

    def steps(self) -> int:
        return self.work + self.index.steps


def prune(hits: list, guards: list[int], root) -> int:
    """Unlink the boilerplate subtrees ``hits`` (document order), outermost only (a nested
    match goes with its ancestor), except one holding more than its ``guards`` characters of
    text (a wrapper whose name happens to match, an ancestor of the article). Returns the
    steps taken (linear in the page)."""
    if not hits:
        return 0
    sub = Subtrees(hits, root)
    dead, drop = set(), []
    for k, n in enumerate(hits):
        a = sub.above[k]
        if a is not None and a in dead:  # inside a subtree already unlinked
            dead.add(sub.ids[k])
        elif sub.chars(k) <= guards[k]:
            dead.add(sub.ids[k])
            drop.append(n)
    for n in drop:  # disjoint subtrees, unlinked after every length was read
        n.decompose()
    return sub.steps()


def common_ancestor(nodes: list):
    """The deepest element above or at every node (memoised walks: linear in the tree)."""
    depth_of, chain, n = {}, [], nodes[0]
    while n is not None:
        chain.append(n)
        n = n.parent
    chain.reverse()
    for d, c in enumerate(chain):
        depth_of[c.mem_id] = d
    best, met = len(chain) - 1, {}
    for n in nodes[1:]:
        path = []
        while n is not None and n.mem_id not in depth_of and n.mem_id not in met:
            path.append(n.mem_id)
            n = n.parent
        d = -1 if n is None else depth_of.get(n.mem_id, met.get(n.mem_id))
        for i in path:
            met[i] = d
        best = min(best, d)
    return chain[max(best, 0)]


class Paragraphs:
    """[tag, text parts, link chars, block node] of each run of text under one block
    element, in order; the text of a block inside a link (a teaser card wrapped in <a>) is
    all link text. ``<br>`` adds :data:`BR` (a line break inside the paragraph). Each text
    node finds its block element through a memo of (block, inside a link?) per inline
    element, so deep inline nests cost linear time."""

    BR = "\x00"  # lexbor turns a NUL in a page into U+FFFD: never page text

    def __init__(self, block_tags: frozenset, in_link_selector: str):
        self.block_tags, self.in_link_selector = block_tags, in_link_selector
        self.steps = 0

    def __call__(self, root) -> list[list]:
        in_link = {n.mem_id for n in root.css(self.in_link_selector)}
        blocks = self.block_tags
        memo: dict = {}  # inline element id -> (its block element, a link between them?)
        paras: list[list] = []
        cur_id, cur = None, None
        steps = 0
        for node in root.traverse(include_text=True, skip_empty=True):
            steps += 1
            if node.tag != "-text":
                if node.tag == "br" and cur is not None:
                    cur[1].append(self.BR)
                continue
            p, link, up = node.parent, False, 0
            while p.tag not in blocks and up < MAX_DIRECT_CLIMB:  # most text sits within a few levels of its block
                if p.tag == "a" or p.mem_id in in_link:
                    link = True
                p, up = p.parent, up + 1
                if p is None:
                    break
            steps += up
            if p is None:  # text outside any block (a detached fragment)
                continue
            if p.tag not in blocks:  # deeper: through the memo, so a deep nest is climbed once
                got = memo.get(p.mem_id)
                if got is None:
                    got = self._climb(p, blocks, memo, in_link)
                    steps += got[2]
                p, link = got[0], link or got[1]
                if p is None:
                    continue
            pid = p.mem_id
            if pid in in_link:
                link = True
            if pid != cur_id:
                cur_id = pid
                cur = [p.tag, [], 0, p]
                paras.append(cur)
            t = node.text_content
            cur[1].append(t)
            if link:
                cur[2] += len(t)
        self.steps += steps
        return paras

    @staticmethod
    def _climb(p, blocks: frozenset, memo: dict, in_link: set) -> tuple:
        """(block element, a link between, steps) of inline element ``p``; memoises every
        inline element passed (with path compression), so each is climbed past once."""
        path, link, block = [], False, None
        while p is not None:
            if p.tag in blocks:
                block = p
                break
            got = memo.get(p.mem_id)
            if got is not None:
                block, link = got[0], got[1]
                break
            path.append((p.mem_id, p.tag == "a" or p.mem_id in in_link))
            p = p.parent
        for i, is_link in reversed(path):  # each inline element: a link at or above it, up to its block
            link = link or is_link
            memo[i] = (block, link)
        return block, link, len(path)
