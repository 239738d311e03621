"""Content policy: what a message becomes before it is stored. Pure, except the cached git
lookup in :func:`project_scope`.

Order of operations for a message body: :func:`memory.redaction.redact` → :func:`cap_assistant` →
:func:`absolutise_dates` (redacting before the cut means no secret survives as a short fragment).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Final

from memory.constants import DEFAULT_SLUG, ROOT_PROJECT, SLUG_CAP, TRUNCATION_MARKER
from memory.redaction import redact

# ---- block flattening -------------------------------------------------------------------------


def flatten_blocks(blocks: Iterable[Any] | None) -> str:
    """Content blocks → plain text, parts joined with ``\\n``.

    ``text`` → its text; ``image`` → ``[image]``; ``thinking``/``reasoning`` and ``tool-call`` are
    dropped; ``tool-result`` is unwrapped (its own ``content`` is flattened); anything else becomes
    ``[<type>]``. Non-mapping items are ignored.
    """
    parts: list[str] = []
    for block in blocks or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else "")
        elif kind == "image":
            parts.append("[image]")
        elif kind in ("thinking", "reasoning", "tool-call"):
            continue
        elif kind == "tool-result":
            inner = block.get("content")
            parts.append(flatten_blocks(inner if isinstance(inner, list | tuple) else ()))
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


# ---- truncation -------------------------------------------------------------------------------


def cap_assistant(text: str, max_chars: int) -> str:
    """Keep the first ``max_chars`` characters and append ``\\n\\n[...truncated <n> chars]``."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARKER.format(omitted=len(text) - max_chars)


def estimate_tokens(text: str) -> int:
    """The protocol's estimator: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


# ---- date absolutisation ----------------------------------------------------------------------

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
    return lambda base_ms, tz: lambda m: _fmt_datetime(
        base_ms + sign * int(m.group(1)) * unit_ms, tz)


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
        ("刚才|现在", 0, (("刚才", "现在"),),
         lambda base_ms, tz: lambda m: _fmt_datetime(base_ms, tz)),
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
        (r"\b(\d{1,4})\s+hours?\s+ago\b", re.I, (("hour",), ("ago",)),
         _units(-1, _HOUR_MS)),
        (r"\b(\d{1,4})\s+minutes?\s+ago\b", re.I, (("minute",), ("ago",)),
         _units(-1, _MINUTE_MS)),
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


def _apply_dates(
    text: str, rules: Iterable[_DateRule], base_ms: int, tz: tzinfo | None
) -> str:
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


def clean_text(text: str, *, max_chars: int, base_ms: int, tz: tzinfo | None = None) -> str:
    """The message-body policy in its fixed order: redact → cap → absolutise."""
    return absolutise_dates(cap_assistant(redact(text), max_chars), base_ms, tz)


# ---- errors and slugs -------------------------------------------------------------------------

_STACK_LINE: Final = re.compile(
    r"^\s*(at\s|Traceback|File \".*\", line \d+|stack backtrace:|note:|Caused by:"
    r"|===\s*$|\.\.\.\s*$)"
)


def one_line_error(text: str, cap: int = 200) -> str:
    """An error or tool output as one line: stack-like lines dropped, ``first → last`` meaningful
    line (or one line when they are the same), capped at ``cap`` characters ending in ``…``."""
    first = last = ""
    for line in re.split(r"\r?\n", text):
        if _STACK_LINE.match(line):
            continue
        stripped = line.strip()
        if not stripped:
            continue
        first = first or stripped
        last = stripped
    chosen = first if first == last or not last else f"{first} → {last}"
    return chosen[: cap - 1] + "…" if len(chosen) > cap else chosen


def slugify(name: str, cap: int = SLUG_CAP) -> str:
    """Lowercase; runs outside ``[a-z0-9]`` and CJK become ``-``; trimmed; cut to ``cap`` and
    trimmed again; empty → ``memory``."""
    slug = re.sub(r"[^a-z0-9\u4e00-\u9fff]+", "-", name.lower()).strip("-")
    slug = slug[:cap].rstrip("-")
    return slug or DEFAULT_SLUG


# ---- project scope ----------------------------------------------------------------------------

_HYPATIA_SPACE: Final = (
    "\t\n\x0b\x0c\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_GIT_LOCATION_VARS: Final = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
GIT_TIMEOUT_S: Final = 3.0


def trim_like_hypatia(text: str) -> str:
    """Strip Unicode White_Space as hypatia trims a scope: strips U+0085, keeps U+FEFF."""
    return text.strip(_HYPATIA_SPACE)


def normalise_project(name: str | None) -> str:
    """A directory name as a scope hypatia stores exactly as queried: commas → ``_``, trimmed,
    empty → ``/``. Any other name comes back unchanged (the function is a fixed point)."""
    scope = trim_like_hypatia((name or "").replace(",", "_"))
    return scope or ROOT_PROJECT


_project_cache: dict[str, str] = {}
_project_lock = threading.Lock()


def _git_toplevel(cwd: str) -> tuple[str | None, bool]:
    """(top-level path or None, whether the answer may be cached)."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "--show-toplevel"],
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, False
    except OSError:
        return None, True
    if done.returncode != 0:
        return None, True
    root = done.stdout.decode("utf-8", "replace")
    root = root[:-2] if root.endswith("\r\n") else root.removesuffix("\n")
    return (root or None), True


def project_scope(cwd: str | None) -> str:
    """The project scope of a session directory: basename of its git top level (3 s timeout, git
    location variables removed), else the cwd's own basename, normalised by
    :func:`normalise_project`. Cached per cwd; a timeout is not cached. No cwd → ``/``."""
    if not cwd:
        return ROOT_PROJECT
    with _project_lock:
        cached = _project_cache.get(cwd)
    if cached is not None:
        return cached
    root, cacheable = _git_toplevel(cwd)
    scope = normalise_project(PurePosixPath(root if root is not None else cwd).name)
    if cacheable:
        with _project_lock:
            _project_cache[cwd] = scope
    return scope


def clear_project_cache() -> None:
    """Forget every cached scope (tests; a long-running daemon after a repository move)."""
    with _project_lock:
        _project_cache.clear()


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
