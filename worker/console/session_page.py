"""A session as memory sees it, memory first: the session node's title and where it came from,
then the span summaries, archive tiers and work units with their text (and what each was derived
from, linked), then the message log with each message's fate; and an entry's page, its text
rendered (role, time, content) with the raw stored form one click away."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from dsh_memory_worker.memory.entries import session_name
from dsh_memory_worker.memory.store.base import MemoryStore
from dsh_memory_worker.worker.console.base import Console, console_of, query_int, session_id
from dsh_memory_worker.worker.console.entry_text import rendered, session_of
from dsh_memory_worker.worker.console.session_view import (
    PAGE,
    messages,
    node_view,
    page_events,
    page_range,
)
from dsh_memory_worker.worker.consolidation_state import session_state, why_off_of
from dsh_memory_worker.worker.jobs.storeview import (
    archive_level,
    archives_above,
    derived_units,
    edges,
    span_summaries,
    summary_members,
    unit_sources,
)
from dsh_memory_worker.worker.state.browse import BrowseRepo

#: Links shown of what an entry was derived from (the rest is counted).
SOURCES_SHOWN = 12


def _sources(names: list[str]) -> dict[str, Any]:
    return {"shown": names[:SOURCES_SHOWN], "more": max(0, len(names) - SOURCES_SHOWN)}


def derived(console: Console, sid: str) -> tuple[list[dict[str, Any]], Any]:
    """The session's summaries, the archives above them and the work units derived from them,
    each with its text, what it was derived from and who wrote it (route, model, prompt
    version); and the session node entry (``None`` when memory holds none)."""
    store = console.runtime.store(console.shelf)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ref in span_summaries(store, sid):
        rows.append(
            _row(store, ref.name, "span summary", summary_members(store, ref.name))
            | {"seqs": f"seqs {ref.from_seq}–{ref.to_seq - 1}"}
        )
        todo = archives_above(store, ref.name)
        while todo:
            archive = todo.pop(0)
            if archive not in seen:
                seen.add(archive)
                tier = archive_level(archive)
                rows.append(
                    _row(store, archive, f"archive tier {tier}", summary_members(store, archive))
                )
                todo += archives_above(store, archive)
        for unit in derived_units(store, ref.name):
            if unit not in seen:
                seen.add(unit)
                rows.append(_row(store, unit, "work unit", unit_sources(store, unit)))
    with console.runtime.state.read() as repos:
        by_name = repos.provenance.get_many(console.shelf, [r["name"] for r in rows])
    for row in rows:
        row["provenance"] = by_name.get(row["name"])
    return rows, store.knowledge_get(session_name(sid))


def _row(store: MemoryStore, name: str, kind: str, sources: list[str]) -> dict[str, Any]:
    found = store.knowledge_get(name)
    return {
        "name": name,
        "kind": kind,
        "seqs": "",
        "text": None if found is None else rendered(found.content.data),
        "from": _sources(sources),
    }


def _session_rows(console: Console, sid: str, page: int) -> dict[str, Any]:
    runtime, shelf = console.runtime, console.shelf
    with runtime.state.read() as repos:
        state = repos.sessions.get(sid)
        progress = repos.progress.find(shelf, sid)
        failures = [f for f in repos.failures.list() if f.session_id == sid]
    if state is None:
        raise HTTPException(404, "no such session in the state database")
    found = console.surveys.get(runtime, state) if state.path else None
    logged = progress.last_logged_seq if progress is not None else 0
    consolidated = progress.last_consolidated_seq if progress is not None else 0
    rows: dict[str, Any] = {
        "state": state,
        "progress": progress,
        "survey": found,
        "page": page,
        "messages": [],
        "derived": [],
        "audit": [],
        "node": None,
        "node_entry": None,
        "per_page": PAGE,
        "consolidation": session_state(
            off=why_off_of(runtime.settings),
            forgotten=state.forgotten,
            lag=0 if state.forgotten else max(0, logged - max(consolidated, state.inherited_cut)),
            failing_task=failures[0].task if failures else None,
            failing_error=failures[0].last_error if failures else None,
        ),
    }
    if found is None:
        return rows
    if page >= found.pages:
        raise HTTPException(404, f"the session has {found.pages} page(s)")
    start, end = page_range(found, state, page)
    events = page_events(runtime, state, start, end)
    with runtime.state.read() as repos:
        browse = BrowseRepo(repos.conn)
        rows["messages"] = messages(runtime, state, found, events, logged, browse)
        if page == 0:
            rows["audit"] = browse.audit(session_id=sid, limit=20).rows
    rows["node"] = node_view(found, state.forgotten)
    if page == 0:
        rows["derived"], node_entry = derived(console, sid)
        rows["node_entry"] = None if node_entry is None else node_entry.content.data
    return rows


async def session(request: Request) -> Response:
    console = console_of(request)
    sid = session_id(request.query_params.get("id"))
    page = query_int(request.query_params.get("page"), "page")
    found = await console.run(_session_rows, console, sid, page)
    return console.render(request, "session.html", sid=sid, **found)


def _entry_rows(console: Console, name: str) -> dict[str, Any]:
    store = console.runtime.store(console.shelf)
    found = store.knowledge_get(name)
    statements = edges(store, head=name) + edges(store, tail=name) if found else []
    with console.runtime.state.read() as repos:
        provenance = repos.provenance.get_many(console.shelf, [name]).get(name)
    return {
        "entry": found,
        "text": None if found is None else rendered(found.content.data),
        "statements": statements,
        "provenance": provenance,
        "session": session_of(name),
    }


async def entry(request: Request) -> Response:
    console = console_of(request)
    name = request.query_params.get("name")
    if not name:
        raise HTTPException(400, "name: which entry?")
    found = await console.run(_entry_rows, console, name)
    return console.render(request, "entry.html", 200 if found["entry"] else 404, name=name, **found)
