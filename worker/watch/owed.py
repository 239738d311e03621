"""Owed work, re-derived from the log's recorded facts plus the watermarks (never from messages).

The daemon's reconcile loop (:meth:`worker.watch.watcher.Watcher.reconcile`) sends a hint for
each item :func:`owed_work` returns, so a lost or purged hint delays work but never loses it:

* ``log_span`` — the watermark lags the durable end (``log lag``), or the session went idle and
  was never closed (``idle-close``: the close is what owes its consolidation);
* ``session_node`` — a title / compaction summary was seen and there is no node yet;
* ``consolidate`` — an idle-closed session whose ``last_consolidated_seq`` lags its logged part
  (``consolidation``), or a queued ``reconsolidate`` request (``reconsolidate request``);
* ``retract`` — a repair a crash interrupted (intent recorded, not finished: ``repair``), or
  archives a ``forget`` dropped and owes a regeneration (``owed archives``, of the forgotten
  session: :mod:`worker.jobs.owed_archives`);
* ``rewrite`` — a queued ``reconsolidate --replace`` / ``relog`` request (``rewrite request``).

Failing sessions are not hot-looped: a permanent failure of the job is not retried until the log
grows again, and a job that keeps failing transiently waits a minute per recorded attempt (at
most an hour) since its last failure — the same rule the embedded runner applies to queued
reconsolidation requests. Of a project's closed sessions that owe consolidation only the
``consolidation_backfill_per_scope`` biggest owed tails are returned at a time (the next ones once
those are done), so a backlog reaches the model at a bounded rate.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh_memory_worker.worker.jobs.pending_repairs import sessions_with_pending_repairs
from dsh_memory_worker.worker.jobs.reconsolidate import queued_rewrites, queued_sessions
from dsh_memory_worker.worker.jobs.runtime import Runtime, ms_of
from dsh_memory_worker.worker.names import (
    JOB_CONSOLIDATE,
    JOB_LOG_SPAN,
    JOB_RETRACT,
    JOB_REWRITE,
    JOB_SESSION_NODE,
)
from dsh_memory_worker.worker.state.failures import Failure
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState
from dsh_memory_worker.worker.state.unsettled import sessions_by_id, unsettled_sessions

#: Jobs whose owed work comes from a lagging watermark that only the job itself can move.
BACKED_OFF_JOBS: Final = frozenset({JOB_CONSOLIDATE, JOB_RETRACT, JOB_REWRITE})
#: A permanent failure of one of these stops every hint for the session until its log grows.
_LOG_TASKS: Final = ("scan", JOB_LOG_SPAN, JOB_SESSION_NODE)
_BACKOFF_STEP_S: Final = 60.0
_BACKOFF_MAX_S: Final = 3600.0


@dataclass(frozen=True, slots=True)
class Owed:
    """One job a session owes, why, and the watermark state it was derived from (``key``: the
    same key again means no progress since)."""

    job: str
    session_id: str
    why: str
    key: tuple[int, ...] = ()


def backoff_s(attempts: int) -> float:
    """How long a job that failed ``attempts`` times in a row waits before it is hinted again."""
    return min(_BACKOFF_MAX_S, _BACKOFF_STEP_S * max(0, attempts))


def backing_off(
    failure: Failure | None, state: SessionState, now: dt.datetime, *, permanent_only: bool = False
) -> bool:
    """True while a failed job should not be hinted again (see the module docstring)."""
    if failure is None or (permanent_only and not failure.permanent):
        return False
    if failure.permanent:
        return state.last_activity_at is None or failure.last_at >= state.last_activity_at
    return now - failure.last_at < dt.timedelta(seconds=backoff_s(failure.attempts))


def owed_work(runtime: Runtime, shelf: str, *, at: dt.datetime | None = None) -> list[Owed]:
    """Every job owed on ``shelf``, in a stable order (sessions sorted, jobs in pipeline order),
    now or, with ``at``, at that time (the back-offs judged then; :func:`owed_by_clock`).

    Only the sessions the database does not find settled are read
    (:func:`worker.state.unsettled.unsettled_sessions`), plus those a queued request or an
    interrupted repair names: a reconcile of a settled home reads no session row."""
    settings = runtime.settings
    now = at or runtime.now()
    consolidating = settings.consolidation_enabled and bool(settings.model_routes)
    with runtime.state.read() as repos:
        found = unsettled_sessions(repos.conn, shelf, consolidating=consolidating)
        failures = {(f.task, f.session_id): f for f in repos.failures.list()}
    # Requests and repairs may name settled sessions: those are read too (one query).
    queued = queued_sessions(runtime, shelf, at=now) if settings.model_routes else []
    repairs = sessions_with_pending_repairs(runtime)
    rewrites = queued_rewrites(runtime, shelf)
    with runtime.state.read() as repos:  # one query; usually none (forgotten sessions)
        owing = dict.fromkeys(sid for sid, _ in repos.audit.owed_archives())
        dropped = {sid: repos.sessions.get(sid) for sid in owing}
    named = {*queued, *repairs, *rewrites}
    by_id = {state.session_id: state for state, _ in found}
    progress = {state.session_id: row for state, row in found if row is not None}
    missing = named.difference(by_id)
    if missing:
        with runtime.state.read() as repos:
            for state, row in sessions_by_id(repos.conn, shelf, missing):
                by_id[state.session_id] = state
                if row is not None:
                    progress[state.session_id] = row
    sessions = sorted((state for state, _ in found), key=lambda s: s.session_id)
    idle_ms = int(settings.idle_close_s * 1000)
    owed: list[Owed] = []
    closed_tails: dict[str, list[tuple[int, Owed]]] = {}
    checked: dict[str, bool] = {}

    def readable(sid: str) -> SessionState | None:
        """The session when its log is there and not permanently failing (checked once, and
        only for a session that owes something: a settled one is not touched)."""
        state = by_id.get(sid)
        if state is None:
            return None
        ok = checked.get(sid)
        if ok is None:
            # With shipping on, the log lives in the shipped segments, not at ``state.path``.
            ok = checked[sid] = (settings.shipping or Path(state.path).exists()) and not any(
                backing_off(failures.get((task, sid)), state, now, permanent_only=True)
                for task in _LOG_TASKS
            )
        return state if ok else None

    for state in sessions:
        sid = state.session_id
        row = progress.get(sid) or Progress(shelf, sid)
        logged = max(row.last_logged_seq, state.inherited_cut)
        start = max(row.last_consolidated_seq, state.inherited_cut)
        end = min(state.durable_end_seq, row.last_logged_seq)
        if (
            state.durable_end_seq <= logged
            and state.closed_at is not None
            and (row.has_session_node or not state.owns_title)
            and not (consolidating and end > start)
        ):
            continue  # settled: logged to its durable end, closed, noded, consolidated
        if readable(sid) is None:
            continue  # the log is gone, or a permanent problem reading / logging it
        if state.durable_end_seq > logged:
            owed.append(Owed(JOB_LOG_SPAN, sid, "log lag", (logged, state.durable_end_seq)))
        elif state.closed_at is None and _idle(runtime, state, idle_ms):
            owed.append(Owed(JOB_LOG_SPAN, sid, "idle-close", (logged,)))
        if not row.has_session_node and state.owns_title:
            owed.append(Owed(JOB_SESSION_NODE, sid, "session node", ()))
        if (
            consolidating
            and state.closed_at is not None
            and end > start
            and not backing_off(failures.get((JOB_CONSOLIDATE, sid)), state, now)
        ):
            item = Owed(JOB_CONSOLIDATE, sid, "consolidation", (start, end))
            closed_tails.setdefault(state.project, []).append((end - start, item))
    for tails in closed_tails.values():
        tails.sort(key=lambda pair: (-pair[0], pair[1].session_id))
        owed.extend(item for _, item in tails[: settings.consolidation_backfill_per_scope])
    hinted = {(o.job, o.session_id) for o in owed}
    for sid in queued:  # a request needs a route; queued_sessions backs off failures
        if readable(sid) is not None and (JOB_CONSOLIDATE, sid) not in hinted:
            row = progress.get(sid) or Progress(shelf, sid)
            owed.append(
                Owed(
                    JOB_CONSOLIDATE,
                    sid,
                    "reconsolidate request",
                    (row.last_consolidated_seq, row.last_logged_seq),
                )
            )
    for sid in repairs:
        known = readable(sid)
        if known is not None and not backing_off(failures.get((JOB_RETRACT, sid)), known, now):
            owed.append(Owed(JOB_RETRACT, sid, "repair", ()))
    for sid, known in dropped.items():  # forgotten: its log is not read, only archives owed
        if known is not None and not backing_off(failures.get((JOB_RETRACT, sid)), known, now):
            owed.append(Owed(JOB_RETRACT, sid, "owed archives", ()))
    for sid, request in rewrites.items():  # --replace / relog
        known = readable(sid)
        if known is not None and not backing_off(failures.get((JOB_REWRITE, sid)), known, now):
            owed.append(Owed(JOB_REWRITE, sid, "rewrite request", (request,)))
    return owed


#: Later than any back-off ends (:func:`owed_by_clock`).
_LATER: Final = dt.datetime.max.replace(tzinfo=dt.UTC) - dt.timedelta(days=1)


def owed_by_clock(runtime: Runtime, shelf: str) -> bool:
    """Whether any work on ``shelf`` is owed now or will be owed by the clock alone, with no file
    changing: :func:`owed_work` judged after every back-off has passed (a failing consolidation,
    retraction or rewrite is owed again when its wait ends). A permanent failure waits for its
    log to grow, which changes a file; a held lease blocks a job, which a run reports."""
    return bool(owed_work(runtime, shelf, at=_LATER))


def _idle(runtime: Runtime, state: SessionState, idle_ms: int) -> bool:
    if runtime.force_idle:
        return True
    if state.last_activity_at is None:
        return False
    return runtime.now_ms() - (ms_of(state.last_activity_at) or 0) >= idle_ms


__all__ = [
    "BACKED_OFF_JOBS",
    "Owed",
    "backing_off",
    "backoff_s",
    "owed_by_clock",
    "owed_work",
]
