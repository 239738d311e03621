"""Names made from text: slugs, scopes as hypatia stores them, one-line errors."""

from __future__ import annotations

import re
from typing import Final

from dsh_memory_worker.memory.constants import DEFAULT_SLUG, ROOT_PROJECT, SLUG_CAP

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


_HYPATIA_SPACE: Final = (
    "\t\n\x0b\x0c\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def trim_like_hypatia(text: str) -> str:
    """Strip Unicode White_Space as hypatia trims a scope: strips U+0085, keeps U+FEFF."""
    return text.strip(_HYPATIA_SPACE)


def normalise_project(name: str | None) -> str:
    """A directory name as a scope hypatia stores exactly as queried: commas → ``_``, trimmed,
    empty → ``/``. Any other name comes back unchanged (the function is a fixed point)."""
    scope = trim_like_hypatia((name or "").replace(",", "_"))
    return scope or ROOT_PROJECT
