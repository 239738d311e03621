"""The last whole-log decode, handed to the next job on the same unchanged file.

The watcher (embedded mode) offers its scan's decode, :func:`worker.jobs.logread.read_window`
takes and leaves one, the session node's survey takes it: the same bytes are not decoded twice.
"""

from __future__ import annotations

import os
import threading

from dsh_memory_worker.memory.dsh.events import Event

#: Whole-log reads up to this many events are kept for the next job (the session node's pass
#: right after ``log_span``), so the same bytes are not decoded twice; larger ones are not kept.
SHARED_MAX_EVENTS = 20_000
_FileIdentity = tuple[int, int, int, int]


def file_identity(path: str) -> _FileIdentity | None:
    """``(device, inode, size, mtime_ns)`` of ``path``; ``None`` when it cannot be read."""
    return _identity(path)


def _identity(path: str) -> _FileIdentity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class LogHandOff:
    """The last whole-log decode, held for the next job on the same unchanged file: the
    watcher offers its scan's decode (embedded mode), :func:`~worker.jobs.logread.read_window`
    takes and leaves
    one, the session node's survey takes it. One per :class:`~worker.jobs.runtime.Runtime`
    (``runtime.hand_off``), so the hand-off travels with the runtime the jobs receive."""

    def __init__(self) -> None:
        self._kept: tuple[str, _FileIdentity, list[Event]] | None = None
        self._lock = threading.Lock()

    def offer(self, path: str, before: _FileIdentity | None, events: list[Event]) -> bool:
        """Keep a problem-free decode of the whole log at ``path`` (every event from its start
        to its last complete line) that was made while the file had identity ``before``, for
        the next job's :func:`~worker.jobs.logread.read_window` of that log (the watcher's
        hand-off in embedded mode). Kept only when it is small enough and the file still has
        that identity; True when kept."""
        if before is None or len(events) > SHARED_MAX_EVENTS or not events or events[0].seq != 0:
            self.forget()
            return False
        self.remember(path, before, events)
        with self._lock:
            return self._kept is not None and self._kept[2] is events

    def remember(self, path: str, before: _FileIdentity, events: list[Event]) -> None:
        """Keep ``events`` when small enough and ``path`` still has identity ``before``."""
        keep = len(events) <= SHARED_MAX_EVENTS and _identity(path) == before
        with self._lock:
            self._kept = (path, before, events) if keep else None

    def whole_log(self, path: str) -> list[Event] | None:
        """Every event of the log at ``path``, from its start to its last complete line, when
        the last decode kept is exactly that, made without any problem, and the file has not
        changed since (same device, inode, size and modification time); else ``None``. Handed
        out once (then forgotten, so it is not kept alive longer than needed); do not modify
        the list."""
        handed = self.take_kept(path)
        return None if handed is None else handed[1]

    def take_kept(self, path: str) -> tuple[_FileIdentity, list[Event]] | None:
        """The kept decode of ``path`` with its identity (forgotten either way)."""
        with self._lock:
            found, self._kept = self._kept, None
        if found is None or found[0] != path or _identity(path) != found[1]:
            return None
        return found[1], found[2]

    def kept_path(self) -> str | None:
        """The path whose decode is kept, if any (tests)."""
        with self._lock:
            return None if self._kept is None else self._kept[0]

    def forget(self) -> None:
        """Drop the kept decode (memory)."""
        with self._lock:
            self._kept = None
