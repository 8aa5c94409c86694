"""Stage ``pii``: redact e-mail addresses, IP addresses, phone numbers and payment card numbers.

Redaction, not rejection: each match is replaced by its kind's token (``<EMAIL>``,
``<IP_ADDRESS>``, ``<PHONE>``, ``<CARD>``) and nothing else in the text changes. As in
datatrove's ``PIIFormatter`` and Dolma's PII taggers the detectors are patterns, but each
candidate is then checked by what defines the kind, through maintained code where it
exists: ``ipaddress`` for IPs (globally routable ones only, by default), Google's
libphonenumber data through ``phonenumbers`` for phone numbers, the Luhn check and the card
networks' prefixes for cards (the README's ``pii`` section has each kind's rule). Kinds run
in the order email, card, ip, phone, each on the text the previous one left, so a span is
counted once (the digits of a card are never also a phone number).

Phone leniency ``strict_grouping``: at ``valid`` an ISBN-10 ("7-808-53275-4") or a dotted
version ("35.284.12.182") with 10 digits reads as a US number; on the labelled set
(benchmarks/eval_pii_url.py) ``valid`` altered 3 % of the look-alikes, ``strict_grouping``
none, with the same recall.

Speed: phonenumbers is pure Python (about 1 ms per candidate), so no detector sees a
document that a vectorised Arrow regex (RE2, over the whole batch) did not select, and
phone numbers are looked for only in windows around digit runs that could be one.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datacurate.core.coerce import opt
from datacurate.core.schema import TEXT
from datacurate.stages.base import Stage

KINDS = ("email", "card", "ip", "phone")  # the order they run in

EMAIL_RE = (r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}\b")
# candidates (Python re); every one is checked before it is replaced
# 13-19 digits: contiguous, or 3-7 groups of 3-6 digits, all split by spaces or all by dashes
CARD_RE = re.compile(r"(?<!\d)(?:\d{13,19}(?!\d)|(?<!\d-)\d{3,6}(?:-\d{3,6}){2,6}(?!-?\d)"
                     r"|(?<!\d )\d{3,6}(?: \d{3,6}){2,6}(?! ?\d))")
CARD_ISSUER = re.compile(r"4|5[0-9]|6|222[1-9]|22[3-9]|2[3-6]|27[01]|2720|3[0456789]")
IPV4_RE = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w-]|\.\d)")
IPV6_RE = re.compile(r"(?<![\w:.])[0-9A-Fa-f.:]*:[0-9A-Fa-f.:]*:[0-9A-Fa-f.:]*")
PHONE_RE = re.compile(r"\d(?:[\s().\-/]{0,3}\d){6,}")  # a run of >= 7 digits, as separators allow
PHONE_CONTEXT = 12  # characters on each side of a digit run given to the matcher (for +, ( and its own checks)
# batch pre-filters (RE2): rows that no match can be in are never looked at
PREFILTER = {
    "card": r"\d(?:[ -]?\d){12}",
    "ip": r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]*:[0-9A-Fa-f]*:",
    "phone": PHONE_RE.pattern,
}
GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")


@dataclass
class EmailConfig:
    enabled: bool = opt(True, "redact e-mail addresses")
    replacement: str = opt("<EMAIL>", "what each one becomes")


@dataclass
class IpConfig:
    enabled: bool = opt(True, "redact IPv4 and IPv6 addresses")
    replacement: str = opt("<IP_ADDRESS>", "what each one becomes")
    only_global: bool = opt(True, "redact globally routable addresses only; false: every address that parses")


@dataclass
class PhoneConfig:
    enabled: bool = opt(True, "redact phone numbers")
    replacement: str = opt("<PHONE>", "what each one becomes")
    region: str = opt("US", "ISO 3166 region of numbers written without +country code")
    leniency: Literal["possible", "valid", "strict_grouping", "exact_grouping"] = opt(
        "strict_grouping", "phonenumbers' Leniency; strict_grouping: a valid number in its own digit groups (or none)")


    def validate(self) -> None:
        import phonenumbers

        if self.region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"unknown region {self.region!r} (an ISO 3166 code phonenumbers knows, e.g. US, GB, DE)")


@dataclass
class CardConfig:
    enabled: bool = opt(True, "redact payment card numbers")
    replacement: str = opt("<CARD>", "what each one becomes")
    known_issuers_only: bool = opt(True, "also require a card network's number prefix (Visa 4, Mastercard 51-55 ...)")


@dataclass
class PiiConfig:
    email: EmailConfig = field(default_factory=EmailConfig)
    card: CardConfig = field(default_factory=CardConfig)
    ip: IpConfig = field(default_factory=IpConfig)
    phone: PhoneConfig = field(default_factory=PhoneConfig)


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        x = ord(c) - 48
        if i % 2:
            x = x * 2 - 9 if x > 4 else x * 2
        total += x
    return total % 10 == 0


def card_spans(text: str, known_issuers_only: bool = True) -> list[tuple[int, int]]:
    out = []
    for m in CARD_RE.finditer(text):
        digits = m.group().replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and (not known_issuers_only or CARD_ISSUER.match(digits)):
            out.append(m.span())
    return out


def _is_public(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not addr.is_global or addr.is_multicast:
        return False
    if addr.version == 6 and addr.ipv4_mapped is None:
        return addr in GLOBAL_UNICAST
    return True


def ip_spans(text: str, only_global: bool = True) -> list[tuple[int, int]]:
    out = []
    for m in IPV4_RE.finditer(text):
        try:
            addr = ipaddress.IPv4Address(m.group())
        except ValueError:  # an octet over 255, a leading zero
            continue
        if not only_global or _is_public(addr):
            out.append(m.span())
    for m in IPV6_RE.finditer(text):
        start, end = m.span()
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            continue
        s = m.group().rstrip(".")
        if s.endswith(":") and not s.endswith("::"):  # "... at 2001:db8::1: it failed"
            s = s[:-1]
        try:
            addr = ipaddress.IPv6Address(s)
        except ValueError:
            continue
        if not only_global or _is_public(addr):
            out.append((start, start + len(s)))
    return sorted(out)


class PhoneFinder:
    def __init__(self, cfg: PhoneConfig):
        import phonenumbers

        self.matcher = phonenumbers.PhoneNumberMatcher
        self.region = cfg.region
        self.leniency = getattr(phonenumbers.Leniency, cfg.leniency.upper())

    def __call__(self, text: str) -> list[tuple[int, int]]:
        windows: list[list[int]] = []
        for m in PHONE_RE.finditer(text):
            a, b = max(0, m.start() - PHONE_CONTEXT), min(len(text), m.end() + PHONE_CONTEXT)
            if windows and a <= windows[-1][1]:
                windows[-1][1] = b
            else:
                windows.append([a, b])
        out = []
        for a, b in windows:
            for pm in self.matcher(text[a:b], self.region, leniency=self.leniency):
                # the matcher takes an opening parenthesis with the number, "(+44 20 ...)" -> "(+44 20 ...":
                # leave one that is not closed inside the number to the text
                unclosed = pm.raw_string.startswith("(") and ")" not in pm.raw_string
                out.append((a + pm.start + unclosed, a + pm.end))
        return out


def redact(text: pa.Array, prefilter: str, find: Callable[[str], list],
           replacement: str) -> tuple[pa.Array, np.ndarray]:
    """Replace every span ``find`` returns by ``replacement`` in the rows ``prefilter``
    (an RE2 pattern) matches; -> (new text, matches per row)."""
    counts = np.zeros(len(text), dtype=np.int32)
    cand = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring_regex(text, prefilter), False)))
    if not len(cand):
        return text, counts
    changed, new = [], []
    for i, s in zip(cand, text.take(pa.array(cand)).to_pylist()):
        spans = find(s)
        if not spans:
            continue
        parts, pos = [], 0
        for a, b in spans:
            if a < pos:  # overlapping candidates: the first one wins
                continue
            parts += [s[pos:a], replacement]
            pos = b
            counts[i] += 1
        changed.append(i)
        new.append("".join(parts) + s[pos:])
    if not changed:
        return text, counts
    mask = np.zeros(len(text), dtype=bool)
    mask[changed] = True
    return pc.replace_with_mask(text, pa.array(mask), pa.array(new, text.type)), counts


class Pii(Stage):
    name = "pii"
    Config = PiiConfig
    columns = {f"pii_{k}": pa.int32() for k in KINDS}

    @classmethod
    def rewrites_text(cls, config: PiiConfig) -> bool:
        return any(getattr(config, k).enabled for k in KINDS)

    def __init__(self, config: PiiConfig | None = None, **params):
        super().__init__(config, **params)
        cfg = self.config
        self.finders = {
            "card": lambda s: card_spans(s, cfg.card.known_issuers_only),
            "ip": lambda s: ip_spans(s, cfg.ip.only_global),
        }
        if cfg.phone.enabled:
            self.finders["phone"] = PhoneFinder(cfg.phone)

    def metrics(self, table: pa.Table) -> dict:
        out = {}
        for k in KINDS:
            col = table.column(f"pii_{k}")
            if col.null_count < len(col):
                out[k] = {"matches": int(pc.sum(col).as_py() or 0),
                          "docs": int(pc.sum(pc.greater(col, 0)).as_py() or 0)}
        return {"pii": out} if out else {}

    @classmethod
    def report_section(cls, view) -> str:
        rows = [[kind, v.get("matches", 0), v.get("docs", 0)] for kind, v in view.metrics.get("pii", {}).items()]
        if not rows:
            return ""
        return view.draw.section("PII redacted (in the documents the pii stage saw)",
                                 view.draw.hbars("pii: matches replaced, by kind", [(k, [n]) for k, n, _ in rows],
                                                 ["matches"]),
                                 view.draw.table(["kind", "matches replaced", "documents"], rows))

    def annotate(self, table: pa.Table):
        text = table.column(TEXT).combine_chunks()
        n = len(text)
        cols = {}
        for kind in KINDS:
            cfg = getattr(self.config, kind)
            if not cfg.enabled:
                cols[f"pii_{kind}"] = pa.nulls(n, pa.int32())
                continue
            if kind == "email":  # needs no check beyond its pattern: all in RE2
                counts = pc.fill_null(pc.count_substring_regex(text, EMAIL_RE), 0).to_numpy(zero_copy_only=False)
                if counts.any():
                    text = pc.replace_substring_regex(text, EMAIL_RE, cfg.replacement.replace("\\", "\\\\"))
            else:
                text, counts = redact(text, PREFILTER[kind], self.finders[kind], cfg.replacement)
            cols[f"pii_{kind}"] = pa.array(counts, pa.int32())
        cols[TEXT] = text
        return cols, None

