"""On-demand reconsolidation: queue a session's owed span (or a seq range) with thresholds waived.

:func:`request_reconsolidation` computes the span like the turn-end trigger —
``[max(last_consolidated, inherited cut), min(durable end, last logged))``, or from ``from_seq``
instead of the watermark to re-summarise an already consolidated range — and records the request
in the audit trail (action ``reconsolidate``, outcome ``queued``, subject ``<from>-<to>``). The
``consolidate`` job picks up the newest queued request of a session, consolidates exactly that
span ignoring the turn and token thresholds, and settles it (``done``, ``empty`` or
``skipped``). Recording the request in the state database makes it survive a lost hint: the
embedded runner and the next run of the job find it again.

Answers (``ReconsolidateResult.reason``): ``''`` (queued), ``empty`` (nothing logged and not yet
consolidated), ``busy`` (a queued request already covers the span), ``disabled``
(``consolidation_enabled`` is false), ``unavailable`` (no model route), ``unknown-session``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Final

from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.state.audit import AuditEntry
from dsh_memory_worker.worker.state.database import Repos

ACTION: Final = "reconsolidate"
QUEUED: Final = "queued"
#: Reasons that are not errors (the reference's slash command reports them as success).
OK_REASONS: Final = frozenset({"", "empty", "busy"})


@dataclass(frozen=True, slots=True)
class ReconsolidateResult:
    session_id: str
    queued: bool
    reason: str
    from_seq: int = 0
    to_seq: int = 0

    @property
    def ok(self) -> bool:
        return self.reason in OK_REASONS


def newest_entry(repos: Repos, session_id: str, shelf: str, action: str) -> AuditEntry | None:
    """The session's newest audit entry of ``action`` on ``shelf``."""
    newest = None
    for entry in repos.audit.entries(session_id=session_id, action=action):
        if entry.shelf == shelf:
            newest = entry
    return newest


def pending_request(repos: Repos, session_id: str, shelf: str) -> tuple[int, int] | None:
    """The span of the session's newest request when it is still queued."""
    newest = newest_entry(repos, session_id, shelf, ACTION)
    if newest is None or newest.outcome != QUEUED or not newest.subject:
        return None
    low, _, high = newest.subject.partition("-")
    try:
        return int(low), int(high)
    except ValueError:
        return None


def settle_request(
    repos: Repos,
    session_id: str,
    shelf: str,
    span: tuple[int, int],
    outcome: str,
    detail: str | None = None,
) -> None:
    """Close the queued request for ``span`` with ``outcome`` (``done``, ``empty``...)."""
    repos.audit.record(
        ACTION,
        outcome,
        shelf=shelf,
        session_id=session_id,
        subject=f"{span[0]}-{span[1]}",
        detail=detail,
    )


def request_reconsolidation(
    runtime: Runtime, session_id: str, shelf: str, *, from_seq: int | None = None
) -> ReconsolidateResult:
    """Queue the session's owed span (thresholds waived); see the module docstring."""
    settings = runtime.settings
    if not settings.consolidation_enabled:
        return ReconsolidateResult(session_id, False, "disabled")
    if not settings.model_routes:
        return ReconsolidateResult(session_id, False, "unavailable")
    with runtime.state.transaction() as repos:
        session = repos.sessions.get(session_id)
        if session is None or session.forgotten:
            return ReconsolidateResult(session_id, False, "unknown-session")
        progress = repos.progress.get(shelf, session_id)
        start = progress.last_consolidated_seq if from_seq is None else max(0, from_seq)
        start = max(start, session.inherited_cut)
        end = min(session.durable_end_seq, progress.last_logged_seq)
        if end <= start:
            return ReconsolidateResult(session_id, False, "empty", start, max(start, end))
        pending = pending_request(repos, session_id, shelf)
        if pending is not None and pending[0] <= start and end <= pending[1]:
            return ReconsolidateResult(session_id, False, "busy", start, end)
        repos.audit.record(
            ACTION, QUEUED, shelf=shelf, session_id=session_id, subject=f"{start}-{end}"
        )
    return ReconsolidateResult(session_id, True, "", start, end)


def queued_sessions(runtime: Runtime, shelf: str, *, at: dt.datetime | None = None) -> list[str]:
    """Sessions whose newest reconsolidation request is still queued (for the embedded runner),
    now or at time ``at``.

    A session whose last ``consolidate`` run failed is left out for a while (a minute per failed
    attempt, at most an hour), so a broken endpoint is not called in a tight loop.
    """
    with runtime.state.read() as repos:
        newest = repos.audit.newest_with_outcome(ACTION, shelf, QUEUED)
        failures = {f.session_id: f for f in repos.failures.list(task="consolidate")}
    now = at or runtime.now()
    due = []
    for sid in newest:
        failure = failures.get(sid)
        if failure is not None:
            wait = dt.timedelta(seconds=min(3600, 60 * failure.attempts))
            if now - failure.last_at < wait:
                continue
        due.append(sid)
    return due


def backfill_consolidation(runtime: Runtime, shelf: str) -> list[ReconsolidateResult]:
    """At startup, queue the owed consolidation of sessions that lag (thresholds waived, like the
    reference's consolidation backfill): per project at most ``consolidation_backfill_per_scope``
    sessions, the biggest owed tails first. Nothing when consolidation is off or has no route."""
    settings = runtime.settings
    if not settings.consolidation_enabled or not settings.model_routes:
        return []
    with runtime.state.transaction() as repos:
        sessions = {s.session_id: s for s in repos.sessions.list()}
        rows = repos.progress.list(shelf)
    owed: dict[str, list[tuple[int, str]]] = {}
    for row in rows:
        session = sessions.get(row.session_id)
        if session is None:
            continue
        start = max(row.last_consolidated_seq, session.inherited_cut)
        end = min(session.durable_end_seq, row.last_logged_seq)
        if end > start:
            owed.setdefault(session.project, []).append((end - start, row.session_id))
    results = []
    for tails in owed.values():
        tails.sort(key=lambda item: (-item[0], item[1]))
        for _, session_id in tails[: settings.consolidation_backfill_per_scope]:
            result = request_reconsolidation(runtime, session_id, shelf)
            if result.queued:
                results.append(result)
    return results


# ------------------------------------------------------------------- rewrite requests (--replace)

#: Audit action of a rewrite request (``reconsolidate --replace`` / ``relog``); subject = mode.
REWRITE_ACTION: Final = "rewrite"


@dataclass(frozen=True, slots=True)
class RewriteRequest:
    """A queued rewrite of one session: its audit id, mode, ``--force`` and call budget."""

    id: int
    mode: str
    force: bool = False
    max_calls: int | None = None


def request_rewrite(
    repos: Repos,
    session_id: str,
    shelf: str,
    mode: str,
    *,
    force: bool = False,
    max_calls: int | None = None,
) -> int:
    """Record a rewrite request (``queued``); returns its audit id. A newer request replaces an
    older queued one of the session (the job runs the newest)."""
    repos.audit.record(
        REWRITE_ACTION,
        QUEUED,
        shelf=shelf,
        session_id=session_id,
        subject=mode,
        detail=json.dumps({"force": force, "max_calls": max_calls}),
    )
    newest = newest_entry(repos, session_id, shelf, REWRITE_ACTION)
    assert newest is not None  # recorded just above, in this transaction
    return newest.id


def pending_rewrite(repos: Repos, session_id: str, shelf: str) -> RewriteRequest | None:
    """The session's newest rewrite request when it is still queued."""
    newest = newest_entry(repos, session_id, shelf, REWRITE_ACTION)
    if newest is None or newest.outcome != QUEUED or not newest.subject:
        return None
    try:
        options = json.loads(newest.detail or "{}")
    except ValueError:
        options = {}
    budget = options.get("max_calls")
    return RewriteRequest(
        newest.id,
        newest.subject,
        bool(options.get("force")),
        budget if isinstance(budget, int) else None,
    )


def settle_rewrite(
    repos: Repos,
    session_id: str,
    shelf: str,
    request: RewriteRequest,
    outcome: str,
    result: dict[str, Any],
) -> None:
    """Close ``request`` with ``outcome`` (``done`` / ``failed``) and its result (the line and
    the counts, JSON in the audit detail)."""
    repos.audit.record(
        REWRITE_ACTION,
        outcome,
        shelf=shelf,
        session_id=session_id,
        subject=request.mode,
        detail=json.dumps({"request": request.id, **result}),
    )


def rewrite_result(
    repos: Repos, session_id: str, shelf: str, request_id: int
) -> tuple[str, dict[str, Any]] | None:
    """The outcome and result that settled request ``request_id``; None while it is queued."""
    for entry in repos.audit.entries(session_id=session_id, action=REWRITE_ACTION):
        if entry.shelf != shelf or entry.id <= request_id or entry.outcome == QUEUED:
            continue
        try:
            result = json.loads(entry.detail or "{}")
        except ValueError:
            continue
        if isinstance(result, dict) and result.get("request") == request_id:
            return entry.outcome, result
    return None


def queued_rewrites(runtime: Runtime, shelf: str) -> dict[str, int]:
    """Sessions whose newest rewrite request is still queued, with that request's id."""
    with runtime.state.read() as repos:
        return repos.audit.newest_with_outcome(REWRITE_ACTION, shelf, QUEUED)
