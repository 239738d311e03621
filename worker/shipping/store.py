"""The segment store: where shipped log bytes live, as an interface the shipper and the readers
use (one implementation on the state database, :mod:`worker.shipping.sql`).

A shipped log is one generation of one session's log: its file name, header facts, the SHA-256
of its header frame or line, and ``shipped_end``. Its segments tile ``[0, shipped_end)``: each
starts where the previous one ended, and ``shipped_end`` moves in the transaction that stores
the segment ending there, so a crash leaves either both or neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ShippedLog:
    """One shipped generation of a session's log."""

    session_id: str
    generation: int
    log_name: str
    header_sha256: str
    shipped_end: int
    header: dict[str, Any] = field(default_factory=dict)


class ShipConflict(RuntimeError):
    """A segment that does not start at the shipped end (another shipper moved it, or a gap)."""


class SegmentStore(Protocol):
    """Durable shipped segments, keyed by (session, generation, byte offset)."""

    def latest(self, session_id: str) -> ShippedLog | None:
        """The newest generation shipped for the session, if any."""
        ...

    def get(self, session_id: str, generation: int) -> ShippedLog | None: ...

    def forgotten(self, session_id: str) -> bool:
        """Whether an operator forgot the session (it is never shipped again)."""
        ...

    def start(self, log: ShippedLog, header_bytes: bytes) -> bool:
        """Record a new generation and its first segment (the header frame or line, bytes
        ``[0, len(header_bytes))``) in one transaction. False when it already exists."""
        ...

    def append(self, session_id: str, generation: int, offset: int, data: bytes) -> bool:
        """Store ``data`` at ``offset`` and move ``shipped_end`` past it, in one transaction.
        False (nothing written) when the range is already shipped; :class:`ShipConflict` when
        ``offset`` is past the shipped end or the range straddles it."""
        ...

    def read(self, session_id: str, generation: int, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset``, within the one segment that holds ``offset``
        (shorter at its end: a reader's short read); b"" when no stored segment holds it (past
        the shipped end, or pruned)."""
        ...

    def read_exact(self, session_id: str, generation: int, offset: int, size: int) -> bytes:
        """Bytes ``[offset, offset + size)`` across segments; shorter only at a missing byte."""
        ...
