"""The reconcile's reading of the state database: only the sessions that may owe a job.

A home that has been followed for months holds thousands of sessions, nearly all of them
*settled*: logged to their durable end, idle-closed, their session node decided and (with
consolidation on) consolidated up to what is logged. :func:`unsettled_sessions` lets the
database leave those out, so a reconcile at rest reads no rows at all instead of every session
and every progress row. The condition is the one :func:`worker.watch.owed.owed_work` skips a
session by, written in SQL (SQLite and PostgreSQL alike; ``MAX`` / ``MIN`` of two values are
``CASE`` expressions, as neither ``max(a, b)`` nor ``GREATEST`` exists on both):

* ``durable_end_seq <= max(last_logged_seq, inherited_cut)`` (nothing left to log),
* ``closed_at IS NOT NULL`` (idle-closed),
* ``has_session_node`` or no own title (``last_title_seq`` NULL or below the inherited cut),
* with consolidation on: ``min(durable_end_seq, last_logged_seq) <=
  max(last_consolidated_seq, inherited_cut)`` (nothing logged left to consolidate).

A session without a progress row on the shelf counts as all watermarks 0, as in ``owed_work``.
Forgotten sessions are left out, like :meth:`worker.state.sessions.SessionRepo.list`.
:func:`open_sessions` is the idle check's reading: the sessions not closed yet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    SQLColumnExpression,
    and_,
    case,
    false,
    func,
    not_,
    or_,
    select,
)

from dsh_memory_worker.worker.state import progress, sessions
from dsh_memory_worker.worker.state.models import ProgressRow, SessionRow
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState, session_state

_Int = SQLColumnExpression[int]
_SPLIT = len(sessions.COLUMNS)


def _greatest(a: _Int, b: _Int) -> ColumnElement[Any]:
    return case((a > b, a), else_=b)


def _least(a: _Int, b: _Int) -> ColumnElement[Any]:
    return case((a < b, a), else_=b)


def settled_condition(*, consolidating: bool) -> ColumnElement[bool]:
    """True for a session (joined with its progress row, outer) that owes nothing."""
    logged = func.coalesce(ProgressRow.last_logged_seq, 0)
    cut = SessionRow.inherited_cut
    condition = and_(
        SessionRow.durable_end_seq <= _greatest(logged, cut),
        SessionRow.closed_at.is_not(None),
        or_(
            func.coalesce(ProgressRow.has_session_node, false()),
            SessionRow.last_title_seq.is_(None),
            SessionRow.last_title_seq < cut,
        ),
    )
    if consolidating:
        start = _greatest(func.coalesce(ProgressRow.last_consolidated_seq, 0), cut)
        condition = and_(condition, _least(SessionRow.durable_end_seq, logged) <= start)
    return condition


def unsettled_sessions(
    conn: Connection,
    shelf: str,
    *,
    consolidating: bool,
) -> list[tuple[SessionState, Progress | None]]:
    """Every session (not forgotten) that is not settled on ``shelf``, with its progress row
    (None when it has none), in no particular order."""
    query = _with_progress(shelf).where(not_(settled_condition(consolidating=consolidating)))
    return [_pair(row) for row in conn.execute(query)]


def sessions_by_id(
    conn: Connection,
    shelf: str,
    session_ids: Collection[str],
) -> list[tuple[SessionState, Progress | None]]:
    """The sessions (not forgotten) among ``session_ids``, with their progress rows on
    ``shelf``, in no particular order."""
    if not session_ids:
        return []
    query = _with_progress(shelf).where(SessionRow.session_id.in_(sorted(session_ids)))
    return [_pair(row) for row in conn.execute(query)]


def open_sessions(conn: Connection) -> list[SessionState]:
    """The sessions (not forgotten) that grew and are not idle-closed yet."""
    query = select(*sessions.COLUMNS).where(
        SessionRow.forgotten.is_(False),
        SessionRow.closed_at.is_(None),
        SessionRow.last_activity_at.is_not(None),
    )
    return [session_state(row) for row in conn.execute(query)]


def _with_progress(shelf: str) -> Select[Any]:
    """Sessions (not forgotten) outer-joined with their progress rows on ``shelf``: the session
    columns, then the progress columns (all NULL without a row)."""
    joined = SessionRow.__table__.outerjoin(
        ProgressRow.__table__,
        and_(ProgressRow.shelf == shelf, ProgressRow.session_id == SessionRow.session_id),
    )
    return (
        select(*sessions.COLUMNS, *progress.COLUMNS)
        .select_from(joined)
        .where(SessionRow.forgotten.is_(False))
    )


def _pair(row: Sequence[Any]) -> tuple[SessionState, Progress | None]:
    rest = row[_SPLIT:]
    return session_state(row[:_SPLIT]), (Progress(*rest) if rest[0] is not None else None)


__all__ = ["open_sessions", "sessions_by_id", "settled_condition", "unsettled_sessions"]
