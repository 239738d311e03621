"""Secret redaction: one example per rule family, exact labels, keep-key rules."""

from __future__ import annotations

import pytest

from memory.content import redact

CASES = [
    ("key sk-abcdef1234567890 here", "key [REDACTED:secret:key] here"),
    ("t eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM end", "t [REDACTED:secret:jwt] end"),
    ("use bearer abcdefgh12345678 now", "use [REDACTED:secret:bearer] now"),
    (
        "Authorization: Basic dXNlcjpwYXNz\nnext",
        "Authorization: [REDACTED:secret:authorization]\nnext",
    ),
    ("Authorization: Bearer abcdefgh12345678", "Authorization: [REDACTED:secret:bearer]"),
    ("id AKIAABCDEFGHIJKLMNOP.", "id [REDACTED:secret:aws]."),
    ("tok ghp_abcdefgh1234 x", "tok [REDACTED:secret:github] x"),
    ("glpat-abcdEFGH1234_x", "[REDACTED:secret:gitlab]"),
    ("slack xoxb-123456-abc", "slack [REDACTED:secret:slack]"),
    ('password="s3cret!!" ok', 'password="[REDACTED:secret:credential]" ok'),
    ("token: abcd1234", "token: [REDACTED:secret:credential]"),
    ("API_KEY=abcd&x=1", "API_KEY=[REDACTED:secret:credential]&x=1"),
    (
        "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb",
        "a\n[REDACTED:secret:pem]\nb",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_each_rule(raw: str, expected: str) -> None:
    assert redact(raw) == expected


def test_ordinary_text_is_untouched() -> None:
    text = "tokenRingBuffer, a secret of success, pwd is short, sk-short, Bearer x"
    assert redact(text) == text


def test_placeholders_are_not_nested() -> None:
    once = redact("secret=sk-abcdef1234567890")
    assert once == "secret=[REDACTED:secret:key]"
    assert redact(once) == once
