"""The console's Starlette application: every page and action of ``docs/console.md`` behind the
guard of :mod:`worker.console.security`, errors as a page with one line."""

from __future__ import annotations

from importlib import resources

from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from dsh_memory_worker.memory.store.base import StoreError
from dsh_memory_worker.worker.console import actions, pages
from dsh_memory_worker.worker.console.base import Console
from dsh_memory_worker.worker.console.security import HEADERS, Guard
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError


async def _css(request: Request) -> Response:
    css = (
        resources.files("dsh_memory_worker.worker.console")
        .joinpath("static/console.css")
        .read_text("utf-8")
    )
    return Response(css, media_type="text/css")


def build_app(console: Console) -> Starlette:
    """The application with every page and action of ``docs/console.md``."""

    async def home(request: Request) -> Response:
        return RedirectResponse("/sessions", status_code=303)

    async def failed(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            status, line = exc.status_code, str(exc.detail)
        elif isinstance(exc, SQLAlchemyError):
            status, line = (
                503,
                "the state database cannot be read: " + " ".join(str(exc).split())[:300],
            )
        else:
            status, line = 503, " ".join(str(exc).split())[:300]
        response = console.render(request, "error.html", status, status_code=status, line=line)
        response.headers.update(HEADERS)
        return response

    routes = [
        Route("/", home),
        Route("/static/console.css", _css),
        *pages.ROUTES,
        *actions.ROUTES,
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, access=console.access)],
        exception_handlers={
            HTTPException: failed,
            SQLAlchemyError: failed,
            StoreError: failed,
            OSError: failed,
            PermanentJobError: failed,
            TransientJobError: failed,
        },
    )
    app.state.console = console
    return app
