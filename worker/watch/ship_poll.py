"""Log shipping in the daemon's per-session poll (docs/shipping.md, "Wiring").

With ``shipping`` on, the watcher ships what each log file gained
(:func:`worker.shipping.shipper.ship_log`) and then scans the **shipped** bytes, not the file:
every position, checkpoint and durable end it records is one the workers can read from the
segments, and the daemon stays the only process that reads the DSH home.
"""

from __future__ import annotations

from memory.dsh.locate import SessionLocation
from memory.dsh.position import ScanPosition
from memory.dsh.source import SegmentSource
from worker.settings import Settings
from worker.shipping.shipper import ship_log
from worker.shipping.source import shipped_source
from worker.shipping.store import SegmentStore
from worker.state.sessions import SessionState
from worker.watch.scan_problems import ProblemBook


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


def resume_shipped(
    state: SessionState | None, generation: int
) -> tuple[int, ScanPosition | None]:
    """The generation and resume position of a scan of the shipped log ``generation``: a newer
    shipped generation than the recorded one (DSH rewrote the log) is read from its start."""
    if state is None or state.generation != generation or state.durable_end_seq <= 0:
        return generation, None
    return generation, resume_at(state)
