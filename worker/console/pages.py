"""The console's read-only pages: Sessions, a session as memory sees it, an entry, Search, Audit
and Health. Each handler gathers its rows on the console's worker thread (state through the
repositories of :mod:`worker.state`, memory through the store adapter) and renders a template."""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memory.entries import session_name
from memory.store.base import StoreError
from worker.console.base import Console, session_id
from worker.console.plots import bar_plot, buckets, dot_plot
from worker.console.session_view import PAGE, messages, node_view, page_events, page_range
from worker.jobs.storeview import archives_above, derived_units, edges, span_summaries
from worker.state.browse import BrowseRepo, Point

SESSIONS_PER_PAGE = 50
SEARCH_LIMIT = 50


def _date(value: str | None, field: str) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.combine(dt.date.fromisoformat(value), dt.time(), dt.UTC)
    except ValueError:
        raise HTTPException(400, f"{field}: not a date (YYYY-MM-DD)") from None


def _int(value: str | None, field: str, default: int = 0) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise HTTPException(400, f"{field}: not a number") from None
    if number < 0:
        raise HTTPException(400, f"{field}: never negative")
    return number


def session_of(name: str, known: set[str] | None = None) -> str | None:
    """The session an entry name belongs to (``msg-<sid>-<N>``, ``session-<sid>``,
    ``sum-<sid>-<from>-<to>``), when it names one; archives and work units name none."""
    candidates: list[str] = []
    if name.startswith("session-"):
        candidates.append(name[len("session-") :])
    if name.startswith("msg-"):
        head, _, ordinal = name[4:].rpartition("-")
        if ordinal.isdigit():
            candidates.append(head)
    if name.startswith("sum-"):
        head, _, end = name[4:].rpartition("-")
        head, _, start = head.rpartition("-")
        if end.isdigit() and start.isdigit():
            candidates.append(head)
    for sid in candidates:
        if sid and (known is None or sid in known):
            return sid
    return None


def routes(console: Console) -> list[Route]:
    runtime, shelf = console.runtime, console.shelf

    def sessions_rows(
        project: str | None, since: dt.datetime | None, until: dt.datetime | None, after: str | None
    ) -> dict[str, Any]:
        with runtime.state.read() as repos:
            browse = BrowseRepo(repos.conn)
            page = browse.sessions(
                shelf,
                project=project,
                since=since,
                until=until,
                after=after,
                limit=SESSIONS_PER_PAGE,
            )
            return {"page": page, "projects": browse.projects(), "counts": browse.counts()}

    async def sessions(request: Request) -> Response:
        q = request.query_params
        project = q.get("project") or None
        since, until = _date(q.get("since"), "since"), _date(q.get("until"), "until")
        if until is not None:
            until += dt.timedelta(days=1)  # the day named is included
        found = await console.run(sessions_rows, project, since, until, q.get("after"))
        return console.render(
            request,
            "sessions.html",
            **found,
            project=project or "",
            since=q.get("since") or "",
            until=q.get("until") or "",
            after=q.get("after") or "",
        )

    def session_rows(sid: str, page: int) -> dict[str, Any]:
        with runtime.state.read() as repos:
            state = repos.sessions.get(sid)
            progress = repos.progress.find(shelf, sid)
        if state is None:
            raise HTTPException(404, "no such session in the state database")
        found = console.surveys.get(runtime, state) if state.path else None
        rows: dict[str, Any] = {
            "state": state,
            "progress": progress,
            "survey": found,
            "page": page,
            "messages": [],
            "derived": [],
            "audit": [],
            "node": None,
            "node_stored": False,
            "per_page": PAGE,
        }
        if found is None:
            return rows
        if page >= found.pages:
            raise HTTPException(404, f"the session has {found.pages} page(s)")
        start, end = page_range(found, state, page)
        events = page_events(runtime, state, start, end)
        logged = progress.last_logged_seq if progress is not None else 0
        with runtime.state.read() as repos:
            browse = BrowseRepo(repos.conn)
            rows["messages"] = messages(runtime, state, found, events, logged, browse)
            if page == 0:
                rows["audit"] = browse.audit(session_id=sid, limit=20).rows
        rows["node"] = node_view(found, state.forgotten)
        if page == 0:
            rows["derived"], rows["node_stored"] = derived(sid)
        return rows

    def derived(sid: str) -> tuple[list[dict[str, Any]], bool]:
        """The session's summaries, the archives above them and the work units derived from
        them, with who wrote each (route, model, prompt version)."""
        store = runtime.store(shelf)
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for ref in span_summaries(store, sid):
            rows.append(
                {"name": ref.name, "kind": "summary", "of": f"seqs {ref.from_seq}–{ref.to_seq - 1}"}
            )
            todo = archives_above(store, ref.name)
            while todo:
                archive = todo.pop(0)
                if archive not in seen:
                    seen.add(archive)
                    rows.append({"name": archive, "kind": "archive", "of": f"above {ref.name}"})
                    todo += archives_above(store, archive)
            for unit in derived_units(store, ref.name):
                if unit not in seen:
                    seen.add(unit)
                    rows.append({"name": unit, "kind": "work unit", "of": f"from {ref.name}"})
        with runtime.state.read() as repos:
            by_name = repos.provenance.get_many(shelf, [r["name"] for r in rows])
        for row in rows:
            row["provenance"] = by_name.get(row["name"])
        return rows, store.knowledge_get(session_name(sid)) is not None

    async def session(request: Request) -> Response:
        sid = session_id(request.query_params.get("id"))
        page = _int(request.query_params.get("page"), "page")
        found = await console.run(session_rows, sid, page)
        return console.render(request, "session.html", sid=sid, **found)

    def entry_rows(name: str) -> dict[str, Any]:
        store = runtime.store(shelf)
        found = store.knowledge_get(name)
        statements = edges(store, head=name) + edges(store, tail=name) if found else []
        with runtime.state.read() as repos:
            provenance = repos.provenance.get_many(shelf, [name]).get(name)
        return {
            "entry": found,
            "statements": statements,
            "provenance": provenance,
            "session": session_of(name),
        }

    async def entry(request: Request) -> Response:
        name = request.query_params.get("name")
        if not name:
            raise HTTPException(400, "name: which entry?")
        found = await console.run(entry_rows, name)
        return console.render(
            request, "entry.html", 200 if found["entry"] else 404, name=name, **found
        )

    def search_rows(query: str) -> dict[str, Any]:
        try:
            hits = runtime.store(shelf).search(query, limit=SEARCH_LIMIT)
        except StoreError as exc:
            return {"hits": [], "error": " ".join(str(exc).split())[:300]}
        with runtime.state.read() as repos:
            candidates = {sid for hit in hits if (sid := session_of(hit.key)) is not None}
            known = {sid for sid in candidates if repos.sessions.get(sid) is not None}
        return {
            "hits": [
                {
                    "key": hit.key,
                    "catalog": hit.catalog,
                    "text": hit.content.data,
                    "session": session_of(hit.key, known),
                }
                for hit in hits
            ],
            "error": None,
        }

    async def search(request: Request) -> Response:
        query = (request.query_params.get("q") or "").strip()
        found = await console.run(search_rows, query) if query else {"hits": [], "error": None}
        return console.render(request, "search.html", query=query, **found)

    def audit_rows(
        sid: str | None, before_audit: int | None, before_retraction: int | None
    ) -> dict[str, Any]:
        with runtime.state.read() as repos:
            browse = BrowseRepo(repos.conn)
            return {
                "audit": browse.audit(session_id=sid, before=before_audit),
                "retractions": browse.retractions(session_id=sid, before=before_retraction),
            }

    async def audit(request: Request) -> Response:
        q = request.query_params
        sid = q.get("session") or None
        found = await console.run(
            audit_rows,
            sid,
            _int(q.get("before_audit"), "before_audit") or None,
            _int(q.get("before_retraction"), "before_retraction") or None,
        )
        return console.render(request, "audit.html", session=sid or "", **found)

    def health_rows(hours: int) -> dict[str, Any]:
        end = dt.datetime.now(dt.UTC)
        start = end - dt.timedelta(hours=hours)
        with runtime.state.read() as repos:
            browse = BrowseRepo(repos.conn)
            calls = browse.model_calls(start)
            audits = browse.audit_times(start)
            lags = browse.lag_by_activity(shelf, start)
            failures = repos.failures.list()
        count = 24
        plots = [
            dot_plot(
                "Logging lag by last activity (one dot per session)",
                "events behind",
                lags,
                start,
                end,
            ),
            bar_plot(
                "Model calls",
                "calls",
                buckets([Point(p.at, 1.0) for p in calls], start, end, count),
                end,
            ),
            bar_plot(
                "Model tokens (input + output)", "tokens", buckets(calls, start, end, count), end
            ),
            bar_plot(
                "Retractions, repairs and forgets",
                "audit records",
                buckets(audits, start, end, count),
                end,
            ),
        ]
        return {
            "plots": plots,
            "failures": failures,
            "hours": hours,
            "behind": sum(1 for p in lags if p.value > 0),
        }

    async def health(request: Request) -> Response:
        hours = min(max(_int(request.query_params.get("hours"), "hours", 24), 1), 24 * 90)
        found = await console.run(health_rows, hours)
        return console.render(request, "health.html", **found)

    return [
        Route("/sessions", sessions),
        Route("/session", session),
        Route("/entry", entry),
        Route("/search", search),
        Route("/audit", audit),
        Route("/health", health),
    ]
