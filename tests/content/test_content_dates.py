"""Date absolutisation against the event's own time, in a configurable timezone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from dsh_memory_worker.memory.content.dates import absolutise_dates

SH = ZoneInfo("Asia/Shanghai")
BASE = int(datetime(2025, 9, 9, 12, 0, tzinfo=SH).timestamp() * 1000)  # a Tuesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天", "2025-09-09"),
        ("昨天", "2025-09-08"),
        ("明天", "2025-09-10"),
        ("上周", "the week of 2025-09-01"),
        ("本周", "the week of 2025-09-08"),
        ("这周", "the week of 2025-09-08"),
        ("下周", "the week of 2025-09-15"),
        ("刚才", "2025-09-09 12:00"),
        ("现在", "2025-09-09 12:00"),
        ("3天前", "2025-09-06"),
        ("3 天 后", "2025-09-12"),
        ("2小时前", "2025-09-09 10:00"),
        ("2小时后", "2025-09-09 14:00"),
        ("30分钟前", "2025-09-09 11:30"),
        ("30分钟后", "2025-09-09 12:30"),
        ("Today", "2025-09-09"),
        ("yesterday", "2025-09-08"),
        ("TOMORROW", "2025-09-10"),
        ("2 days ago", "2025-09-07"),
        ("1 day ago", "2025-09-08"),
        ("in 3 days", "2025-09-12"),
        ("5 hours ago", "2025-09-09 07:00"),
        ("1 minute ago", "2025-09-09 11:59"),
        ("前天", "前天"),
    ],
)
def test_conversions(text: str, expected: str) -> None:
    assert absolutise_dates(text, BASE, SH) == expected


def test_relative_to_send_time_not_write_time() -> None:
    sent = int(datetime(2025, 9, 1, 9, 0, tzinfo=SH).timestamp() * 1000)
    assert absolutise_dates("明天见", sent, SH) == "2025-09-02见"


def test_timezone_changes_the_calendar_day() -> None:
    late = int(datetime(2025, 9, 9, 23, 30, tzinfo=UTC).timestamp() * 1000)
    assert absolutise_dates("today", late, UTC) == "2025-09-09"
    assert absolutise_dates("today", late, SH) == "2025-09-10"


def test_words_inside_other_words_are_left_alone() -> None:
    assert absolutise_dates("todays toddler", BASE, SH) == "todays toddler"


def test_counts_have_at_most_four_digits() -> None:
    assert absolutise_dates("12345天前", BASE, SH) == "12019-04-09"


def test_dates_outside_the_calendar_stay_as_written() -> None:
    last_second = 253_402_300_799_000  # 9999-12-31T23:59:59Z
    assert absolutise_dates("today, tomorrow", last_second, UTC) == "9999-12-31, tomorrow"
    assert absolutise_dates("today", -62_135_596_800_000, UTC) == "0001-01-01"
    assert absolutise_dates("今天", 10**17, UTC) == "今天"
