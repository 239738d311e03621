"""What the watcher's per-session poll scans (:func:`poll_source`): the log file in embedded
mode; with log shipping (docs/shipping.md, "Wiring") the **shipped** bytes, after shipping what
the file gained (:func:`worker.shipping.shipper.ship_log`). Every position, checkpoint and
durable end the daemon records is then one the workers can read from the segments, and the
daemon stays the only process that reads the DSH home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dsh_memory_worker.memory.dsh.locate import SessionLocation
from dsh_memory_worker.memory.dsh.position import ScanPosition
from dsh_memory_worker.memory.dsh.reader import Log
from dsh_memory_worker.memory.dsh.source import SegmentSource
from dsh_memory_worker.worker.settings import Settings
from dsh_memory_worker.worker.shipping.shipper import ship_log
from dsh_memory_worker.worker.shipping.source import shipped_source
from dsh_memory_worker.worker.shipping.store import SegmentStore
from dsh_memory_worker.worker.state.sessions import SessionState
from dsh_memory_worker.worker.watch.scan_problems import ProblemBook


def ship_poll(
    segments: SegmentStore, location: SessionLocation, settings: Settings, problems: ProblemBook
) -> tuple[SegmentSource, int, bool] | None:
    """Ship what the file gained, then return the newest shipped generation as the source to
    scan, its number, and whether shipping went without a problem (then the file may be marked
    unchanged); None when nothing is shipped yet (no complete header). A problem is noted."""
    sid = location.session_id
    shipped = ship_log(segments, sid, location.path, segment_bytes=settings.shipping_segment_bytes)
    if shipped.problem:
        problems.note(sid, f"session {sid}: shipping: {shipped.problem}")
    latest = segments.latest(sid)
    if latest is None:
        return None
    return shipped_source(segments, latest), latest.generation, not shipped.problem


def resume_at(state: SessionState) -> ScanPosition:
    """Where the next scan of ``state``'s log resumes (its recorded scan position)."""
    resume = state.scan_seq if state.scan_seq < state.durable_end_seq else None
    return ScanPosition(state.scan_offset, state.durable_end_seq, resume)


def resume_shipped(state: SessionState | None, generation: int) -> tuple[int, ScanPosition | None]:
    """The generation and resume position of a scan of the shipped log ``generation``: a newer
    shipped generation than the recorded one (DSH rewrote the log) is read from its start."""
    if state is None or state.generation != generation or state.durable_end_seq <= 0:
        return generation, None
    return generation, resume_at(state)


@dataclass(frozen=True, slots=True)
class PollSource:
    """What one poll of a session scans: ``log`` from ``position`` (None: from its start) as
    ``generation``; ``restarted`` when that is a new generation read again from the start;
    ``complete`` False when shipping stopped at a problem (noted)."""

    log: Log
    generation: int
    position: ScanPosition | None
    restarted: bool
    complete: bool = True


def poll_source(
    segments: SegmentStore | None,
    location: SessionLocation,
    state: SessionState | None,
    settings: Settings,
    problems: ProblemBook,
) -> PollSource | None:
    """The file (``segments`` None) or the shipped log to scan; None when nothing is shipped."""
    if segments is None:
        return _file_source(location, state)
    shipped = ship_poll(segments, location, settings, problems)
    if shipped is None:
        return None
    source, generation, complete = shipped
    generation, position = resume_shipped(state, generation)
    restarted = state is not None and position is None
    return PollSource(source, generation, position, restarted, complete)


def _file_source(location: SessionLocation, state: SessionState | None) -> PollSource:
    """Embedded mode: resume the file where the last scan ended, unless it was truncated or
    replaced (shorter than the scan offset) or moved (another path): a new generation."""
    path = str(location.path)
    generation = state.generation if state is not None else 0
    if state is not None and state.path == path and state.durable_end_seq > 0:
        if _size(path) < state.scan_offset:
            return PollSource(location.path, generation + 1, None, True)
        return PollSource(location.path, generation, resume_at(state), False)
    if state is not None and state.path != path:
        return PollSource(location.path, generation + 1, None, True)
    return PollSource(location.path, generation, None, False)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
