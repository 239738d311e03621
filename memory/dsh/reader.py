"""Public reading API: full reads, incremental scans and seq-range reads of one session log.

Every function takes a path or a :class:`~memory.dsh.source.LogSource` (shipped segments).

Nothing here raises for bad input; every issue is a one-line :class:`~memory.dsh.events.Problem`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dsh_memory_worker.memory.dsh.events import Event, Header, Problem
from dsh_memory_worker.memory.dsh.forks import inherited_cut
from dsh_memory_worker.memory.dsh.position import CheckpointIndex, ScanPosition
from dsh_memory_worker.memory.dsh.scanner import LogScan
from dsh_memory_worker.memory.dsh.source import LogSource

Log = Path | LogSource
"""A log file's path, or a :class:`~memory.dsh.source.LogSource` (e.g. shipped segments)."""

_FATAL = frozenset({"corrupt", "unsupported", "io"})


@dataclass(slots=True)
class ScanResult:
    """What an incremental scan found: only the new events, and where to resume."""

    header: Header | None
    events: list[Event]
    position: ScanPosition
    index: CheckpointIndex
    problems: list[Problem]
    torn: bool

    @property
    def ok(self) -> bool:
        return not any(p.kind in _FATAL for p in self.problems)


@dataclass(slots=True)
class RangeResult:
    """Events with ``from_seq <= seq < to_seq``."""

    events: list[Event]
    problems: list[Problem] = field(default_factory=list)
    header: Header | None = None


@dataclass(slots=True)
class SessionLog:
    """A whole log, read once."""

    path: Path
    header: Header | None
    events: list[Event]
    problems: list[Problem]
    inherited: int
    open_turn: bool
    position: ScanPosition
    index: CheckpointIndex
    torn: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing corrupt, unsupported or unreadable was found (``invalid`` and
        ``torn`` are fine)."""
        return not any(p.kind in _FATAL for p in self.problems)


def scan_log(
    path: Log,
    position: ScanPosition | None = None,
    index: CheckpointIndex | None = None,
) -> ScanResult:
    """Read what was appended since ``position`` (from the start when ``None``)."""
    scan = LogScan(_log(path), position, index)
    events = list(scan)
    return ScanResult(scan.header, events, scan.position, scan.index, scan.problems, scan.torn)


def iter_log(path: Log, position: ScanPosition | None = None) -> tuple[LogScan, Iterator[Event]]:
    """Stream events without keeping them (constant memory); the scan object reports the header,
    position and problems once the iterator is exhausted."""
    scan = LogScan(_log(path), position)
    return scan, iter(scan)


def open_turn(events: list[Event]) -> bool:
    """True when the last ``turn/start`` has no ``turn/end`` after it (crashed or running)."""
    for event in reversed(events):
        if event.type == "turn/end":
            return False
        if event.type == "turn/start":
            return True
    return False


def read_log(path: Log) -> SessionLog:
    """Read a whole log into memory (``path`` of a shipped log: its label)."""
    log = _log(path)
    result = scan_log(log)
    return SessionLog(
        path=log if isinstance(log, Path) else Path(log.label),
        header=result.header,
        events=result.events,
        problems=result.problems,
        inherited=inherited_cut(result.header, result.events),
        open_turn=open_turn(result.events),
        position=result.position,
        index=result.index,
        torn=result.torn,
    )


def build_index(path: Log, spacing: int | None = None) -> CheckpointIndex:
    """Rebuild the checkpoint index from the log."""
    index = CheckpointIndex() if spacing is None else CheckpointIndex(spacing)
    scan = LogScan(_log(path), index=index, skip_parse=True, position=ScanPosition(0, 1 << 62))
    for _ in scan:
        pass
    return scan.index


def read_range(
    path: Log,
    from_seq: int,
    to_seq: int,
    index: CheckpointIndex | None = None,
) -> RangeResult:
    """Events with ``from_seq <= seq < to_seq``, decoding from the nearest checkpoint at or
    before ``from_seq`` (the index is rebuilt from the log when not given)."""
    path = _log(path)
    if to_seq <= from_seq:
        return RangeResult([])
    if index is None:
        index = build_index(path)
    checkpoint = index.floor(from_seq)
    start = None if checkpoint is None else ScanPosition(checkpoint[1], from_seq, checkpoint[0])
    scan = LogScan(path, start, CheckpointIndex(index.spacing), stop_at=to_seq, skip_parse=True)
    events = list(scan)
    if start is not None and _stale(scan, events, from_seq, to_seq):
        scan = LogScan(path, ScanPosition(0, from_seq), stop_at=to_seq, skip_parse=True)
        events = list(scan)
        scan.problems.insert(0, Problem("invalid", "stale checkpoint index; read from the start"))
    return RangeResult(events, scan.problems, scan.header)


def _stale(scan: LogScan, events: list[Event], from_seq: int, to_seq: int) -> bool:
    if any(p.kind == "corrupt" for p in scan.problems):
        return True
    return bool(events) and events[0].seq != from_seq and not scan.torn


def _log(path: Log | str) -> Log:
    return Path(path) if isinstance(path, str | Path) else path
