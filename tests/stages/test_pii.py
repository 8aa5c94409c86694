"""Stage ``pii``: each kind redacted, each look-alike left alone, byte for byte."""

import pyarrow as pa
import pytest

from datacurate.configs.pipeline import ConfigError, load_config
from datacurate.stages.pii import Pii
from datacurate.stages.pii import KINDS, card_spans, ip_spans, luhn_ok

TOKENS = {"email": "<EMAIL>", "ip": "<IP_ADDRESS>", "phone": "<PHONE>", "card": "<CARD>"}


@pytest.fixture(scope="module")
def stage():
    return Pii()


def run(stage, texts):
    out = stage(pa.table({"text": pa.array(texts, pa.large_string())}))
    return out.column("text").to_pylist(), {k: out.column(f"pii_{k}").to_pylist() for k in KINDS}


def one(stage, text):
    texts, counts = run(stage, [text])
    return texts[0], {k: v[0] for k, v in counts.items()}


@pytest.mark.parametrize("kind, value", [
    ("email", "jane.doe+news@mail.example.co.uk"),
    ("email", "J_Smith@Example.ORG"),
    ("ip", "8.8.8.8"),
    ("ip", "142.250.74.46"),
    ("ip", "2606:4700:4700::1111"),
    ("ip", "2a00:1450:4007:80e::200e"),
    ("phone", "+1 415-555-2671"),
    ("phone", "(212) 555-0187"),
    ("phone", "415.555.2671"),
    ("phone", "+44 20 7946 0958"),
    ("phone", "+49 30 901820"),
    ("phone", "+33 1 42 68 53 00"),
    ("card", "4111 1111 1111 1111"),
    ("card", "5500-0000-0000-0004"),
    ("card", "378282246310005"),
    ("card", "6011 0009 9013 9424"),
    ("card", "3530 1113 3330 0000"),
    ("card", "4222222222222"),
    ("card", "6250 9470 0000 0000 019"),  # 19 digits
])
def test_each_kind_is_redacted_and_nothing_else_changes(stage, kind, value):
    before, after = "Write to the office, or use ", ", before Friday.\nThanks (really)."
    text, counts = one(stage, before + value + after)
    assert text == before + TOKENS[kind] + after
    assert counts == {k: int(k == kind) for k in KINDS}


@pytest.mark.parametrize("text", [
    "Release 1.2.300.4 fixes the installer; 10.0.300.1 too.",  # version strings, an octet over 255
    "Version 1.2.3.4.5 is out.",  # five parts: not an address
    "ISBN 978-3-16-148410-0 and ISBN 9783161484100, ISBN 0-306-40615-2.",
    "It happened on 2023-10-12, or 12/10/2023, or 12.10.2023, at 12:30:45.",
    "It costs $1,234.56 (or 1.234,56 EUR), 12,345,678 in total.",
    "Order 4111 1111 1111 1112 and 1234567812345678 fail the Luhn check.",
    "The war lasted from 1990-2000, then 1939-1945; pages 100-200 and 12-15.",
    "Population 8,336,817 in 2020; 2,147,483,647 is the largest int.",
    "Private hosts 10.0.0.1, 192.168.1.20, 127.0.0.1, 169.254.1.1, 172.16.5.4, 100.64.0.1.",
    "Documentation 192.0.2.10, 198.51.100.7, 203.0.113.99, 2001:db8::1, ::1, fe80::1%eth0, 224.0.0.251.",
    "In C++ std::vector and Foo::Bar, A::B, dead::beef; the ratio 3:2:1.",
    "A handle @jane and an address user@localhost and a@b.c are not e-mail addresses.",
    "Call 555-0123 (no area code) or ext. 4412.",
    "Coordinates 48.8566, 2.3522 and 1e10, 0x7fffffff, sha 3f786850e387550fdab836ed7e6dc881de23001b.",
])
def test_look_alikes_are_left_alone(stage, text):
    out, counts = one(stage, text)
    assert out == text
    assert counts == {k: 0 for k in KINDS}


def test_several_kinds_in_one_document_and_counts(stage):
    texts, counts = run(stage, [
        "Mail a@example.com, b@example.org; ring +1 415-555-2671. Card 4111-1111-1111-1111 from 8.8.4.4.",
        "nothing here",
        "",
    ])
    assert texts[0] == "Mail <EMAIL>, <EMAIL>; ring <PHONE>. Card <CARD> from <IP_ADDRESS>."
    assert texts[1:] == ["nothing here", ""]
    assert counts == {"email": [2, 0, 0], "card": [1, 0, 0], "ip": [1, 0, 0], "phone": [1, 0, 0]}


def test_unicode_text_around_matches_is_kept_byte_for_byte(stage):
    text = "Café — contact: zoe@example.com ✉ or +33 1 42 68 53 00 😀\r\n\ttab \u2028 end"
    out, _ = one(stage, text)
    assert out == "Café — contact: <EMAIL> ✉ or <PHONE> 😀\r\n\ttab \u2028 end"


def test_replacements_and_kinds_are_configurable():
    st = Pii(email={"replacement": "[email]"}, phone={"enabled": False}, ip={"replacement": "\\1 <ip>"})
    texts, counts = run(st, ["x@example.com +1 415-555-2671 8.8.8.8"])
    assert texts == ["[email] +1 415-555-2671 \\1 <ip>"]
    assert counts["phone"] == [None] and counts["email"] == [1]
    assert not Pii.rewrites_text(Pii(email={"enabled": False}, ip={"enabled": False}, phone={"enabled": False},
                                     card={"enabled": False}).config)


def test_all_addresses_with_only_global_off():
    st = Pii(ip={"only_global": False})
    text, counts = one(st, "hosts 10.0.0.1 and ::1 and 2001:db8::1, not 1.2.300.4")
    assert text == "hosts <IP_ADDRESS> and <IP_ADDRESS> and <IP_ADDRESS>, not 1.2.300.4" and counts["ip"] == 3


def test_phone_region_for_national_numbers():
    text = "Ring 020 7946 0958 or 030 901820."
    assert one(Pii(), text)[0] == text  # US numbers only in national form
    assert one(Pii(phone={"region": "GB"}), text)[0] == "Ring <PHONE> or 030 901820."


def test_card_rules():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert card_spans("9783161484100") == []  # an ISBN-13 has no card network's prefix
    assert card_spans("4111 1111-1111 1111") == []  # mixed separators
    assert card_spans("41 11 11 11 11 11 11 11") == []  # groups of two
    assert card_spans("4111 1111 1111 1111 1111 1") == []  # longer than 19 digits
    # Luhn-valid, but 7 is no card network's prefix: a card only when the prefix check is off
    assert card_spans("7992 7398 7131 0007", known_issuers_only=False) == [(0, 19)]
    assert card_spans("7992 7398 7131 0007") == []


def test_ip_edges():
    assert ip_spans("at 8.8.8.8.") == [(3, 10)]
    assert ip_spans("failed at 2606:4700:4700::1111: timeout") == [(10, 30)]
    assert ip_spans("01.02.03.04 and 8.8.8.08") == []  # leading zeros do not parse
    assert ip_spans("v8.8.8.8") == []  # glued to a word


def test_metrics(stage):
    out = stage(pa.table({"text": pa.array(["a@example.com b@example.com", "8.8.8.8", "x"], pa.large_string())}))
    m = stage.metrics(out)
    assert m["pii"]["email"] == {"matches": 2, "docs": 1} and m["pii"]["ip"] == {"matches": 1, "docs": 1}


def test_config_errors_are_one_line(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("input: x.jsonl\nstages:\n  - pii: {emial: {enabled: false}}\n")
    with pytest.raises(ConfigError, match=r"pii: unknown key 'emial' \(did you mean 'email'\?\)"):
        load_config(p)
    p.write_text("input: x.jsonl\nstages:\n  - pii: {}\n")
    with pytest.raises(ConfigError, match="unknown region 'XX'"):
        load_config(p, ["pii.phone.region=XX"])
    cfg = load_config(p, ["pii.phone.region=GB", "pii.card.replacement=CARD"])
    assert cfg.stages[0].config.phone.region == "GB" and cfg.stages[0].config.card.replacement == "CARD"


def test_runs_before_tokenize_only(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("input: x.jsonl\nstages:\n  - tokenize: {}\n  - pii: {}\n")
    with pytest.raises(ConfigError):
        load_config(p)


def test_report_shows_counts_per_kind(stage):
    from datacurate.report.sections import View

    out = stage(pa.table({"text": pa.array(["a@example.com b@example.com", "8.8.8.8"], pa.large_string())}))
    html = type(stage).report_section(View({"metrics": stage.metrics(out)}))
    assert "PII redacted" in html and "<td>email</td><td>2</td><td>1</td>" in html
    assert type(stage).report_section(View({})) == ""
