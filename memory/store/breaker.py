"""A breaker per store: a store that keeps timing out is treated as down instead of being waited
on call after call.

Without it every store call of a job waits the full ``timeout_s`` against a hanging store (a job
makes ~27 calls, each retried), so one session could take many minutes. The ``cli`` and ``mcp``
adapters report each call's end here: after ``threshold`` timeouts in a row the breaker *opens*
and every call fails at once with :class:`StoreDown` (a :class:`FatalStoreError`: nothing
retries it) for ``cooldown_s``; then one call is let through as a trial, and its timeout opens the
breaker again at once, its answer closes it. Any answer (an error reply included) resets the
count: the store is slow or wrong, not gone. So a run against a hanging store waits at most
``threshold × timeout_s`` for it, plus one ``timeout_s`` per ``cooldown_s`` of run time.

The breaker is kept by the caller across reopenings of the store (a fatal error drops the
handle; the next job opens a new one with the same breaker), and is thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memory.store.base import FatalStoreError, TransientStoreError

DEFAULT_THRESHOLD = 3
DEFAULT_COOLDOWN_S = 300.0


class StoreTimeout(TransientStoreError):
    """One store call got no answer within its timeout (the call was abandoned)."""


class StoreDown(FatalStoreError):
    """The breaker is open: the store timed out ``threshold`` times in a row."""


class Breaker:
    """Counts consecutive timeouts of one store (see the module doc)."""

    def __init__(
        self,
        threshold: int = DEFAULT_THRESHOLD,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold = max(1, int(threshold))
        self.cooldown_s = float(cooldown_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._timeouts = 0
        self._open_until: float | None = None
        self._last_timeout = ""

    @property
    def is_open(self) -> bool:
        """True while calls are refused (the store is treated as down)."""
        with self._lock:
            return self._open_until is not None and self._clock() < self._open_until

    def before_call(self, what: str) -> None:
        """Raise :class:`StoreDown` while the breaker is open; after the cool-down let one call
        through (a trial)."""
        with self._lock:
            if self._open_until is None:
                return
            if self._clock() < self._open_until:
                raise StoreDown(
                    f"{what}: the store is treated as down after {self._timeouts} timeouts in a "
                    f"row (last: {self._last_timeout}); no call is made until "
                    f"{self.cooldown_s:g} s have passed"
                )
            # The trial: a timeout now reopens at once (the count is still at the threshold).
            self._open_until = None

    def answered(self) -> None:
        """The store answered (whatever it said): it is up."""
        with self._lock:
            self._timeouts = 0
            self._open_until = None

    def timed_out(self, detail: str) -> bool:
        """One more timeout in a row; True when this one opened the breaker."""
        with self._lock:
            self._timeouts += 1
            self._last_timeout = detail
            if self._timeouts >= self.threshold:
                self._open_until = self._clock() + self.cooldown_s
                return True
            return False


__all__ = ["DEFAULT_COOLDOWN_S", "DEFAULT_THRESHOLD", "Breaker", "StoreDown", "StoreTimeout"]
