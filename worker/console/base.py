"""What every page of the console shares: the runtime and shelf, the access token, one worker
thread, the Jinja2 templates (autoescape on) and the request helpers."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.console.security import CSRF_FIELD, Access
from dsh_memory_worker.worker.console.session_view import Surveys
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.watch.scan_problems import session_id_problem

T = TypeVar("T")


class Console:
    """What every page shares: the runtime, the shelf, the access token, the templates."""

    def __init__(self, runtime: Runtime, shelf: str, access: Access) -> None:
        self.runtime = runtime
        self.shelf = shelf
        self.access = access
        self.surveys = Surveys()
        # One thread does all the work: the store adapters and SQLite connections are not
        # shared between threads, and a local console serves one person.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="console")
        tz_name = runtime.settings.timezone
        self.tz: dt.tzinfo = zoneinfo.ZoneInfo(tz_name) if tz_name else dt.UTC
        self.templates = Environment(
            loader=PackageLoader("dsh_memory_worker.worker.console", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
        )
        self.templates.filters.update(
            shown=_shown,
            block=block,
            q=_quote,
            when=self.when,
            clip=clip,
            plural=plural,
            short_id=short_id,
            untitled=untitled,
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the console's worker thread."""
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    def when(self, moment: dt.datetime | None) -> str:
        if moment is None:
            return "-"
        return moment.astimezone(self.tz).strftime("%Y-%m-%d %H:%M:%S")

    def render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        page = self.templates.get_template(template).render(
            shelf=self.shelf,
            csrf=getattr(request.state, "csrf", ""),
            csrf_field=CSRF_FIELD,
            path=request.url.path,
            **context,
        )
        return HTMLResponse(page, status_code=status)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.runtime.close()


def console_of(request: Request) -> Console:
    """The console an endpoint serves (``app.state.console``, set by
    :func:`worker.console.app.build_app`)."""
    console: Console = request.app.state.console
    return console


def clip(value: object, limit: int = 80) -> str:
    """``value`` on one line, at most ``limit`` characters: cut at a word boundary with an
    ellipsis, never mid-word (a single word longer than the limit is cut with one)."""
    text = " ".join(str(value).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    opened = cut.rfind("(")
    if opened >= limit // 2 and ")" not in cut[opened:]:
        cut = cut[:opened]  # never end inside a parenthesis: "tool (NOT…" reads as cut
    return cut.rstrip(" ,;:.-(") + "…"


def untitled(project: object) -> str:
    """What names a session without a title: the last folder of its project."""
    folder = str(project).rstrip("/").rsplit("/", 1)[-1] or "no project"
    return f"untitled session in {folder}"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``many``: an irregular plural)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def short_id(value: object, keep: int = 8) -> str:
    """The first ``keep`` characters of an id (a UUID's first group), with an ellipsis when
    more follows; the page keeps the full id in the element's title and link."""
    text = str(value)
    return text if len(text) <= keep + 1 else text[:keep] + "…"


def _shown(value: object) -> str:
    """Text from disk or from the user, with control characters made visible
    (:func:`memory.printable.printable`); HTML escaping is the templates' autoescape."""
    return printable(value)


def block(value: object) -> str:
    """Text of several lines (a message, a summary, a stored entry): as :func:`_shown`, but
    its newlines and tabs kept for the page to lay out."""
    return "".join(
        part if part in ("\n", "\t") else printable(part) for part in _LINES.split(str(value))
    )


_LINES = re.compile(r"([\n\t])")


def _quote(value: object) -> str:
    """A value for a query string: every reserved character percent-encoded."""
    return quote(str(value), safe="")


def session_id(value: object) -> str:
    """A session id from a request, refused (400) when no state database could hold it, as the
    commands refuse it (:func:`worker.watch.scan_problems.session_id_problem`)."""
    if not isinstance(value, str) or not value:
        raise HTTPException(400, "id: which session?")
    why = session_id_problem(value)
    if why is not None:
        raise HTTPException(400, f"the session id {why}; no session has such an id")
    return value


def query_date(value: str | None, field: str) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.combine(dt.date.fromisoformat(value), dt.time(), dt.UTC)
    except ValueError:
        raise HTTPException(400, f"{field}: not a date (YYYY-MM-DD)") from None


def query_int(value: str | None, field: str, default: int = 0) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise HTTPException(400, f"{field}: not a number") from None
    if number < 0:
        raise HTTPException(400, f"{field}: never negative")
    return number
