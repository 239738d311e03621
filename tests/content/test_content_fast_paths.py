"""The date rules' skip-when-absent fast paths give exactly what running every rule gives (the
redaction prefilter has its own test in test_redaction_rules.py)."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_memory_worker.memory.content import dates as content

PIECES = [
    "sk-abcdef123456", "eyJhbGciOi.eyJzdWIiOi.SflKxwRJSM", "Bearer abcdefgh1234", "bearer ",
    "Authorization: Basic abc", "AUTHORIZATION:x", "AKIAABCDEFGHIJKLMN", "ghp_abcdefgh12",
    "glpat-abcdefgh", "xoxb-123456", "password=hunter22", "Token: 'abcd12'", "API_KEY=zzzz",
    "client_secret=\"qqqqq\"", "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----",
    "[REDACTED:secret:key]", "今天", "昨天", "明天", "上周", "本周", "这周", "下周", "刚才", "现在",
    "3天前", "12 天 后", "2小时前", "5 小时后", "30分钟前", "1分钟后", "前天", "Today", "yesterday",
    "TOMORROW", "2 days ago", "in 3 days", "in 1 day", "4 hours ago", "1 minute ago", "days",
    "ago", "in", " ", "\n", ",", "=", ":", "'", "x", "1", "é", "İ",
]  # fmt: skip


def _naive_dates(text: str, base_ms: int, tz: ZoneInfo | None) -> str:
    out = text
    for pattern, _folded, _need, make in content._DATE_RULES:
        out = pattern.sub(content._keep_on_overflow(make(base_ms, tz)), out)
    return out


texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(min_value=0, max_value=4_102_444_800_000))
def test_fast_paths_match_running_every_rule(text: str, base_ms: int) -> None:
    for tz in (UTC, ZoneInfo("Asia/Shanghai")):
        assert content.absolutise_dates(text, base_ms, tz) == _naive_dates(text, base_ms, tz)
