"""The configuration-file secret forms (issue 32, defect 10 / build item 11): a Docker
``config.json`` ``"auth"`` (base64 of ``user:password``), a kubeconfig ``client-key-data``
(base64 of a PEM private key) and a ``.netrc`` ``password``. Each has look-alikes that must stay
byte for byte; those of the first two reach the rule's regex and are dropped by its base64 check
(so the check, not a miss of the regex, keeps them). The case table (``redaction_cases``) carries
the same forms into the end-to-end raw-byte test of the store
(``test_redaction_stored_entries.py``)."""

from __future__ import annotations

import pytest
from redaction_cases import KUBE_CERT, b64, tok

from dsh_memory_worker.memory.redaction import find_secrets, redact
from dsh_memory_worker.memory.redaction.rules import Rule, base64_text, load


def _rule(rule_id: str) -> Rule:
    return next(r for r in load().rules if r.id == rule_id)


@pytest.mark.parametrize(
    ("rule_id", "text"),
    [
        ("docker-config-auth", '{"auth": "oauth2"}'),
        ("docker-config-auth", '{"auth": "' + b64("username") + '"}'),
        ("docker-config-auth", '{"auth": "' + b64("line1\nuser:pass") + '"}'),  # a control char
        ("kubeconfig-client-key-data", "client-key-data: " + KUBE_CERT),
        (
            "kubeconfig-client-key-data",
            "client-key-data: " + b64("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC"),
        ),
    ],
)
def test_a_look_alike_reaches_the_regex_and_stays(rule_id: str, text: str) -> None:
    rule = _rule(rule_id)
    assert rule.pattern.search(text) is not None
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "the machine learning login page has a password field",
        "machine build-01 is down; login with your password as usual",
        "by default login is slow and the password prompt waits",
        "machine api.example.com login deploy",  # no password: nothing to redact
    ],
)
def test_netrc_look_alikes_stay(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            "machine a.example login u account acct password p4ss-" + tok(8, "n1"),
            "machine a.example login u account acct password [REDACTED:secret:credential]",
        ),
        (
            "machine a.example\tpassword s3cr3t-" + tok(8, "n2") + "\n\tlogin u\nmacdef init",
            "machine a.example\tpassword [REDACTED:secret:credential]\n\tlogin u\nmacdef init",
        ),
        (
            "machine h.example login u password ghp_" + tok(36, "n3"),
            "machine h.example login u password [REDACTED:secret:github]",
        ),
    ],
)
def test_netrc_entries_in_any_order(raw: str, want: str) -> None:
    assert redact(raw) == want
    assert find_secrets(raw) == find_secrets(raw, prefilter=False)


def test_base64_text_reads_unpadded_and_cut_values() -> None:
    assert base64_text(b64("deploy:pw")) == "deploy:pw"
    assert base64_text(b64("deploy:pw").rstrip("=")) == "deploy:pw"
    assert base64_text(b64("deploy:pw1") + "Q") is not None  # a lone trailing character
    assert base64_text("not base64!") is None
