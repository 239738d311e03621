"""The ``rewrite`` job: carry out a session's queued ``reconsolidate --replace`` or ``relog``
request (:mod:`worker.jobs.rewrite`) under its lease, like every other job — in process, by
``run --once`` or on the Celery workers, retried with the rest.

The request (audit action ``rewrite``, outcome ``queued``, subject = mode, detail = options) is
what survives a lost hint; the job re-plans from the log, the store and the provenance table when
it runs, so a retry or a rerun after a crash redoes only what is still not current, and settles
the request (``done`` / ``failed``) with its result line and counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_memory_worker.memory.store.base import MemoryStore
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput, skipped
from dsh_memory_worker.worker.jobs.logread import PermanentJobError
from dsh_memory_worker.worker.jobs.provenance import current_writer
from dsh_memory_worker.worker.jobs.reconsolidate import (
    RewriteRequest,
    pending_rewrite,
    settle_rewrite,
)
from dsh_memory_worker.worker.jobs.retract import kinds_for
from dsh_memory_worker.worker.jobs.rewrite import RewriteOutcome, execute_rewrite, plan_rewrite
from dsh_memory_worker.worker.jobs.rewrite_lines import outcome_line
from dsh_memory_worker.worker.jobs.rewrite_plan import RewritePlan
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, read_session_log
from dsh_memory_worker.worker.state.provenance import Provenance


@dataclass(slots=True)
class Planned:
    """A session's plan and the log it was made from, or why there is none."""

    session_id: str
    log: SessionLog | None = None
    plan: RewritePlan | None = None
    error: str = ""


def plan_session(
    runtime: Runtime,
    store: MemoryStore,
    shelf: str,
    session_id: str,
    mode: str,
    *,
    force: bool = False,
) -> Planned:
    """Read the session's log, rows and provenance and plan its run (nothing is written)."""
    writer = current_writer(runtime) if runtime.settings.consolidation_enabled else None
    if writer is None and mode != "relog":  # relog re-renders messages without a model
        return Planned(
            session_id,
            error="unavailable — no model route is configured (set "
            "MEMORY_WORKER_MODEL_ROUTES) or consolidation_enabled is false",
        )
    with runtime.state.read() as repos:
        state = repos.sessions.get(session_id)
        progress = repos.progress.find(shelf, session_id)
        pending = repos.audit.pending_repairs(session_id)
        owed = repos.audit.owed_relogs(session_id)
    if state is None or not state.path:
        return Planned(session_id, error="unknown-session — the watcher has not seen this session")
    if state.forgotten:
        return Planned(session_id, error="unknown-session — the session was forgotten")
    log_ = read_session_log(state, kinds_for(runtime), runtime.hand_off, segments=runtime.segments)
    logged = progress.last_logged_seq if progress is not None else 0

    def provenance(names: list[str]) -> dict[str, Provenance]:
        with runtime.state.read() as repos:
            return repos.provenance.get_many(shelf, names)

    plan = plan_rewrite(
        runtime,
        store,
        log_,
        mode=mode,
        writer=writer,
        provenance=provenance,
        pending=pending,
        owed=owed,
        logged_to=logged,
        force=force,
    )
    return Planned(session_id, log_, plan)


def outcome_counts(outcome: RewriteOutcome, mode: str) -> dict[str, Any]:
    return {
        "line": outcome_line(outcome, mode),
        "messages": len(outcome.messages),
        "session_nodes": outcome.session_nodes,
        "summaries": len(outcome.summaries),
        "archives": len(outcome.archives),
        "work_units": len(outcome.units),
        "removed": len(outcome.removed),
        "failed": len(outcome.failed),
        "deferred": outcome.deferred,
        "calls": outcome.calls,
        "waiting": sum(outcome.waiting),
    }


def run_request(ctx: JobContext, request: RewriteRequest) -> dict[str, Any]:
    """Plan and carry out ``request`` for ``ctx``'s session; the result counts."""
    planned = plan_session(
        ctx.runtime, ctx.store(), ctx.shelf, ctx.session_id, request.mode, force=request.force
    )
    if planned.plan is None or planned.log is None:
        raise PermanentJobError(planned.error)
    plan = planned.plan
    if request.max_calls is not None:
        plan = plan.within(request.max_calls)
    outcome = execute_rewrite(ctx, planned.log, plan)
    return outcome_counts(outcome, request.mode)


def rewrite_job(ctx: JobContext) -> JobOutput:
    """The ``rewrite`` job (see the module docstring)."""
    with ctx.read() as repos:
        request = pending_rewrite(repos, ctx.session_id, ctx.shelf)
    if request is None:
        return skipped("no rewrite requested")
    try:
        result = run_request(ctx, request)
    except PermanentJobError as exc:
        with ctx.state() as repos:
            settle_rewrite(
                repos,
                ctx.session_id,
                ctx.shelf,
                request,
                "failed",
                {"line": f"failed — {exc}", "failed": 1},
            )
        raise
    # A transient error propagates: the request stays queued and the job is retried.
    failed = bool(result["failed"])
    with ctx.state() as repos:
        settle_rewrite(
            repos, ctx.session_id, ctx.shelf, request, "failed" if failed else "done", result
        )
    changed = any(
        result[key]
        for key in (
            "messages",
            "session_nodes",
            "summaries",
            "archives",
            "work_units",
            "removed",
            "waiting",
        )
    )
    return JobOutput(
        status="done" if changed else "skipped",
        detail=result["line"],
        written=result["summaries"]
        + result["archives"]
        + result["work_units"]
        + result["messages"]
        + result["session_nodes"],
        retracted=result["removed"],
    )


__all__ = ["Planned", "outcome_counts", "plan_session", "rewrite_job"]
