"""The audit trail: each retraction of a withdrawn message, and every other repair."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, bindparam, func, insert, select

from dsh_memory_worker.worker.state._sql import one_line
from dsh_memory_worker.worker.state.entry_ids import stable_id
from dsh_memory_worker.worker.state.leases import ClockedRepo
from dsh_memory_worker.worker.state.models import AuditRow, RetractionRow

RetractionOutcome = Literal["retracted", "absent", "failed", "would-retract"]
RETRACTION_OUTCOMES: tuple[str, ...] = ("retracted", "absent", "failed", "would-retract")
DETAIL_MAX = 2000

#: The audit actions of a repair of derived memory (:mod:`worker.jobs.repair`): an intent is
#: recorded before a summary is touched and closed by its ``repair-summary`` outcome, so a crash
#: in between leaves the intent open for the next run.
ACTION_INTENT = "repair-intent"
ACTION_SUMMARY = "repair-summary"
ACTION_ARCHIVE = "repair-archive"
ACTION_UNIT = "repair-work-unit"
#: A summary over messages a model-less ``relog`` re-rendered: its rewrite waits for a model
#: route (closed by the ``repair-summary`` of that rewrite).
ACTION_RELOG_OWED = "relog-owed"
#: An archive ``forget`` dropped without a model call: its regeneration is owed (closed by its
#: ``repair-archive`` outcome, :mod:`worker.jobs.owed_archives`).
ACTION_ARCHIVE_OWED = "archive-owed"


@dataclass(frozen=True)
class Retraction:
    id: int
    shelf: str
    session_id: str
    ordinal: int
    entry: str
    marker_seq: int
    source_kind: str
    outcome: str
    detail: str | None
    at: dt.datetime


@dataclass(frozen=True)
class AuditEntry:
    id: int
    action: str
    shelf: str | None
    session_id: str | None
    subject: str | None
    cause_marker_seq: int | None
    source_kind: str | None
    outcome: str
    detail: str | None
    at: dt.datetime


_RETRACTION_COLUMNS = tuple(getattr(RetractionRow, f) for f in Retraction.__dataclass_fields__)
_AUDIT_COLUMNS = tuple(getattr(AuditRow, f) for f in AuditEntry.__dataclass_fields__)


def _detail(detail: str | None) -> str | None:
    return one_line(detail, DETAIL_MAX) if detail else None


@cache
def _entries_query(by_session: bool, by_action: bool) -> Select[Any]:
    """``entries``' query, built once per filter combination (every ``log_span`` asks)."""
    query = select(*_AUDIT_COLUMNS).order_by(AuditRow.id)
    if by_session:
        query = query.where(AuditRow.session_id == bindparam("p_sid"))
    if by_action:
        query = query.where(AuditRow.action == bindparam("p_action"))
    return query


@cache
def _newest_query() -> Select[str | None, int]:
    """Per session, its newest entry of an action on a shelf, kept when it has an outcome."""
    newest = (
        select(AuditRow.session_id, func.max(AuditRow.id).label("id"))
        .where(
            AuditRow.action == bindparam("p_action"),
            AuditRow.shelf == bindparam("p_shelf"),
            AuditRow.session_id.is_not(None),
            AuditRow.session_id != "",
        )
        .group_by(AuditRow.session_id)
        .subquery()
    )
    return (
        select(AuditRow.session_id, AuditRow.id)
        .join(newest, AuditRow.id == newest.c.id)
        .where(AuditRow.outcome == bindparam("p_outcome"))
        .order_by(AuditRow.session_id)
    )


@cache
def _unclosed_query(by_session: bool) -> Select[str | None, str | None]:
    """``(session, subject)`` pairs whose newest entry among an opening and a closing action is
    an opening one (ids grow: a recorded intent not followed by its end)."""
    newest = (
        select(func.max(AuditRow.id).label("id"))
        .where(
            AuditRow.action.in_([bindparam("p_open"), bindparam("p_close")]),
            AuditRow.subject.is_not(None),
            AuditRow.session_id.is_not(None),
        )
        .group_by(AuditRow.session_id, AuditRow.subject)
    )
    if by_session:
        newest = newest.where(AuditRow.session_id == bindparam("p_sid"))
    found = newest.subquery()
    return (
        select(AuditRow.session_id, AuditRow.subject)
        .join(found, AuditRow.id == found.c.id)
        .where(AuditRow.action == bindparam("p_open"))
        .order_by(AuditRow.session_id, AuditRow.subject)
    )


class AuditRepo(ClockedRepo):
    def _insert(self, row: type[AuditRow] | type[RetractionRow], **values: Any) -> int:
        """Insert one row of ``values`` (its ``detail`` cut to one line), dated now; its id."""
        values["detail"] = _detail(values["detail"])
        statement = insert(row).values(**values, at=self._clock()).returning(row.id)
        return int(self._conn.execute(statement).scalar_one())

    def record_retraction(
        self,
        *,
        shelf: str,
        session_id: str,
        ordinal: int,
        entry: str,
        marker_seq: int,
        source_kind: str,
        outcome: RetractionOutcome,
        detail: str | None = None,
    ) -> int:
        """Log what happened to one withdrawn message entry; returns the row id."""
        if outcome not in RETRACTION_OUTCOMES:
            raise ValueError(f"unknown retraction outcome {outcome!r}")
        return self._insert(
            RetractionRow,
            shelf=shelf,
            session_id=session_id,
            ordinal=ordinal,
            entry=entry,
            marker_seq=marker_seq,
            source_kind=source_kind,
            outcome=outcome,
            detail=detail,
        )

    def retractions(
        self, *, session_id: str | None = None, shelf: str | None = None
    ) -> list[Retraction]:
        """Retraction records, oldest first."""
        query = select(*_RETRACTION_COLUMNS).order_by(RetractionRow.id)
        if session_id is not None:
            query = query.where(RetractionRow.session_id == session_id)
        if shelf is not None:
            query = query.where(RetractionRow.shelf == shelf)
        return [Retraction(**row._asdict()) for row in self._conn.execute(query)]

    def record(
        self,
        action: str,
        outcome: str,
        *,
        shelf: str | None = None,
        session_id: str | None = None,
        subject: str | None = None,
        cause_marker_seq: int | None = None,
        source_kind: str | None = None,
        detail: str | None = None,
    ) -> int:
        """Log one repair (``reconsolidate``, ``forget``, ``repair-edges``...); returns its id.
        A work unit's name is kept as its stable id (:mod:`worker.state.entry_ids`)."""
        subject = None if subject is None else stable_id(subject)
        return self._insert(
            AuditRow,
            action=action,
            outcome=outcome,
            shelf=shelf,
            session_id=session_id,
            subject=subject,
            cause_marker_seq=cause_marker_seq,
            source_kind=source_kind,
            detail=detail,
        )

    def entries(
        self, *, session_id: str | None = None, action: str | None = None
    ) -> list[AuditEntry]:
        """Audit entries, oldest first."""
        query = _entries_query(session_id is not None, action is not None)
        rows = self._conn.execute(query, {"p_sid": session_id, "p_action": action})
        return [AuditEntry(**row._asdict()) for row in rows]

    def newest_with_outcome(self, action: str, shelf: str, outcome: str) -> dict[str, int]:
        """Sessions whose newest ``action`` entry on ``shelf`` has ``outcome`` (e.g. a request
        still queued), with that entry's id; one query, whatever the length of the history."""
        rows = self._conn.execute(
            _newest_query(), {"p_action": action, "p_shelf": shelf, "p_outcome": outcome}
        )
        # The query keeps named sessions only: the test narrows the type, it drops nothing.
        return {sid: int(entry_id) for sid, entry_id in rows if sid is not None}

    def unclosed(
        self, opening: str, closing: str, *, session_id: str | None = None
    ) -> list[tuple[str, str]]:
        """``(session, subject)`` pairs whose newest ``opening`` entry (a recorded intent) has
        no newer ``closing`` entry, in order; of one session with ``session_id``. One query,
        whatever the length of the history."""
        rows = self._conn.execute(
            _unclosed_query(session_id is not None),
            {"p_open": opening, "p_close": closing, "p_sid": session_id},
        )
        # The query keeps named sessions and subjects only (the test narrows the type).
        return [(sid, subject) for sid, subject in rows if sid is not None and subject is not None]

    def pending_repairs(self, session_id: str) -> set[str]:
        """The session's summaries whose repair was started (intent recorded) and not
        finished."""
        return {
            subject
            for _, subject in self.unclosed(ACTION_INTENT, ACTION_SUMMARY, session_id=session_id)
        }

    def owed_relogs(self, session_id: str) -> set[str]:
        """The session's summaries a model-less ``relog`` left owed and no rewrite has done
        since."""
        return {
            subject
            for _, subject in self.unclosed(
                ACTION_RELOG_OWED, ACTION_SUMMARY, session_id=session_id
            )
        }

    def owed_archives(self) -> list[tuple[str, str]]:
        """``(session, archive)`` pairs: archives a ``forget`` of the session dropped and no
        regeneration has closed since."""
        return self.unclosed(ACTION_ARCHIVE_OWED, ACTION_ARCHIVE)

    def sessions_with_unclosed(self, opening: str, closing: str) -> list[str]:
        """The sessions :meth:`unclosed` names, in order."""
        return list(dict.fromkeys(sid for sid, _ in self.unclosed(opening, closing)))
