"""The state database's tables, as SQLAlchemy Core tables named by typed classes.

The schema is owned by the Alembic revisions in ``migrations/``; a test checks that these tables
and the migrated schema agree. Times are stored as UTC (``UTCDateTime``); sequence numbers and
byte offsets are 64-bit.

Each class is one table: its columns are class attributes (``SessionRow.session_id`` is the
``Column``) and the class stands for its ``Table`` (``SessionRow.__table__``) in ``select``,
``insert``, ``update``, ``delete`` and joins. Core, not the ORM: the repositories read and write
columns, never mapped objects, and importing the ORM cost every command that opens the state
database about a tenth of a second.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ColumnClause,
    DateTime,
    Dialect,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)

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


class Base:
    """A table of the state database: a subclass names it (``__tablename__``), declares its
    columns in order as ``Column`` class attributes and its indexes and constraints in
    ``__table_args__``; the ``Table`` they make is ``__table__``, in :attr:`metadata`.

    The attributes are the table's own ``Column`` objects (``Table`` adopts them), annotated
    ``ColumnClause[T]``: SQLAlchemy 2.1 types a ``Column`` read from a class as unusable, for its
    ``TypedColumns``, which copy their columns."""

    metadata: ClassVar[MetaData] = MetaData(naming_convention=NAMING)
    __tablename__: ClassVar[str]
    __table_args__: ClassVar[tuple[Any, ...]] = ()
    __table__: ClassVar[Table]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        columns = [value for value in vars(cls).values() if isinstance(value, Column)]
        cls.__table__ = Table(cls.__tablename__, cls.metadata, *columns, *cls.__table_args__)

    @classmethod
    def __clause_element__(cls) -> Table:
        """The class in a statement (``select(ProvenanceRow)``, ``update(ProgressRow)``, a
        join) is its table: SQLAlchemy resolves any object with this method to what it returns."""
        return cls.__table__


class SessionRow(Base):
    """One DSH session as the watcher last saw it (keyed by the DSH session id)."""

    __tablename__ = "sessions"

    session_id: ColumnClause[str] = Column("session_id", String(200), primary_key=True)
    path: ColumnClause[str] = Column("path", Text, nullable=False)
    """The session's log file (or directory) the scan position refers to."""
    generation: ColumnClause[int] = Column(
        "generation", Integer, default=0, server_default=text("0"), nullable=False
    )
    """Bumped when the log file was replaced under the same path; the scan restarts at 0."""
    project: ColumnClause[str] = Column(
        "project", Text, default="", server_default="", nullable=False
    )
    """The project scope (from the header's cwd)."""
    header: ColumnClause[dict[str, Any]] = Column("header", JSON(), default=dict, nullable=False)
    """Header facts (cwd, format version, parent/fork ids, creation time...), JSON."""
    inherited_cut: ColumnClause[int] = Column(
        "inherited_cut", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """A fork's inherited event count: seqs below it belong to the parent and are never logged."""
    scan_offset: ColumnClause[int] = Column(
        "scan_offset", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Byte offset just past the last complete line / zstd frame read."""
    scan_seq: ColumnClause[int] = Column(
        "scan_seq", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """The seq of the next event expected at ``scan_offset``."""
    checkpoints: ColumnClause[list[Any]] = Column(
        "checkpoints", JSON(), default=list, nullable=False
    )
    """Sparse index, JSON list of ``[seq, byte_offset, message_ordinal]`` ascending by seq."""
    durable_end_seq: ColumnClause[int] = Column(
        "durable_end_seq", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Exclusive end of the seqs durably on disk (what is owed is durable end − watermark)."""
    last_turn_end_seq: ColumnClause[int | None] = Column(
        "last_turn_end_seq", BigInteger, nullable=True
    )
    """The seq of the last ``turn/end`` seen, if any."""
    last_title_seq: ColumnClause[int | None] = Column("last_title_seq", BigInteger, nullable=True)
    title_text: ColumnClause[str | None] = Column("title_text", Text, nullable=True)
    """The text the session node shows (its first clean host summary, :mod:`memory.titles`);
    rewritten or cleared by the ``session_node`` job when a withdrawal taints it."""
    last_activity_at: ColumnClause[dt.datetime | None] = Column(
        "last_activity_at", UTCDateTime(), nullable=True
    )
    """When the log last grew (drives idle-close)."""
    last_message_at: ColumnClause[dt.datetime | None] = Column(
        "last_message_at", UTCDateTime(), nullable=True
    )
    """The time of the newest user or assistant message event read from the log (its own
    ``time``, not the file's); NULL until a scan reads one (the console dates sessions by it)."""
    closed_at: ColumnClause[dt.datetime | None] = Column("closed_at", UTCDateTime(), nullable=True)
    """Set when the session was idle-closed (its tail flushed and consolidation owed)."""
    forgotten: ColumnClause[bool] = Column(
        "forgotten", Boolean, default=False, server_default=text("false"), nullable=False
    )
    """Set by an operator ``forget``: the session is never ingested again."""
    created_at: ColumnClause[dt.datetime] = Column(
        "created_at", UTCDateTime(), default=utcnow, nullable=False
    )
    updated_at: ColumnClause[dt.datetime] = Column(
        "updated_at", UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class ProgressRow(Base):
    """Watermarks per (shelf, session): what is already in the store. Moves forward only."""

    __tablename__ = "progress"

    shelf: ColumnClause[str] = Column("shelf", String(200), primary_key=True)
    session_id: ColumnClause[str] = Column("session_id", String(200), primary_key=True)
    last_logged_seq: ColumnClause[int] = Column(
        "last_logged_seq", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Exclusive end of the seq range whose message entries are written."""
    last_consolidated_seq: ColumnClause[int] = Column(
        "last_consolidated_seq", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Exclusive end of the seq range covered by span summaries."""
    last_belong_to_index: ColumnClause[int] = Column(
        "last_belong_to_index", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Message ordinal up to which ``belongTo`` edges to the session node exist."""
    has_session_node: ColumnClause[bool] = Column(
        "has_session_node", Boolean, default=False, server_default=text("false"), nullable=False
    )
    """The session node is decided: written, or none is owed (every host summary seen is
    withdrawn or empty). Never goes back to False; a node a withdrawal deleted leaves it True."""
    pending_tokens: ColumnClause[int] = Column(
        "pending_tokens", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Estimated unconsolidated tokens since the last accepted consolidation check."""
    last_check_turn: ColumnClause[int] = Column(
        "last_check_turn", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """The turn at which consolidation work was last accepted."""
    version: ColumnClause[int] = Column(
        "version", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Bumped by every change; conditional updates name the version they read."""
    updated_at: ColumnClause[dt.datetime] = Column(
        "updated_at", UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class LeaseRow(Base):
    """Per-key exclusivity with expiry. The row outlives releases so tokens keep increasing."""

    __tablename__ = "leases"

    key: ColumnClause[str] = Column("key", String(300), primary_key=True)
    owner: ColumnClause[str | None] = Column("owner", String(300), nullable=True)
    """Who holds it; NULL once released."""
    token: ColumnClause[int] = Column(
        "token", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Fencing token: +1 on every acquisition of this key."""
    acquired_at: ColumnClause[dt.datetime | None] = Column(
        "acquired_at", UTCDateTime(), nullable=True
    )
    expires_at: ColumnClause[dt.datetime | None] = Column(
        "expires_at", UTCDateTime(), nullable=True
    )


class RetractionRow(Base):
    """Audit of each withdrawn message entry handled: retracted, already absent, or failed."""

    __tablename__ = "retractions"
    __table_args__ = (Index(None, "session_id", "ordinal"),)

    id: ColumnClause[int] = Column("id", Integer, primary_key=True, autoincrement=True)
    shelf: ColumnClause[str] = Column("shelf", String(200), nullable=False)
    session_id: ColumnClause[str] = Column("session_id", String(200), nullable=False)
    ordinal: ColumnClause[int] = Column("ordinal", BigInteger, nullable=False)
    """The message ordinal N of ``msg-<session>-<N>``."""
    entry: ColumnClause[str] = Column("entry", Text, nullable=False)
    """The entry name retracted."""
    marker_seq: ColumnClause[int] = Column("marker_seq", BigInteger, nullable=False)
    """The seq of the withdrawal marker that shadowed the message."""
    source_kind: ColumnClause[str] = Column("source_kind", String(200), nullable=False)
    """The marker's normalised source kind (e.g. ``dsh-rewind``)."""
    outcome: ColumnClause[str] = Column("outcome", String(40), nullable=False)
    """``retracted`` | ``absent`` | ``failed`` | ``would-retract`` (dry run)."""
    detail: ColumnClause[str | None] = Column("detail", Text, nullable=True)
    at: ColumnClause[dt.datetime] = Column("at", UTCDateTime(), default=utcnow, nullable=False)


class AuditRow(Base):
    """General audit of repairs (edge re-assertions, reconsolidations, forgets, resets)."""

    __tablename__ = "audit"
    __table_args__ = (Index(None, "session_id"),)

    id: ColumnClause[int] = Column("id", Integer, primary_key=True, autoincrement=True)
    action: ColumnClause[str] = Column("action", String(80), nullable=False)
    """What was done, e.g. ``reconsolidate``, ``forget``, ``repair-edges``, ``reset-progress``."""
    shelf: ColumnClause[str | None] = Column("shelf", String(200), nullable=True)
    session_id: ColumnClause[str | None] = Column("session_id", String(200), nullable=True)
    subject: ColumnClause[str | None] = Column("subject", Text, nullable=True)
    """The entry name or range acted on."""
    cause_marker_seq: ColumnClause[int | None] = Column(
        "cause_marker_seq", BigInteger, nullable=True
    )
    """The withdrawal marker that caused it, when one did."""
    source_kind: ColumnClause[str | None] = Column("source_kind", String(200), nullable=True)
    outcome: ColumnClause[str] = Column("outcome", String(40), nullable=False)
    detail: ColumnClause[str | None] = Column("detail", Text, nullable=True)
    at: ColumnClause[dt.datetime] = Column("at", UTCDateTime(), default=utcnow, nullable=False)


class FailureRow(Base):
    """The latest failure of a task for a subject; one row per (task, session_id)."""

    __tablename__ = "failures"
    __table_args__ = (UniqueConstraint("task", "session_id"),)

    id: ColumnClause[int] = Column("id", Integer, primary_key=True, autoincrement=True)
    task: ColumnClause[str] = Column("task", String(100), nullable=False)
    session_id: ColumnClause[str] = Column("session_id", String(300), nullable=False)
    """The session id; for tasks without a session (cascade) the subject key, e.g. the project."""
    attempts: ColumnClause[int] = Column(
        "attempts", Integer, default=0, server_default=text("0"), nullable=False
    )
    last_error: ColumnClause[str] = Column(
        "last_error", Text, default="", server_default="", nullable=False
    )
    """One line, capped at 2000 characters."""
    permanent: ColumnClause[bool] = Column(
        "permanent", Boolean, default=False, server_default=text("false"), nullable=False
    )
    """True when retrying cannot help (bad input, unusable model output)."""
    first_at: ColumnClause[dt.datetime] = Column(
        "first_at", UTCDateTime(), default=utcnow, nullable=False
    )
    last_at: ColumnClause[dt.datetime] = Column(
        "last_at", UTCDateTime(), default=utcnow, nullable=False
    )


class ModelCallRow(Base):
    """Diagnostics of one model call. Never holds model output."""

    __tablename__ = "model_calls"
    __table_args__ = (Index(None, "at"),)

    id: ColumnClause[int] = Column("id", Integer, primary_key=True, autoincrement=True)
    at: ColumnClause[dt.datetime] = Column("at", UTCDateTime(), default=utcnow, nullable=False)
    """When the call started."""
    purpose: ColumnClause[str] = Column("purpose", String(80), nullable=False)
    """``memory-consolidation`` | ``memory-adjudication`` | ``memory-cascade`` (``memory.llm``)."""
    route_index: ColumnClause[int] = Column("route_index", Integer, nullable=False)
    """Position of the route in ``model_routes``."""
    base_url: ColumnClause[str] = Column("base_url", Text, nullable=False)
    model: ColumnClause[str] = Column("model", String(200), nullable=False)
    effort: ColumnClause[str] = Column(
        "effort", String(40), default="", server_default="", nullable=False
    )
    """The reasoning effort actually sent; '' = none."""
    outcome: ColumnClause[str] = Column(
        "outcome", String(40), default="pending", server_default="pending", nullable=False
    )
    """``pending`` | ``ok`` | ``incomplete`` | ``error``."""
    ms: ColumnClause[int | None] = Column("ms", Integer, nullable=True)
    input_tokens: ColumnClause[int | None] = Column("input_tokens", Integer, nullable=True)
    output_tokens: ColumnClause[int | None] = Column("output_tokens", Integer, nullable=True)
    reasoning_tokens: ColumnClause[int | None] = Column("reasoning_tokens", Integer, nullable=True)
    session_id: ColumnClause[str | None] = Column("session_id", String(200), nullable=True)
    detail: ColumnClause[str | None] = Column("detail", String(200), nullable=True)
    """Error class / status, at most 200 characters; never model output."""


class ProvenanceRow(Base):
    """Who wrote a derived entry (span summary, archive, work unit): the model route, the model
    and the prompt version of the call whose reply is its text. One row per (shelf, entry)."""

    __tablename__ = "provenance"

    shelf: ColumnClause[str] = Column("shelf", String(200), primary_key=True)
    name: ColumnClause[str] = Column("name", String(300), primary_key=True)
    kind: ColumnClause[str] = Column("kind", String(20), nullable=False)
    """``summary`` | ``archive`` | ``work-unit``."""
    session_id: ColumnClause[str | None] = Column("session_id", String(200), nullable=True)
    route: ColumnClause[str] = Column("route", Text, nullable=False)
    """The route's label ``<base_url>/<model>``."""
    model: ColumnClause[str] = Column("model", String(200), nullable=False)
    prompt_version: ColumnClause[str] = Column("prompt_version", String(40), nullable=False)
    written_at: ColumnClause[dt.datetime] = Column(
        "written_at", UTCDateTime(), default=utcnow, nullable=False
    )


class ShippedLogRow(Base):
    """One shipped log generation of a session (``worker.shipping``): how far it is shipped.

    A log DSH rewrote (another file name, a different header, shorter than shipped, or bytes
    that no longer match) is a new generation, shipped again from byte 0."""

    __tablename__ = "shipped_logs"

    session_id: ColumnClause[str] = Column("session_id", String(200), primary_key=True)
    generation: ColumnClause[int] = Column("generation", Integer, primary_key=True)
    log_name: ColumnClause[str] = Column("log_name", Text, nullable=False)
    """The file name in the session directory (``session.v4.jsonl.zstd``): says the layout."""
    header: ColumnClause[dict[str, Any]] = Column("header", JSON(), default=dict, nullable=False)
    """Header facts (as the watcher records them), JSON."""
    header_sha256: ColumnClause[str] = Column("header_sha256", String(64), nullable=False)
    """SHA-256 of the header frame or line as shipped (a rewrite is told by it)."""
    shipped_end: ColumnClause[int] = Column(
        "shipped_end", BigInteger, default=0, server_default=text("0"), nullable=False
    )
    """Exclusive end of the bytes shipped; moves in the transaction that stores them."""
    created_at: ColumnClause[dt.datetime] = Column(
        "created_at", UTCDateTime(), default=utcnow, nullable=False
    )
    updated_at: ColumnClause[dt.datetime] = Column(
        "updated_at", UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class LogSegmentRow(Base):
    """Complete bytes of a shipped log (whole zstd frames or whole lines) at a byte offset.

    The segments of one generation tile ``[0, shipped_end)`` with neither gap nor overlap; the
    primary key makes shipping a range twice impossible."""

    __tablename__ = "log_segments"

    session_id: ColumnClause[str] = Column("session_id", String(200), primary_key=True)
    generation: ColumnClause[int] = Column("generation", Integer, primary_key=True)
    byte_offset: ColumnClause[int] = Column("byte_offset", BigInteger, primary_key=True)
    length: ColumnClause[int] = Column("length", BigInteger, nullable=False)
    data: ColumnClause[bytes] = Column("data", LargeBinary, nullable=False)
    shipped_at: ColumnClause[dt.datetime] = Column(
        "shipped_at", UTCDateTime(), default=utcnow, nullable=False
    )
