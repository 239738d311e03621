"""The console's Starlette application: one runtime (state database + store), one worker thread
for everything that touches them, Jinja2 templates with autoescaping on, and the guard of
:mod:`worker.console.security` in front of every route."""

from __future__ import annotations

import asyncio
import datetime as dt
import zoneinfo
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memory.printable import printable
from memory.store.base import StoreError
from worker.console.security import CSRF_FIELD, HEADERS, Access, Guard
from worker.console.session_view import Surveys
from worker.jobs.logread import PermanentJobError, TransientJobError
from worker.jobs.runtime import Runtime

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
        self.templates = Environment(loader=PackageLoader("worker.console", "templates"),
                                     autoescape=True, undefined=StrictUndefined)
        self.templates.filters.update(shown=_shown, q=_quote, when=self.when)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the console's worker thread."""
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    def when(self, moment: dt.datetime | None) -> str:
        if moment is None:
            return "-"
        return moment.astimezone(self.tz).strftime("%Y-%m-%d %H:%M:%S")

    def render(self, request: Request, template: str, status: int = 200,
               **context: Any) -> HTMLResponse:
        page = self.templates.get_template(template).render(
            shelf=self.shelf, csrf=getattr(request.state, "csrf", ""), csrf_field=CSRF_FIELD,
            path=request.url.path, **context)
        return HTMLResponse(page, status_code=status)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.runtime.close()


def _shown(value: object) -> str:
    """Text from disk or from the user, with control characters made visible
    (:func:`memory.printable.printable`); HTML escaping is the templates' autoescape."""
    return printable(value)


def _quote(value: object) -> str:
    """A value for a query string: every reserved character percent-encoded."""
    return quote(str(value), safe="")


async def _css(request: Request) -> Response:
    css = resources.files("worker.console").joinpath("static/console.css").read_text("utf-8")
    return Response(css, media_type="text/css")


def build_app(console: Console) -> Starlette:
    """The application with every page and action of ``docs/console.md``."""
    from worker.console import actions, pages

    async def home(request: Request) -> Response:
        return RedirectResponse("/sessions", status_code=303)

    async def failed(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            status, line = exc.status_code, str(exc.detail)
        elif isinstance(exc, SQLAlchemyError):
            status, line = 503, "the state database cannot be read: " + " ".join(
                str(exc).split())[:300]
        else:
            status, line = 503, " ".join(str(exc).split())[:300]
        response = console.render(request, "error.html", status, status_code=status, line=line)
        response.headers.update(HEADERS)
        return response

    routes = [Route("/", home), Route("/static/console.css", _css),
              *pages.routes(console), *actions.routes(console)]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, access=console.access)],
        exception_handlers={
            HTTPException: failed, SQLAlchemyError: failed, StoreError: failed,
            OSError: failed, PermanentJobError: failed, TransientJobError: failed,
        },
    )
