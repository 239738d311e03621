"""Saying so when a write to the SQLite state database waits for another process's lock.

Every writing transaction opens with ``BEGIN IMMEDIATE``, which SQLite's busy handler holds
until the lock is free or ``busy_timeout`` passes (:mod:`worker.state.db`). Without a word, a
lock another process keeps looks like a hung worker. So each ``BEGIN IMMEDIATE`` registers its
start here (a dictionary write: nothing on the fast path), and one watcher thread, awake only
while some BEGIN is pending, logs one line when a wait passes :data:`FIRST_NOTICE_S`:
``waiting for the state database lock (<path>), 2 s`` — and another every :data:`EVERY_S` while
it lasts, and one when the lock was had after a notice.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

log = logging.getLogger(__name__)

FIRST_NOTICE_S = 2.0
EVERY_S = 10.0
_CHECK_S = 0.5


class LockWaits:
    """The pending ``BEGIN IMMEDIATE`` of one database file, watched by one thread."""

    def __init__(
        self, where: str, *, first_notice_s: float = FIRST_NOTICE_S, every_s: float = EVERY_S
    ) -> None:
        self.where = where
        self.first_notice_s = first_notice_s
        self.every_s = every_s
        #: thread id → [started (monotonic), next notice at (seconds waited), noticed (0/1)]
        self._waits: dict[int, list[float]] = {}
        self._wake = threading.Event()
        self._idle = True
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Around one ``BEGIN IMMEDIATE``."""
        key = threading.get_ident()
        entry = [time.monotonic(), self.first_notice_s, 0.0]
        self._waits[key] = entry
        if self._idle:
            self._start()
        try:
            yield
        finally:
            self._waits.pop(key, None)
            if entry[2]:
                log.warning(
                    "got the state database lock (%s) after %d s",
                    self.where,
                    time.monotonic() - entry[0],
                )

    def _start(self) -> None:
        with self._lock:
            self._idle = False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._watch, name="state-lock-wait", daemon=True
                )
                self._thread.start()
            else:
                self._wake.set()

    def _watch(self) -> None:
        while True:
            time.sleep(_CHECK_S)
            now = time.monotonic()
            for entry in list(self._waits.values()):
                waited = now - entry[0]
                if waited >= entry[1]:
                    entry[1] = waited + self.every_s
                    entry[2] = 1.0
                    log.warning(
                        "waiting for the state database lock (%s), %d s: another process holds it",
                        self.where,
                        waited,
                    )
            if not self._waits:
                with self._lock:
                    self._idle = True
                    self._wake.clear()
                    if self._waits:  # registered while it was going idle
                        self._idle = False
                        continue
                self._wake.wait()
