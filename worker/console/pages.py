"""The console's read-only pages: Sessions and Audit here; a session and an entry in
:mod:`worker.console.session_page`, Search in :mod:`worker.console.search_page`, Health in
:mod:`worker.console.health_page`. Each endpoint is a module-level function: it gathers its rows
on the console's worker thread (state through the repositories of :mod:`worker.state`, memory
through the store adapter) and renders a template."""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dsh_memory_worker.worker.console import health_page, search_page, session_page
from dsh_memory_worker.worker.console.base import Console, console_of, query_date, query_int
from dsh_memory_worker.worker.consolidation_state import session_state, why_off_of
from dsh_memory_worker.worker.state.browse import BrowseRepo

SESSIONS_PER_PAGE = 50


def _sessions_rows(
    console: Console,
    project: str | None,
    since: dt.datetime | None,
    until: dt.datetime | None,
    after: str | None,
) -> dict[str, Any]:
    off = why_off_of(console.runtime.settings)
    with console.runtime.state.read() as repos:
        browse = BrowseRepo(repos.conn)
        page = browse.sessions(
            console.shelf,
            project=project,
            since=since,
            until=until,
            after=after,
            limit=SESSIONS_PER_PAGE,
        )
        rows = [
            {
                "line": line,
                "title": (line.title or "").strip(),
                "consolidation": session_state(
                    off=off,
                    forgotten=line.forgotten,
                    lag=line.consolidation_lag,
                    failing_task=line.last_task,
                    failing_error=line.last_error,
                ),
            }
            for line in page.rows
        ]
        return {
            "page": page,
            "rows": rows,
            "projects": browse.projects(),
            "counts": browse.counts(),
            "off": off,
        }


async def sessions(request: Request) -> Response:
    console = console_of(request)
    q = request.query_params
    project = q.get("project") or None
    since, until = query_date(q.get("since"), "since"), query_date(q.get("until"), "until")
    if until is not None:
        until += dt.timedelta(days=1)  # the day named is included
    found = await console.run(_sessions_rows, console, project, since, until, q.get("after"))
    return console.render(
        request,
        "sessions.html",
        **found,
        project=project or "",
        since=q.get("since") or "",
        until=q.get("until") or "",
        after=q.get("after") or "",
    )


def _audit_rows(
    console: Console, sid: str | None, before_audit: int | None, before_retraction: int | None
) -> dict[str, Any]:
    with console.runtime.state.read() as repos:
        browse = BrowseRepo(repos.conn)
        return {
            "audit": browse.audit(session_id=sid, before=before_audit),
            "retractions": browse.retractions(session_id=sid, before=before_retraction),
        }


async def audit(request: Request) -> Response:
    console = console_of(request)
    q = request.query_params
    sid = q.get("session") or None
    found = await console.run(
        _audit_rows,
        console,
        sid,
        query_int(q.get("before_audit"), "before_audit") or None,
        query_int(q.get("before_retraction"), "before_retraction") or None,
    )
    return console.render(request, "audit.html", session=sid or "", **found)


ROUTES = [
    Route("/sessions", sessions),
    Route("/session", session_page.session),
    Route("/entry", session_page.entry),
    Route("/search", search_page.search),
    Route("/audit", audit),
    Route("/health", health_page.health),
]
