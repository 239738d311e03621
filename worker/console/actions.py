"""The console's actions, each through the same job functions as its CLI command (never a second
path): forget a session (``memory-worker forget``: the plan first, then a confirmation), retract
now (``memory-worker retract``) and verify-forgetting (``memory-worker verify-forgetting``).
Every action is a POST with the CSRF token (:func:`worker.console.security.checked_form`); each
endpoint is a module-level function."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dsh_memory_worker.worker.console.base import Console, console_of, session_id
from dsh_memory_worker.worker.console.security import checked_form
from dsh_memory_worker.worker.jobs.forget import forget_sessions
from dsh_memory_worker.worker.jobs.retract_run import audit_run, execute_one, plan_run, undone
from dsh_memory_worker.worker.verify.run import verify


def _forget_plan(console: Console, sid: str) -> dict[str, Any]:
    results, failed = forget_sessions(console.runtime, console.shelf, [sid], dry_run=True)
    with console.runtime.state.read() as repos:
        state = repos.sessions.get(sid)
    return {
        "items": results[0].items if results else [],
        "failed": failed,
        "known": state is not None,
        "forgotten": bool(state and state.forgotten),
    }


async def forget_form(request: Request) -> Response:
    console = console_of(request)
    sid = session_id(request.query_params.get("id"))
    found = await console.run(_forget_plan, console, sid)
    return console.render(request, "forget.html", sid=sid, done=False, **found)


def _forget_now(console: Console, sid: str) -> dict[str, Any]:
    results, failed = forget_sessions(console.runtime, console.shelf, [sid])
    return {
        "items": results[0].items if results else [],
        "removed": results[0].removed if results else [],
        "failed": failed,
    }


async def forget(request: Request) -> Response:
    console = console_of(request)
    form = await checked_form(request, console.access)
    sid = session_id(form.get("id"))
    if form.get("confirm") != "yes":
        raise HTTPException(400, "confirm: the plan was not confirmed")
    found = await console.run(_forget_now, console, sid)
    return console.render(
        request,
        "forget.html",
        500 if found["failed"] else 200,
        sid=sid,
        done=True,
        known=True,
        forgotten=True,
        **found,
    )


def _retract_now(console: Console, sid: str) -> dict[str, Any]:
    runtime, shelf = console.runtime, console.shelf
    kinds, planned = plan_run(runtime, shelf, [sid], [])
    results: dict[str, dict[str, Any]] = {}
    for p in planned:
        if p.log is not None and p.plan is not None and not p.plan.empty:
            results[p.session_id] = execute_one(runtime, shelf, p.session_id, p.log)
    audit_run(runtime, shelf, [sid], kinds, results)
    return {
        "planned": planned,
        "results": results,
        "undone": undone(planned, results),
        "kinds": kinds,
    }


async def retract(request: Request) -> Response:
    console = console_of(request)
    form = await checked_form(request, console.access)
    sid = session_id(form.get("id"))
    found = await console.run(_retract_now, console, sid)
    return console.render(
        request, "retract.html", 500 if found["undone"] else 200, sid=sid, **found
    )


async def verify_form(request: Request) -> Response:
    return console_of(request).render(request, "verify.html", report=None)


async def verify_now(request: Request) -> Response:
    console = console_of(request)
    await checked_form(request, console.access)
    report = await console.run(verify, console.runtime, console.shelf)
    return console.render(request, "verify.html", report=report)


ROUTES = [
    Route("/forget", forget_form, methods=["GET"]),
    Route("/forget", forget, methods=["POST"]),
    Route("/retract", retract, methods=["POST"]),
    Route("/verify", verify_form, methods=["GET"]),
    Route("/verify", verify_now, methods=["POST"]),
]
