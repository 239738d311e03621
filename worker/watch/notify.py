"""File-system notifications for the sessions root, through watchdog (inotify on Linux, FSEvents on
macOS, ReadDirectoryChangesW on Windows).

Why watchdog and not watchfiles: watchdog's inotify observer blocks on the inotify descriptor, so
a follower at rest wakes for nothing; watchfiles' Rust loop wakes every ``step`` ms to take the
GIL and check its stop event (measured here: 0.3 % of a core at a 25 ms step, 0.6 % at 10 ms,
and a 50 ms latency goal needs a step of 20 ms or less), and it imports ``anyio``.

:class:`Notifier` collects the paths that changed (created, written, closed after writing, moved,
deleted; never opened or read, so the watcher's own reads wake nothing) until the watcher takes
them. When notifications cannot be had (no native observer, the root is missing, the inotify
watch limit, the observer thread died) :meth:`Notifier.start` returns ``False`` or
:attr:`Notifier.failed` is set, and the watcher polls as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Notifier:
    """Changed paths under ``root``, gathered by a watchdog observer thread."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.failed: str | None = None
        self._observer: Any = None
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._event = threading.Event()

    @property
    def running(self) -> bool:
        return self._observer is not None and self.failed is None and self._observer.is_alive()

    def start(self) -> bool:
        """Start watching ``root`` recursively; ``False`` (and :attr:`failed` says why) when
        notifications are not available."""
        self.stop()
        self.failed = None
        try:
            # Imported here: only a follower loads watchdog (`run --once`, the CLI do not).
            from watchdog import events
            from watchdog.observers import Observer
            from watchdog.observers.polling import PollingObserver
        except ImportError as exc:  # pragma: no cover - a dependency
            self.failed = f"watchdog is not available ({exc})"
            return False
        if not self.root.is_dir():
            self.failed = f"{self.root} is not a directory"
            return False
        notifier = self

        class _Handler(events.FileSystemEventHandler):
            def on_any_event(self, event: events.FileSystemEvent) -> None:
                notifier._add(event)

        wanted: list[type[events.FileSystemEvent]] = [
            events.FileCreatedEvent,
            events.FileModifiedEvent,
            events.FileMovedEvent,
            events.FileDeletedEvent,
            events.FileClosedEvent,
            events.DirCreatedEvent,
            events.DirModifiedEvent,
            events.DirMovedEvent,
            events.DirDeletedEvent,
        ]
        observer = Observer()
        if isinstance(observer, PollingObserver):  # no native notifications: ours polls better
            self.failed = "no native file-system notifications on this platform"
            return False
        try:
            observer.schedule(_Handler(), str(self.root), recursive=True, event_filter=wanted)
            observer.start()
        except Exception as exc:  # e.g. OSError(ENOSPC): the inotify watch limit
            self.failed = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):  # it did not start: nothing to stop
                observer.stop()
            return False
        self._observer = observer
        return True

    def _add(self, event: Any) -> None:
        with self._lock:
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    self._paths.add(path if isinstance(path, str) else path.decode())
        self._event.set()

    def wake(self) -> None:
        """End a :meth:`wait` now (the watcher is stopping)."""
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a change; ``True`` when there is one."""
        return self._event.wait(max(0.0, timeout))

    def take(self) -> set[str]:
        """The paths changed since the last call (and clear them)."""
        with self._lock:
            paths, self._paths = self._paths, set()
            self._event.clear()
        if self._observer is not None and not self._observer.is_alive() and self.failed is None:
            self.failed = "the notification thread stopped"
        return paths

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            try:
                observer.stop()
                observer.join(timeout=5)
            except Exception as exc:  # stopping must not fail the watcher
                log.debug("stopping file-system notifications: %s", exc)
