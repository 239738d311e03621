"""Sessions as the watcher sees them: scan position, durable end, checkpoints, title, flags."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from sqlalchemy import Table, bindparam, select

from dsh_memory_worker.worker.state import prepared
from dsh_memory_worker.worker.state._sql import insert_ignore, storable_text, update_by_key
from dsh_memory_worker.worker.state.leases import ClockedRepo
from dsh_memory_worker.worker.state.models import SessionRow


@dataclass(frozen=True)
class Checkpoint:
    """The event ``seq`` starts at byte ``offset``; ``ordinal`` messages precede it."""

    seq: int
    offset: int
    ordinal: int


@dataclass(frozen=True)
class SessionState:
    session_id: str
    path: str
    generation: int = 0
    project: str = ""
    header: dict[str, Any] = field(default_factory=dict)
    inherited_cut: int = 0
    scan_offset: int = 0
    scan_seq: int = 0
    checkpoints: tuple[Checkpoint, ...] = ()
    durable_end_seq: int = 0
    last_turn_end_seq: int | None = None
    last_title_seq: int | None = None
    title_text: str | None = None
    last_activity_at: dt.datetime | None = None
    closed_at: dt.datetime | None = None
    forgotten: bool = False

    @property
    def owns_title(self) -> bool:
        """Whether the session logged a title or compaction summary of its own (at or after a
        fork's inherited cut): only then is a session node owed or decided. A fork child whose
        only title is its parent's (before the cut) has nothing to decide, whichever run reads
        it, so ``progress.has_session_node`` stays as a clean run leaves it."""
        return self.last_title_seq is not None and self.last_title_seq >= self.inherited_cut

    def checkpoint_at_or_before(self, seq: int) -> Checkpoint | None:
        """The last checkpoint whose seq is ≤ ``seq`` (where to start decoding for ``seq``)."""
        best = None
        for point in self.checkpoints:
            if point.seq > seq:
                break
            best = point
        return best


_FIELDS = tuple(f.name for f in fields(SessionState))
#: The columns a :class:`SessionState` is read from, in field order (:func:`session_state`).
COLUMNS = tuple(getattr(SessionRow, name) for name in _FIELDS)
_TABLE: Table = SessionRow.__table__
# Read by every scan and every job: built once, with a bound parameter.
_GET = select(*COLUMNS).where(SessionRow.session_id == bindparam("p_sid"))


def session_state(row: Sequence[Any]) -> SessionState:
    """The session read from the values of :data:`COLUMNS`, in that order."""
    data = dict(zip(_FIELDS, row, strict=True))
    data["checkpoints"] = tuple(Checkpoint(*point) for point in data["checkpoints"] or ())
    data["header"] = dict(data["header"] or {})
    return SessionState(**data)


def _merge(old: Iterable[Checkpoint], new: Iterable[Checkpoint]) -> list[list[int]]:
    by_seq = {point.seq: point for point in old}
    by_seq.update({point.seq: point for point in new})
    return [[p.seq, p.offset, p.ordinal] for _, p in sorted(by_seq.items())]


class SessionRepo(ClockedRepo):
    """Read and record what the watcher learned about each session."""

    def get(self, session_id: str) -> SessionState | None:
        row = prepared.first(self._conn, _GET, {"p_sid": session_id})
        return session_state(row) if row is not None else None

    def list(self, *, include_forgotten: bool = False) -> list[SessionState]:
        query = select(*COLUMNS).order_by(SessionRow.session_id)
        if not include_forgotten:
            query = query.where(SessionRow.forgotten.is_(False))
        return [session_state(row) for row in self._conn.execute(query)]

    def upsert_scan(
        self,
        session_id: str,
        *,
        path: str,
        scan_offset: int,
        scan_seq: int,
        durable_end_seq: int,
        generation: int | None = None,
        project: str | None = None,
        header: dict[str, Any] | None = None,
        inherited_cut: int | None = None,
        new_checkpoints: Sequence[Checkpoint] = (),
        last_turn_end_seq: int | None = None,
        title: tuple[int, str | None] | None = None,
        last_activity_at: dt.datetime | None = None,
        last_message_at: dt.datetime | None = None,
    ) -> SessionState:
        """Record a scan of ``session_id``'s log, creating the row on first sight.

        Fields left ``None`` keep their stored value. ``new_checkpoints`` are merged into the
        index by seq. A ``generation`` different from the stored one means the file was
        replaced: the old checkpoints are dropped. ``title`` is ``(seq, text)`` and replaces
        the stored title only when its seq is newer (a ``None`` text moves only the seq: the
        ``session_node`` job owns ``title_text``). Growth (a larger durable end) clears
        ``closed_at``. ``last_message_at``: the time of the newest message the scan read.
        """
        now = self._clock()
        current = self.get(session_id)
        if current is None:  # first sight (the insert is a no-op if another scan raced us)
            insert_ignore(
                self._conn,
                SessionRow.__table__,
                {
                    "session_id": session_id,
                    "path": path,
                    "header": {},
                    "checkpoints": [],
                    "created_at": now,
                    "updated_at": now,
                },
            )
            current = self.get(session_id)
            assert current is not None
        values: dict[str, Any] = {
            "path": path,
            "scan_offset": scan_offset,
            "scan_seq": scan_seq,
            "durable_end_seq": durable_end_seq,
            "updated_at": now,
        }
        old_points: Iterable[Checkpoint] = current.checkpoints
        if generation is not None:
            values["generation"] = generation
            if generation != current.generation:
                old_points = ()
        values["checkpoints"] = _merge(old_points, new_checkpoints)
        if project is not None:
            values["project"] = storable_text(project)
        if header is not None:
            values["header"] = header
        if inherited_cut is not None:
            values["inherited_cut"] = inherited_cut
        if last_turn_end_seq is not None:
            values["last_turn_end_seq"] = last_turn_end_seq
        if title is not None and (
            current.last_title_seq is None or title[0] >= current.last_title_seq
        ):
            values["last_title_seq"] = title[0]
            if title[1] is not None:
                values["title_text"] = storable_text(title[1])
        if last_activity_at is not None:
            values["last_activity_at"] = last_activity_at
        if last_message_at is not None:
            values["last_message_at"] = last_message_at
        if durable_end_seq > current.durable_end_seq:
            values["closed_at"] = None
        self._update(session_id, values)
        updated = self.get(session_id)
        assert updated is not None
        return updated

    def set_title_text(self, session_id: str, text: str | None) -> bool:
        """Overwrite the stored node text (``None`` clears it); True when it changed."""
        text = storable_text(text) if text is not None else None
        current = self.get(session_id)
        if current is None or current.title_text == text:
            return False
        return self._update(session_id, {"title_text": text})

    def mark_closed(self, session_id: str, at: dt.datetime | None = None) -> bool:
        """Record the idle-close of a session (its tail was flushed, consolidation owed)."""
        return self._update(session_id, {"closed_at": at or self._clock()})

    def set_forgotten(self, session_id: str, forgotten: bool = True) -> bool:
        """Mark (or unmark) a session as forgotten: the watcher never ingests it again."""
        now = self._clock()
        if forgotten:
            insert_ignore(
                self._conn,
                SessionRow.__table__,
                {
                    "session_id": session_id,
                    "path": "",
                    "header": {},
                    "checkpoints": [],
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return self._update(session_id, {"forgotten": forgotten})

    def scrub_title(self, session_id: str, replacement: tuple[int, str] | None = None) -> bool:
        """Overwrite the stored title (text derived from the session's messages) with
        ``replacement`` = ``(seq, text)``, or clear it (title and seq) when None; True when the
        session exists. Call :meth:`worker.state.database.StateDB.after_purge` once the
        transaction has committed, so the old text leaves the database files too."""
        seq, text = replacement if replacement is not None else (None, None)
        return self._update(
            session_id,
            {
                "title_text": storable_text(text) if text is not None else None,
                "last_title_seq": seq,
            },
        )

    def is_forgotten(self, session_id: str) -> bool:
        found = self._conn.execute(
            select(SessionRow.forgotten).where(SessionRow.session_id == session_id)
        ).scalar_one_or_none()
        return bool(found)

    def _update(self, session_id: str, values: dict[str, Any]) -> bool:
        values.setdefault("updated_at", self._clock())
        return update_by_key(self._conn, _TABLE, "session_id", session_id, values)
