"""Ship what a log file gained since its shipped position: complete frames or lines only.

:func:`ship_log` is what the daemon calls for each session log it finds, every poll. It reads
the file (the only reader of the DSH home), decides whether it is the generation already being
shipped or a new one (DSH rewrote it), and appends the complete bytes after the shipped end, one
transaction per segment. A restart resumes from the stored end: nothing is sent twice, nothing
is skipped, and a torn tail waits until it is complete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from dsh_memory_worker.memory.dsh.complete import complete_pieces
from dsh_memory_worker.memory.dsh.events import Problem
from dsh_memory_worker.memory.dsh.frames import FrameCorrupt, read_first_chunk
from dsh_memory_worker.memory.dsh.header import parse_header
from dsh_memory_worker.memory.dsh.openlog import UnsafeLog, open_log
from dsh_memory_worker.memory.dsh.source import is_compressed_name
from dsh_memory_worker.worker.shipping.store import SegmentStore, ShipConflict, ShippedLog

SEGMENT_BYTES = 256 << 10
"""About how many bytes one segment holds (at least one whole frame or line)."""
TAIL_CHECK = 64
"""How many bytes before the shipped end are compared to tell an appended log from a rewrite."""


@dataclass(slots=True)
class ShipReport:
    """What one :func:`ship_log` call did."""

    session_id: str
    generation: int | None = None
    segments: int = 0
    bytes: int = 0
    shipped_end: int = 0
    new_generation: bool = False
    forgotten: bool = False
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class _Head:
    bytes: bytes
    facts: dict[str, object]
    sha256: str


def ship_log(
    store: SegmentStore, session_id: str, path: Path, *, segment_bytes: int = SEGMENT_BYTES
) -> ShipReport:
    """Ship the complete bytes ``path`` gained since the session's shipped end."""
    report = ShipReport(session_id)
    if store.forgotten(session_id):
        report.forgotten = True  # an operator forgot it: its bytes never leave the host again
        return report
    try:
        with open_log(path) as f:
            _ship_open(store, session_id, path.name, f, report, segment_bytes)
    except UnsafeLog as exc:
        report.problem = f"{path} {exc.reason}; not shipped"
    except OSError as exc:
        report.problem = f"cannot read {path}: {exc.strerror}"
    return report


def _ship_open(
    store: SegmentStore,
    session_id: str,
    name: str,
    f: BinaryIO,
    report: ShipReport,
    segment_bytes: int,
) -> None:
    compressed = is_compressed_name(name)
    head = _read_head(f, compressed, session_id, report)
    if head is None:
        return
    size = os.fstat(f.fileno()).st_size
    log = store.latest(session_id)
    if log is None or not _same_log(store, log, name, head, f, size):
        generation = 0 if log is None else log.generation + 1
        log = ShippedLog(session_id, generation, name, head.sha256, len(head.bytes), head.facts)
        report.new_generation = store.start(log, head.bytes)
        log = store.get(session_id, generation) or log
    report.generation = log.generation
    end = log.shipped_end
    try:
        for piece in complete_pieces(f, compressed, end, segment_bytes):
            if store.append(session_id, log.generation, piece.offset, piece.data):
                report.segments += 1
                report.bytes += len(piece.data)
            end = piece.end
    except FrameCorrupt as exc:
        report.problem = f"{name}: {exc.reason} at byte {exc.offset}; shipped up to {end}"
    except ShipConflict as exc:  # another shipper moved the end: the next call resumes there
        report.problem = f"{exc}; shipped up to {end}"
    report.shipped_end = end


def _read_head(f: BinaryIO, compressed: bool, session_id: str, report: ShipReport) -> _Head | None:
    """The header frame or line, once it is complete and names ``session_id``."""
    try:
        first = read_first_chunk(f, compressed)
    except FrameCorrupt as exc:
        report.problem = f"{exc.reason} at byte {exc.offset}; not shipped"
        return None
    if first is None or not first.complete or not first.data.endswith(b"\n"):
        return None  # no complete header yet: nothing to ship
    header = parse_header(first.data)
    if isinstance(header, Problem):
        report.problem = f"{header}; not shipped"
        return None
    if header.id != session_id:
        report.problem = f"header id {header.id!r} is not {session_id!r}; not shipped"
        return None
    f.seek(0)
    raw = f.read(first.end)
    facts = {k: v for k, v in dataclasses.asdict(header).items() if v is not None}
    return _Head(raw, facts, hashlib.sha256(raw).hexdigest())


def _same_log(
    store: SegmentStore, log: ShippedLog, name: str, head: _Head, f: BinaryIO, size: int
) -> bool:
    """Whether the file is the generation ``log`` ships: same name, same header bytes, not
    shorter than shipped, and the last shipped bytes still there. Otherwise DSH rewrote it."""
    if log.log_name != name or log.header_sha256 != head.sha256 or size < log.shipped_end:
        return False
    at = max(0, log.shipped_end - TAIL_CHECK)
    f.seek(at)
    return f.read(log.shipped_end - at) == store.read_exact(
        log.session_id, log.generation, at, log.shipped_end - at
    )
