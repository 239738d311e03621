"""Secret redaction (memory.redaction): every secret form of the case table becomes exactly its
expected text (key names, quotes and surrounding text kept), ordinary text comes out byte for
byte, markers are never redacted again, and the packaged rule data is complete and compiles."""

from __future__ import annotations

import re
import string
import time
import tomllib
from importlib import resources
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redaction_cases import (
    HEX,
    LOW,
    NEGATIVE,
    POSITIVE,
    TO_END_OF_TEXT,
    UPPER_DIGITS,
    expected,
    secrets_of,
    tok,
)

from dsh_memory_worker.memory.redaction import find_secrets, redact
from dsh_memory_worker.memory.redaction.rules import RULE_FILES, load

#: The forms the previous hand list covered, with their outputs (the two bearer cases now keep the
#: scheme word: only the credential is secret; ``Authorization: Basic`` no longer swallows the
#: rest of its line).
EARLIER_FORMS = [
    ("key sk-abcdef1234567890 here", "key [REDACTED:secret:key] here"),
    ("t eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM end", "t [REDACTED:secret:jwt] end"),
    ("use bearer abcdefgh12345678 now", "use bearer [REDACTED:secret:bearer] now"),
    (
        "Authorization: Basic dXNlcjpwYXNz\nnext",
        "Authorization: Basic [REDACTED:secret:authorization]\nnext",
    ),
    ("Authorization: Bearer abcdefgh12345678", "Authorization: Bearer [REDACTED:secret:bearer]"),
    ("id AKIAABCDEFGHIJKLMNOP.", "id [REDACTED:secret:aws]."),
    ("tok ghp_abcdefgh1234 x", "tok [REDACTED:secret:github] x"),
    ("glpat-abcdEFGH1234_x", "[REDACTED:secret:gitlab]"),
    ("slack xoxb-123456-abc", "slack [REDACTED:secret:slack]"),
    ('password="s3cret!!" ok', 'password="[REDACTED:secret:credential]" ok'),
    ("token: abcd1234", "token: [REDACTED:secret:credential]"),
    ("API_KEY=abcd&x=1", "API_KEY=[REDACTED:secret:credential]&x=1"),
    ("secret=sk-abcdef1234567890", "secret=[REDACTED:secret:key]"),
    (
        "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb",
        "a\n[REDACTED:secret:pem]\nb",
    ),
]


def test_the_table_is_as_large_as_promised() -> None:
    assert len(POSITIVE) >= 40
    assert len(NEGATIVE) >= 15
    assert len({name for name, _, _ in POSITIVE}) == len(POSITIVE)


@pytest.mark.parametrize(("name", "raw", "template"), POSITIVE, ids=[c[0] for c in POSITIVE])
def test_each_secret_form_becomes_exactly_its_expected_text(
    name: str, raw: str, template: str
) -> None:
    out = redact(raw)
    assert out == expected(template)
    for secret in secrets_of(raw, template):
        assert secret not in out
    assert redact(out) == out  # a marker is never redacted again


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_comes_out_byte_for_byte(text: str) -> None:
    assert redact(text).encode("utf-8") == text.encode("utf-8")
    assert find_secrets(text) == []


@pytest.mark.parametrize(("raw", "out"), EARLIER_FORMS)
def test_the_forms_of_the_earlier_hand_list(raw: str, out: str) -> None:
    assert redact(raw) == out


def test_authorization_basic_keeps_the_rest_of_its_line() -> None:
    raw = "send Authorization: Basic dXNlcjpwYXNzd29yZA== with curl, then check the log"
    assert redact(raw) == (
        "send Authorization: Basic [REDACTED:secret:authorization] with curl, then check the log"
    )


def test_all_secrets_of_one_text_are_replaced_and_the_rest_kept() -> None:
    # A key with no END line takes the rest of its text: one such case, last.
    cases = [c for c in POSITIVE if c[0] not in TO_END_OF_TEXT]
    last = next(c for c in POSITIVE if c[0] == "pem unterminated")
    raw = "\n".join([*(raw for _, raw, _ in cases), *NEGATIVE, last[1]])
    want = "\n".join([*(expected(t) for _, _, t in cases), *NEGATIVE, expected(last[2])])
    assert redact(raw) == want


def test_overlapping_findings_make_one_marker_named_by_the_token_shape() -> None:
    # sk-key (a token shape) and two generic rules find the same value.
    assert redact("OPENAI_API_KEY=sk-abcdef1234567890") == "OPENAI_API_KEY=[REDACTED:secret:key]"
    assert [f.rule_id for f in find_secrets("OPENAI_API_KEY=sk-abcdef1234567890")] == [
        "sk-key",
        "credential-assignment",
    ]


def test_placeholders_and_references_are_not_secrets() -> None:
    for text in (
        "password=${DB_PASSWORD}",
        "token: <paste-here>",
        'api_key: "{{ vault.api_key }}"',
        "secret=********",
        "password: null",
        "PASSWORD=changeme",
    ):
        assert redact(text) == text


# ---- the rule data -----------------------------------------------------------------------------


def test_every_packaged_rule_and_allowlist_compiles() -> None:
    rules = load()
    assert len(rules.rules) >= 60
    assert len({r.id for r in rules.rules}) == len(rules.rules)
    for rule in rules.rules:
        assert rule.pattern.pattern  # compiles
        assert rule.keywords, rule.id
        assert all(k == k.lower() for k in rule.keywords), rule.id
        assert re.fullmatch(r"[a-z0-9]+", rule.label), rule.id
        for allowlist in rule.allowlists:
            assert len(allowlist.regexes) == len(allowlist.sources)
    for allowlist in rules.allowlists:
        assert len(allowlist.regexes) == len(allowlist.sources)


def test_the_rule_files_are_package_data() -> None:
    # pyproject.toml ships data/*.toml; every file load() reads is one of them.
    assert all(name.endswith(".toml") for name in RULE_FILES)
    data = resources.files("dsh_memory_worker.memory.redaction").joinpath("data")
    assert sorted(p.name for p in data.iterdir() if p.name.endswith(".toml")) == sorted(RULE_FILES)


def test_token_shapes_come_before_generic_rules() -> None:
    generic = [r.generic for r in load().rules]
    assert generic == sorted(generic)
    assert load().rules[-1].generic


# ---- the keyword prefilter ---------------------------------------------------------------------

PIECES = [raw for _, raw, _ in POSITIVE[::3]] + [
    "password", "token", "=", ": ", '"', "'", " ", "\n", "://", "u:p@", "x", "1", "é", "İ",
    "[REDACTED:secret:key]", "-----BEGIN PRIVATE KEY-----", "bearer ", "Authorization: ",
    "pass", "Secret", "_", "K", "\u212a", "sk-", "?sig=", "&", "AccountKey=",
    "aws_secret_access_key",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_the_keyword_skip_and_the_anchored_search_never_change_a_result(text: str) -> None:
    assert find_secrets(text) == find_secrets(text, prefilter=False)


@pytest.mark.parametrize(("name", "raw", "template"), POSITIVE, ids=[c[0] for c in POSITIVE])
def test_the_anchored_search_finds_what_a_whole_text_search_finds(
    name: str, raw: str, template: str
) -> None:
    for text in (raw, f"x {raw} {raw}\n{raw}"):
        assert find_secrets(text) == find_secrets(text, prefilter=False)


def test_many_unterminated_key_blocks_are_redacted_in_linear_time() -> None:
    # Before the END search stopped at the next BEGIN this took 19 s (quadratic); now well
    # under a second. The bound is 30x that, for a loaded machine.
    text = "-----BEGIN PRIVATE KEY-----\nabc\n" * 3000
    started = time.perf_counter()
    out = redact(text)
    assert time.perf_counter() - started < 15
    assert out == "[REDACTED:secret:pem]"  # the first has no END line: the rest of the text


# ---- one sample per provider rule --------------------------------------------------------------

A: Final = string.ascii_letters + string.digits
B32: Final = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
#: rule id → a text holding one token of its shape (generated, not a real credential).
PROVIDER_SAMPLES: Final = {
    "aws-access-key-id": "AKIA" + tok(16, "p1", UPPER_DIGITS),
    "aws-secret-access-key": "aws_secret_access_key " + tok(40, "p2"),
    "gcp-api-key": "AIza" + tok(35, "p3"),
    "gcp-service-account-key-id": '"private_key_id": "' + tok(40, "p4", HEX) + '"',
    "gcp-oauth-client-secret": "GOCSPX-" + tok(28, "p5"),
    "azure-connection-key": "SharedAccessKey=" + tok(43, "p6") + "=",
    "azure-sas-signature": "https://a.blob.core.windows.net/c?sv=1&sig=" + tok(44, "p7"),
    "digitalocean-token": "doo_v1_" + tok(64, "p8", HEX),
    "heroku-api-key": "HRKU-AA" + tok(58, "p9"),
    "alibaba-access-key-id": "LTAI" + tok(20, "p10"),
    "databricks-token": "dapi" + tok(32, "p11", HEX),
    "vault-token": "hvb." + tok(100, "p12"),
    "terraform-cloud-token": tok(14, "p13") + ".atlasv1." + tok(67, "p14"),
    "pulumi-token": "pul-" + tok(40, "p15", HEX),
    "doppler-token": "dp.st." + tok(44, "p16"),
    "age-secret-key": "AGE-SECRET-KEY-1" + tok(58, "p17", B32),
    "grafana-token": "glsa_" + tok(32, "p18") + "_" + tok(8, "p19", HEX),
    "newrelic-key": "NRAK-" + tok(27, "p20", UPPER_DIGITS),
    "sentry-token": "sntrys_" + tok(60, "p21"),
    "supabase-token": "sbp_" + tok(40, "p22", HEX),
    "github-token": "ghu_" + tok(36, "p23"),
    "gitlab-token": "glrt-" + tok(20, "p24"),
    "bitbucket-app-password": "ATBB" + tok(32, "p25"),
    "atlassian-api-token": "ATATT3xFfGF0" + tok(180, "p26"),
    "slack-token": "xoxe.xoxp-1-" + tok(100, "p27"),
    "slack-webhook": "https://hooks.slack.com/workflows/T"
    + tok(10, "p28", UPPER_DIGITS)
    + "/"
    + tok(30, "p29"),
    "discord-webhook": "https://discordapp.com/api/webhooks/"
    + tok(18, "p30", string.digits)
    + "/"
    + tok(68, "p31"),
    "discord-bot-token": "discord bot M"
    + tok(25, "p32")
    + "."
    + tok(6, "p33")
    + "."
    + tok(38, "p34"),
    "telegram-bot-token": "bot " + tok(9, "p35", string.digits) + ":AA" + tok(33, "p36"),
    "teams-webhook": "https://acme.webhook.office.com/webhookb2/" + tok(60, "p37"),
    "stripe-key": "rk_live_" + tok(24, "p38"),
    "square-token": "sq0csp-" + tok(43, "p39"),
    "paypal-braintree-token": "access_token$production$"
    + tok(16, "p40", LOW)
    + "$"
    + tok(32, "p41", HEX),
    "shopify-token": "shpss_" + tok(32, "p42", HEX),
    "flutterwave-key": "FLWSECK_TEST-" + tok(32, "p43", "abcdefgh0123456789") + "-X",
    "npm-token": "npm_" + tok(36, "p44"),
    "pypi-token": "pypi-AgENdGVzdC5weXBpLm9yZw" + tok(60, "p45"),
    "rubygems-key": "rubygems_" + tok(48, "p46", HEX),
    "nuget-key": "oy2" + tok(43, "p47", LOW),
    "docker-token": "dckr_oat_" + tok(32, "p48"),
    "jfrog-key": "AKCp" + tok(69, "p49"),
    "postman-key": "PMAK-" + tok(24, "p50", HEX) + "-" + tok(34, "p51", HEX),
    "crates-token": "cio" + tok(32, "p52"),
    "huggingface-token": "api_org_" + tok(34, "p53"),
    "groq-api-key": "gsk_" + tok(52, "p54"),
    "xai-api-key": "xai-" + tok(80, "p55"),
    "replicate-token": "r8_" + tok(37, "p56"),
    "perplexity-key": "pplx-" + tok(48, "p57"),
    "langsmith-key": "lsv2_pt_" + tok(32, "p58", HEX) + "_" + tok(10, "p59", HEX),
    "twilio-api-key": "SK" + tok(32, "p60", HEX),
    "sendgrid-key": "SG." + tok(22, "p61") + "." + tok(43, "p62"),
    "mailgun-key": "key-" + tok(32, "p63", HEX),
    "mailchimp-key": tok(32, "p64", HEX) + "-us21",
    "linear-key": "lin_oauth_" + tok(40, "p65"),
    "notion-token": "ntn_" + tok(46, "p66"),
    "dropbox-token": "sl." + tok(140, "p67"),
    "okta-token": "Authorization: SSWS 00" + tok(40, "p68"),
}


def test_every_provider_rule_has_a_sample() -> None:
    provider_ids = {str(r["id"]) for r in tomllib.loads(
        resources.files("dsh_memory_worker.memory.redaction")
        .joinpath("data", "providers.toml").read_text()
    )["rules"]}  # fmt: skip
    assert set(PROVIDER_SAMPLES) == provider_ids


@pytest.mark.parametrize(("rule_id", "text"), sorted(PROVIDER_SAMPLES.items()))
def test_each_provider_rule_redacts_its_sample(rule_id: str, text: str) -> None:
    found = find_secrets(f"see {text} done")
    assert rule_id in {f.rule_id for f in found}
    assert found == find_secrets(f"see {text} done", prefilter=False)
    out = redact(f"see {text} done")
    assert out.startswith("see ") and out.endswith(" done")
    assert "[REDACTED:secret:" in out
    token = max(text.split(), key=len).split("=", 1)[-1].strip('"')
    assert token[-20:] not in out
