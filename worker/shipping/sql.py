"""The segment store on the state database (PostgreSQL for a cluster, SQLite embedded).

Each append is one short transaction: the shipped log's row is locked (``SELECT … FOR UPDATE``
on PostgreSQL; SQLite writers begin with ``BEGIN IMMEDIATE``), the segment is inserted at the
shipped end and the end moves past it. The primary key (session, generation, byte offset) makes
a second copy of a segment impossible even for a racing shipper.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Connection,
    Integer,
    Table,
    case,
    cast,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from dsh_memory_worker.worker.shipping.store import ShipConflict, ShippedLog
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.models import LogSegmentRow, ShippedLogRow, utcnow

LOGS: Table = ShippedLogRow.__table__
SEGMENTS: Table = LogSegmentRow.__table__


def _shipped(row: Any) -> ShippedLog:
    return ShippedLog(
        row.session_id,
        row.generation,
        row.log_name,
        row.header_sha256,
        row.shipped_end,
        dict(row.header or {}),
    )


class SqlSegmentStore:
    """:class:`~worker.shipping.store.SegmentStore` on a :class:`~worker.state.StateDB`."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    def latest(self, session_id: str) -> ShippedLog | None:
        with self.db.read() as repos:
            row = repos.conn.execute(
                select(LOGS)
                .where(LOGS.c.session_id == session_id)
                .order_by(LOGS.c.generation.desc())
                .limit(1)
            ).first()
        return None if row is None else _shipped(row)

    def get(self, session_id: str, generation: int) -> ShippedLog | None:
        with self.db.read() as repos:
            row = repos.conn.execute(
                select(LOGS).where(LOGS.c.session_id == session_id, LOGS.c.generation == generation)
            ).first()
        return None if row is None else _shipped(row)

    def forgotten(self, session_id: str) -> bool:
        with self.db.read() as repos:
            return repos.sessions.is_forgotten(session_id)

    def start(self, log: ShippedLog, header_bytes: bytes) -> bool:
        now = utcnow()
        try:
            with self.db.transaction() as repos:
                repos.conn.execute(
                    insert(LOGS).values(
                        session_id=log.session_id,
                        generation=log.generation,
                        log_name=log.log_name,
                        header=log.header,
                        header_sha256=log.header_sha256,
                        shipped_end=len(header_bytes),
                        created_at=now,
                        updated_at=now,
                    )
                )
                _insert_segment(repos.conn, log.session_id, log.generation, 0, header_bytes)
        except IntegrityError:
            return False  # another shipper (or this one before a crash) started it
        return True

    def append(self, session_id: str, generation: int, offset: int, data: bytes) -> bool:
        if not data:
            return False
        with self.db.transaction() as repos:
            conn = repos.conn
            end = conn.execute(
                select(LOGS.c.shipped_end)
                .where(LOGS.c.session_id == session_id, LOGS.c.generation == generation)
                .with_for_update()
            ).scalar()
            if end is None:
                raise ShipConflict(f"{session_id} generation {generation} was never started")
            if offset + len(data) <= end:
                return False  # already shipped (a restart re-reading what it sent)
            if offset != end:
                raise ShipConflict(
                    f"{session_id} generation {generation}: a segment at byte {offset} does not "
                    f"start at the shipped end {end}"
                )
            _insert_segment(conn, session_id, generation, offset, data)
            conn.execute(
                update(LOGS)
                .where(
                    LOGS.c.session_id == session_id,
                    LOGS.c.generation == generation,
                    LOGS.c.shipped_end == end,
                )
                .values(shipped_end=offset + len(data), updated_at=utcnow())
            )
        return True

    def read(self, session_id: str, generation: int, offset: int, size: int) -> bytes:
        with self.db.read() as repos:
            return read_span(repos.conn, session_id, generation, offset, size)

    def read_exact(self, session_id: str, generation: int, offset: int, size: int) -> bytes:
        """Bytes ``[offset, offset + size)`` across segments; shorter at a missing byte."""
        out = b""
        while len(out) < size:
            more = self.read(session_id, generation, offset + len(out), size - len(out))
            if not more:
                break
            out += more
        return out


def read_span(conn: Connection, session_id: str, generation: int, offset: int, size: int) -> bytes:
    """Up to ``size`` stored bytes from ``offset``, within the segment that holds ``offset``
    (b"" when no stored segment does). Only those bytes leave the database (``substr``)."""
    row = SEGMENTS.c
    skip = offset - row.byte_offset
    take = case((row.length - skip < size, row.length - skip), else_=size)
    part = func.substr(row.data, cast(skip + 1, Integer), cast(take, Integer))
    found = conn.execute(
        select(part)
        .where(
            row.session_id == session_id,
            row.generation == generation,
            row.byte_offset <= offset,
            row.byte_offset + row.length > offset,
        )
        .order_by(row.byte_offset.desc())
        .limit(1)
    ).scalar()
    return b"" if found is None or size <= 0 else bytes(found)


def delete_session(conn: Connection, session_id: str) -> int:
    """Remove every shipped generation and segment of ``session_id`` (``forget``, in its
    transaction); returns how many segments went."""
    gone = conn.execute(delete(SEGMENTS).where(SEGMENTS.c.session_id == session_id)).rowcount
    conn.execute(delete(LOGS).where(LOGS.c.session_id == session_id))
    return int(gone or 0)


def _insert_segment(
    conn: Connection, session_id: str, generation: int, offset: int, data: bytes
) -> None:
    conn.execute(
        insert(SEGMENTS).values(
            session_id=session_id,
            generation=generation,
            byte_offset=offset,
            length=len(data),
            data=data,
            shipped_at=utcnow(),
        )
    )
