"""The state database's tables as typed SQLAlchemy 2 models.

The schema is owned by the Alembic revisions in ``migrations/``; a test checks that these models
and the migrated schema agree. Times are stored as UTC (``UTCDateTime``); sequence numbers and
byte offsets are 64-bit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC datetime on every dialect (SQLite keeps naive UTC text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        assert isinstance(value, dt.datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dt.datetime: UTCDateTime,
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


class SessionRow(Base):
    """One DSH session as the watcher last saw it (keyed by the DSH session id)."""

    __tablename__ = "sessions"

    session_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    """The session's log file (or directory) the scan position refers to."""
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    """Bumped when the log file was replaced under the same path; the scan restarts at 0."""
    project: Mapped[str] = mapped_column(Text, default="", server_default="")
    """The project scope (from the header's cwd)."""
    header: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """Header facts (cwd, format version, parent/fork ids, creation time...), JSON."""
    inherited_cut: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """A fork's inherited event count: seqs below it belong to the parent and are never logged."""
    scan_offset: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Byte offset just past the last complete line / zstd frame read."""
    scan_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """The seq of the next event expected at ``scan_offset``."""
    checkpoints: Mapped[list[Any]] = mapped_column(default=list)
    """Sparse index, JSON list of ``[seq, byte_offset, message_ordinal]`` ascending by seq."""
    durable_end_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Exclusive end of the seqs durably on disk (what is owed is durable end − watermark)."""
    last_turn_end_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """The seq of the last ``turn/end`` seen, if any."""
    last_title_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    title_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The text the session node shows (its first clean host summary, :mod:`memory.titles`);
    rewritten or cleared by the ``session_node`` job when a withdrawal taints it."""
    last_activity_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    """When the log last grew (drives idle-close)."""
    closed_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    """Set when the session was idle-closed (its tail flushed and consolidation owed)."""
    forgotten: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    """Set by an operator ``forget``: the session is never ingested again."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ProgressRow(Base):
    """Watermarks per (shelf, session): what is already in the store. Moves forward only."""

    __tablename__ = "progress"

    shelf: Mapped[str] = mapped_column(String(200), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    last_logged_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Exclusive end of the seq range whose message entries are written."""
    last_consolidated_seq: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )
    """Exclusive end of the seq range covered by span summaries."""
    last_belong_to_index: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default=text("0")
    )
    """Message ordinal up to which ``belongTo`` edges to the session node exist."""
    has_session_node: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    """The session node is decided: written, or none is owed (every host summary seen is
    withdrawn or empty). Never goes back to False; a node a withdrawal deleted leaves it True."""
    pending_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Estimated unconsolidated tokens since the last accepted consolidation check."""
    last_check_turn: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """The turn at which consolidation work was last accepted."""
    version: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Bumped by every change; conditional updates name the version they read."""
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class LeaseRow(Base):
    """Per-key exclusivity with expiry. The row outlives releases so tokens keep increasing."""

    __tablename__ = "leases"

    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(300), nullable=True)
    """Who holds it; NULL once released."""
    token: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Fencing token: +1 on every acquisition of this key."""
    acquired_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    expires_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)


class RetractionRow(Base):
    """Audit of each withdrawn message entry handled: retracted, already absent, or failed."""

    __tablename__ = "retractions"
    __table_args__ = (Index(None, "session_id", "ordinal"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    shelf: Mapped[str] = mapped_column(String(200))
    session_id: Mapped[str] = mapped_column(String(200))
    ordinal: Mapped[int] = mapped_column(BigInteger)
    """The message ordinal N of ``msg-<session>-<N>``."""
    entry: Mapped[str] = mapped_column(Text)
    """The entry name retracted."""
    marker_seq: Mapped[int] = mapped_column(BigInteger)
    """The seq of the withdrawal marker that shadowed the message."""
    source_kind: Mapped[str] = mapped_column(String(200))
    """The marker's normalised source kind (e.g. ``dsh-rewind``)."""
    outcome: Mapped[str] = mapped_column(String(40))
    """``retracted`` | ``absent`` | ``failed`` | ``would-retract`` (dry run)."""
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class AuditRow(Base):
    """General audit of repairs (edge re-assertions, reconsolidations, forgets, resets)."""

    __tablename__ = "audit"
    __table_args__ = (Index(None, "session_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action: Mapped[str] = mapped_column(String(80))
    """What was done, e.g. ``reconsolidate``, ``forget``, ``repair-edges``, ``reset-progress``."""
    shelf: Mapped[str | None] = mapped_column(String(200), nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    subject: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The entry name or range acted on."""
    cause_marker_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """The withdrawal marker that caused it, when one did."""
    source_kind: Mapped[str | None] = mapped_column(String(200), nullable=True)
    outcome: Mapped[str] = mapped_column(String(40))
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class FailureRow(Base):
    """The latest failure of a task for a subject; one row per (task, session_id)."""

    __tablename__ = "failures"
    __table_args__ = (UniqueConstraint("task", "session_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task: Mapped[str] = mapped_column(String(100))
    session_id: Mapped[str] = mapped_column(String(300))
    """The session id; for tasks without a session (cascade) the subject key, e.g. the project."""
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    last_error: Mapped[str] = mapped_column(Text, default="", server_default="")
    """One line, capped at 2000 characters."""
    permanent: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    """True when retrying cannot help (bad input, unusable model output)."""
    first_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    last_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ModelCallRow(Base):
    """Diagnostics of one model call. Never holds model output."""

    __tablename__ = "model_calls"
    __table_args__ = (Index(None, "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    """When the call started."""
    purpose: Mapped[str] = mapped_column(String(80))
    """``memory-consolidation`` | ``memory-adjudication`` | ``memory-cascade`` (``memory.llm``)."""
    route_index: Mapped[int] = mapped_column(Integer)
    """Position of the route in ``model_routes``."""
    base_url: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(200))
    effort: Mapped[str] = mapped_column(String(40), default="", server_default="")
    """The reasoning effort actually sent; '' = none."""
    outcome: Mapped[str] = mapped_column(String(40), default="pending", server_default="pending")
    """``pending`` | ``ok`` | ``incomplete`` | ``error``."""
    ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasoning_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    detail: Mapped[str | None] = mapped_column(String(200), nullable=True)
    """Error class / status, at most 200 characters; never model output."""


class ProvenanceRow(Base):
    """Who wrote a derived entry (span summary, archive, work unit): the model route, the model
    and the prompt version of the call whose reply is its text. One row per (shelf, entry)."""

    __tablename__ = "provenance"

    shelf: Mapped[str] = mapped_column(String(200), primary_key=True)
    name: Mapped[str] = mapped_column(String(300), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    """``summary`` | ``archive`` | ``work-unit``."""
    session_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    route: Mapped[str] = mapped_column(Text)
    """The route's label ``<base_url>/<model>``."""
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    written_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ShippedLogRow(Base):
    """One shipped log generation of a session (``worker.shipping``): how far it is shipped.

    A log DSH rewrote (another file name, a different header, shorter than shipped, or bytes
    that no longer match) is a new generation, shipped again from byte 0."""

    __tablename__ = "shipped_logs"

    session_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True)
    log_name: Mapped[str] = mapped_column(Text)
    """The file name in the session directory (``session.v4.jsonl.zstd``): says the layout."""
    header: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """Header facts (as the watcher records them), JSON."""
    header_sha256: Mapped[str] = mapped_column(String(64))
    """SHA-256 of the header frame or line as shipped (a rewrite is told by it)."""
    shipped_end: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    """Exclusive end of the bytes shipped; moves in the transaction that stores them."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class LogSegmentRow(Base):
    """Complete bytes of a shipped log (whole zstd frames or whole lines) at a byte offset.

    The segments of one generation tile ``[0, shipped_end)`` with neither gap nor overlap; the
    primary key makes shipping a range twice impossible."""

    __tablename__ = "log_segments"

    session_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True)
    byte_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    length: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    shipped_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
