"""Read-only pages of the state database for the console (``worker.console``): sessions with
their watermarks (keyset-paginated, filtered by project and activity date), the audit trail newest
first, and the time series the health page plots.

Every query is bounded by a ``limit`` and continues from a cursor (the last row's sort key), so a
page costs the same on the first page of 30 sessions as on page 60 of 3,000.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select

from dsh_memory_worker.worker.state.audit import AuditEntry, Retraction
from dsh_memory_worker.worker.state.models import (
    AuditRow,
    FailureRow,
    ModelCallRow,
    ProgressRow,
    RetractionRow,
    SessionRow,
)

T = TypeVar("T")
R = TypeVar("R", AuditEntry, Retraction)

#: A session's last activity: the time of its newest message, from the log; a session no scan
#: read a timed message of (none yet, or scanned before the column existed) sorts by when its
#: log last grew, or else by when it was first seen.
ACTIVITY = cast(  # never NULL: created_at is not
    "ColumnElement[dt.datetime]",
    func.coalesce(SessionRow.last_message_at, SessionRow.last_activity_at, SessionRow.created_at),
)


@dataclass(frozen=True, slots=True)
class SessionLine:
    """One row of the sessions page."""

    session_id: str
    project: str
    title: str | None
    activity: dt.datetime
    durable_end_seq: int
    inherited_cut: int
    last_logged_seq: int
    last_consolidated_seq: int
    closed: bool
    forgotten: bool
    #: the time of the newest message read from its log (``None``: none read yet)
    last_message_at: dt.datetime | None = None
    failures: int = 0
    last_error: str | None = None
    #: the task of the session's newest failure
    last_task: str | None = None

    @property
    def lag(self) -> int:
        """Events durably in the log and not logged yet."""
        if self.forgotten:
            return 0
        return max(0, self.durable_end_seq - max(self.last_logged_seq, self.inherited_cut))

    @property
    def consolidation_lag(self) -> int:
        if self.forgotten:
            return 0
        return max(0, self.last_logged_seq - max(self.last_consolidated_seq, self.inherited_cut))

    @property
    def cursor(self) -> str:
        """Where the next page starts (:func:`parse_cursor`)."""
        return f"{self.activity.isoformat()}|{self.session_id}"


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    rows: list[T]
    #: the cursor of the next page, ``None`` on the last page
    next: str | None


@dataclass(frozen=True, slots=True)
class Point:
    """One event of a time series: when, and how much."""

    at: dt.datetime
    value: float


def parse_cursor(cursor: str | None) -> tuple[dt.datetime, str] | None:
    """``<iso time>|<session id>`` → its parts; ``None`` for no (or a malformed) cursor."""
    if not cursor or "|" not in cursor:
        return None
    when, _, sid = cursor.partition("|")
    try:
        moment = dt.datetime.fromisoformat(when)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)), sid


class BrowseRepo:
    """The console's read-only queries, in the caller's (read) transaction."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def projects(self) -> list[str]:
        query = select(SessionRow.project).distinct().order_by(SessionRow.project)
        return [project for (project,) in self._conn.execute(query)]

    def sessions(
        self,
        shelf: str,
        *,
        project: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> Page[SessionLine]:
        """Sessions by last activity, newest first, ``limit`` at a time, from ``after`` (a
        :attr:`SessionLine.cursor`); only ``project``'s, only active in ``[since, until)``."""
        query = (
            select(
                SessionRow.session_id,
                SessionRow.project,
                SessionRow.title_text,
                ACTIVITY.label("activity"),
                SessionRow.durable_end_seq,
                SessionRow.inherited_cut,
                func.coalesce(ProgressRow.last_logged_seq, 0),
                func.coalesce(ProgressRow.last_consolidated_seq, 0),
                SessionRow.closed_at.is_not(None),
                SessionRow.forgotten,
                SessionRow.last_message_at,
            )
            .outerjoin(
                ProgressRow,
                and_(ProgressRow.session_id == SessionRow.session_id, ProgressRow.shelf == shelf),
            )
            .order_by(ACTIVITY.desc(), SessionRow.session_id.desc())
            .limit(limit + 1)
        )
        if project is not None:
            query = query.where(SessionRow.project == project)
        if since is not None:
            query = query.where(since <= ACTIVITY)
        if until is not None:
            query = query.where(until > ACTIVITY)
        start = parse_cursor(after)
        if start is not None:
            moment, sid = start
            earlier = ACTIVITY.op("<")(moment)
            same_time = ACTIVITY.op("=")(moment)
            query = query.where(or_(earlier, and_(same_time, SessionRow.session_id < sid)))
        rows = list(self._conn.execute(query))
        failures = self._failures([row[0] for row in rows[:limit]])
        lines = []
        for row in rows[:limit]:
            count, error, task = failures.get(row[0], (0, None, None))
            sid_, project, title, activity, end, cut, logged, consolidated, closed, gone, last = row
            lines.append(
                SessionLine(
                    sid_,
                    project,
                    title,
                    activity,
                    end,
                    cut,
                    logged,
                    consolidated,
                    bool(closed),
                    bool(gone),
                    last,
                    count,
                    error,
                    task,
                )
            )
        return Page(lines, lines[-1].cursor if len(rows) > limit else None)

    def _failures(self, session_ids: list[str]) -> dict[str, tuple[int, str | None, str | None]]:
        """Per session: how many tasks are failing, and the newest one's last error and task."""
        if not session_ids:
            return {}
        found: dict[str, tuple[int, str | None, str | None]] = {}
        query = (
            select(FailureRow.session_id, FailureRow.last_error, FailureRow.task)
            .where(FailureRow.session_id.in_(session_ids))
            .order_by(FailureRow.last_at.desc(), FailureRow.id.desc())
        )
        for sid, error, task in self._conn.execute(query):
            count, newest, newest_task = found.get(sid, (0, error, task))
            found[sid] = (count + 1, newest, newest_task)
        return found

    def audit(
        self, *, session_id: str | None = None, before: int | None = None, limit: int = 50
    ) -> Page[AuditEntry]:
        """Audit entries (repairs, forgets, rewrites, runs), newest first, before id ``before``."""
        return self._newest_first(AuditRow, AuditEntry, session_id, before, limit)

    def retractions(
        self, *, session_id: str | None = None, before: int | None = None, limit: int = 50
    ) -> Page[Retraction]:
        """Retractions of withdrawn message entries, newest first, before id ``before``."""
        return self._newest_first(RetractionRow, Retraction, session_id, before, limit)

    def _newest_first(
        self, table: Any, record: type[R], session_id: str | None, before: int | None, limit: int
    ) -> Page[R]:
        """Rows of an audit table as ``record``s by descending id (of one session when given);
        the next page's cursor is the last row's id."""
        columns = [getattr(table, name) for name in record.__dataclass_fields__]
        query = select(*columns).order_by(table.id.desc()).limit(limit + 1)
        if session_id is not None:
            query = query.where(table.session_id == session_id)
        if before is not None:
            query = query.where(table.id < before)
        rows = [record(**row._asdict()) for row in self._conn.execute(query)]
        return Page(rows[:limit], str(rows[limit - 1].id) if len(rows) > limit else None)

    def retractions_of(self, session_id: str, entries: list[str]) -> dict[str, Retraction]:
        """The newest retraction record of each of ``entries`` (of one session) that has one."""
        if not entries:
            return {}
        columns = [getattr(RetractionRow, name) for name in Retraction.__dataclass_fields__]
        query = (
            select(*columns)
            .where(RetractionRow.session_id == session_id, RetractionRow.entry.in_(entries))
            .order_by(RetractionRow.id)
        )
        return {row.entry: Retraction(**row._asdict()) for row in self._conn.execute(query)}

    def model_calls(self, since: dt.datetime) -> list[Point]:
        """Each model call since ``since``: its tokens (input + output)."""
        query = (
            select(
                ModelCallRow.at,
                cast(
                    "ColumnElement[int]",
                    func.coalesce(ModelCallRow.input_tokens, 0)
                    + func.coalesce(ModelCallRow.output_tokens, 0),
                ),
            )
            .where(ModelCallRow.at >= since)
            .order_by(ModelCallRow.at)
        )
        return [Point(at, float(tokens)) for at, tokens in self._conn.execute(query)]

    def audit_times(self, since: dt.datetime) -> list[Point]:
        """Each audit entry and retraction since ``since`` (value 1)."""
        found = [
            Point(at, 1.0)
            for (at,) in self._conn.execute(select(AuditRow.at).where(AuditRow.at >= since))
        ]
        found += [
            Point(at, 1.0)
            for (at,) in self._conn.execute(
                select(RetractionRow.at).where(RetractionRow.at >= since)
            )
        ]
        return sorted(found, key=lambda point: point.at)

    def lag_by_activity(self, shelf: str, since: dt.datetime, limit: int = 5000) -> list[Point]:
        """Each session active since ``since`` (newest first, at most ``limit``): its last
        activity and its logging lag now (events on disk not logged yet)."""
        page = self.sessions(shelf, since=since, limit=limit)
        return [Point(line.activity, float(line.lag)) for line in page.rows if not line.forgotten]

    def counts(self) -> dict[str, Any]:
        """Totals for the page headers."""
        sessions = self._conn.execute(select(func.count()).select_from(SessionRow)).scalar_one()
        failing = self._conn.execute(select(func.count()).select_from(FailureRow)).scalar_one()
        return {"sessions": int(sessions), "failures": int(failing)}
