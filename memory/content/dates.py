"""Relative date words made absolute against an event's time; UTC stamps of times and days."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Final

_DAY_MS: Final = 86_400_000
_HOUR_MS: Final = 3_600_000
_MINUTE_MS: Final = 60_000


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _local(ms: int, tz: tzinfo | None) -> datetime:
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.astimezone(tz) if tz is not None else moment.astimezone()


def _ymd(moment: date) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"


def _fmt_date(ms: int, tz: tzinfo | None) -> str:
    return _ymd(_local(ms, tz))


def _fmt_datetime(ms: int, tz: tzinfo | None) -> str:
    moment = _local(ms, tz)
    return f"{_ymd(moment)} {moment.hour:02d}:{moment.minute:02d}"


def _week_of(base_ms: int, weeks: int, tz: tzinfo | None) -> str:
    day = _local(base_ms, tz).date()
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks)
    return f"the week of {_ymd(monday)}"


_Replace = Callable[[re.Match[str]], str]


def _days(sign: int) -> Callable[[int, tzinfo | None], _Replace]:
    return lambda base_ms, tz: lambda m: _fmt_date(base_ms + sign * int(m.group(1)) * _DAY_MS, tz)


def _units(sign: int, unit_ms: int) -> Callable[[int, tzinfo | None], _Replace]:
    return lambda base_ms, tz: (
        lambda m: _fmt_datetime(base_ms + sign * int(m.group(1)) * unit_ms, tz)
    )


def _date_at(delta_ms: int) -> Callable[[int, tzinfo | None], _Replace]:
    return lambda base_ms, tz: lambda m: _fmt_date(base_ms + delta_ms, tz)


def _week(weeks: int) -> Callable[[int, tzinfo | None], _Replace]:
    return lambda base_ms, tz: lambda m: _week_of(base_ms, weeks, tz)


#: (pattern, case-insensitive?, literal groups — every group has a member in any match —,
#: replacement factory over (base_ms, tz)), applied in this order, each to the previous output.
_DateRule = tuple[
    re.Pattern[str], bool, tuple[tuple[str, ...], ...], Callable[[int, tzinfo | None], _Replace]
]
_DATE_RULES: Final[tuple[_DateRule, ...]] = tuple(
    (re.compile(pattern, flags | re.ASCII), bool(flags), need, make)
    for pattern, flags, need, make in (
        ("今天", 0, (("今天",),), _date_at(0)),
        ("昨天", 0, (("昨天",),), _date_at(-_DAY_MS)),
        ("明天", 0, (("明天",),), _date_at(_DAY_MS)),
        ("上周", 0, (("上周",),), _week(-1)),
        ("本周|这周", 0, (("本周", "这周"),), _week(0)),
        ("下周", 0, (("下周",),), _week(1)),
        (
            "刚才|现在",
            0,
            (("刚才", "现在"),),
            lambda base_ms, tz: lambda m: _fmt_datetime(base_ms, tz),
        ),
        (r"(\d{1,4})\s*天\s*前", 0, (("天",), ("前",)), _days(-1)),
        (r"(\d{1,4})\s*天\s*后", 0, (("天",), ("后",)), _days(1)),
        (r"(\d{1,4})\s*小时\s*前", 0, (("小时",), ("前",)), _units(-1, _HOUR_MS)),
        (r"(\d{1,4})\s*小时\s*后", 0, (("小时",), ("后",)), _units(1, _HOUR_MS)),
        (r"(\d{1,4})\s*分钟\s*前", 0, (("分钟",), ("前",)), _units(-1, _MINUTE_MS)),
        (r"(\d{1,4})\s*分钟\s*后", 0, (("分钟",), ("后",)), _units(1, _MINUTE_MS)),
        (r"\btoday\b", re.I, (("today",),), _date_at(0)),
        (r"\byesterday\b", re.I, (("yesterday",),), _date_at(-_DAY_MS)),
        (r"\btomorrow\b", re.I, (("tomorrow",),), _date_at(_DAY_MS)),
        (r"\b(\d{1,4})\s+days?\s+ago\b", re.I, (("day",), ("ago",)), _days(-1)),
        (r"\bin\s+(\d{1,4})\s+days?\b", re.I, (("in",), ("day",)), _days(1)),
        (r"\b(\d{1,4})\s+hours?\s+ago\b", re.I, (("hour",), ("ago",)), _units(-1, _HOUR_MS)),
        (r"\b(\d{1,4})\s+minutes?\s+ago\b", re.I, (("minute",), ("ago",)), _units(-1, _MINUTE_MS)),
    )
)
_CJK_RULES: Final = 13  # the first 13 rules need a non-ASCII character to match
#: Every match of a CJK rule contains one of these; every match of an English rule contains
#: one of those (in lower case) — text with none of them is left as it is without a scan.
_CJK_HINTS: Final = ("天", "周", "刚才", "现在", "小时", "分钟")
_ENGLISH_HINTS: Final = ("day", "tomorrow", "hour", "minute")


def absolutise_dates(text: str, base_ms: int, tz: tzinfo | None = None) -> str:
    """Rewrite relative date words against ``base_ms`` (the event's own time, Unix ms).

    Dates are ``YYYY-MM-DD`` and date-times ``YYYY-MM-DD HH:MM`` in ``tz`` (default: the local
    timezone). Chinese: 今天 昨天 明天, 上周/本周/这周/下周 (``the week of <Monday>``), 刚才/现在,
    ``<n>天前/后``, ``<n>小时前/后``, ``<n>分钟前/后``. English (any case): today, yesterday,
    tomorrow, ``<n> day(s) ago``, ``in <n> day(s)``, ``<n> hour(s) ago``, ``<n> minute(s) ago``.
    ``n`` is 1–4 digits; anything else (e.g. 前天) is left alone.

    The rules run in a fixed order, each on the previous one's output; a rule is skipped when
    the current text lacks a literal every match of it contains (no regex scan is needed to
    know it cannot match), so the result is the same as running all of them.
    """
    out = text
    if not out.isascii() and any(hint in out for hint in _CJK_HINTS):
        out = _apply_dates(out, _DATE_RULES[:_CJK_RULES], base_ms, tz)
    low = out.lower()
    if any(hint in low for hint in _ENGLISH_HINTS):
        out = _apply_dates(out, _DATE_RULES[_CJK_RULES:], base_ms, tz)
    return out


def _apply_dates(text: str, rules: Iterable[_DateRule], base_ms: int, tz: tzinfo | None) -> str:
    out = text
    low: str | None = None
    for pattern, folded, need, make in rules:
        if folded:
            if low is None:
                low = out.lower()
            haystack = low
        else:
            haystack = out
        if not all(any(literal in haystack for literal in group) for group in need):
            continue
        out, count = pattern.subn(_keep_on_overflow(make(base_ms, tz)), out)
        if count:
            low = None
    return out


def _keep_on_overflow(replace: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """A date outside the calendar's range leaves the words as written."""

    def guarded(match: re.Match[str]) -> str:
        try:
            return replace(match)
        except (OverflowError, ValueError, OSError):
            return match.group(0)

    return guarded


def iso_utc(ms: int) -> str:
    """Unix ms → ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (JavaScript ``toISOString``); a time outside years
    1–9999 raises ``ValueError`` naming it."""
    days, rest = divmod(ms, _DAY_MS)
    hours, rest = divmod(rest, _HOUR_MS)
    minutes, rest = divmod(rest, _MINUTE_MS)
    seconds, millis = divmod(rest, 1000)
    try:
        day = _utc_day(days)
    except OverflowError:
        raise ValueError(f"time {ms} ms is outside the representable range") from None
    return f"{day}T{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"


@lru_cache(maxsize=1024)
def _utc_day(days: int) -> str:
    """``YYYY-MM-DD`` of day ``days`` after 1970-01-01 (every message of a day shares it)."""
    return _ymd(_EPOCH + timedelta(days=days))


def utc_date(moment: datetime | date) -> str:
    """``YYYY-MM-DD`` of a date or datetime (a work unit's ``_Recorded:`` stamp)."""
    return _ymd(moment)
