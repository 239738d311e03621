"""A breaker per store: a store that keeps timing out is treated as down instead of being waited
on call after call.

Without it every store call of a job waits the full ``timeout_s`` against a hanging store (a job
makes ~27 calls, each retried), so one session could take many minutes. The ``cli`` and ``mcp``
adapters report each call's end here. The breaker counts the timeouts of the last ``window_s``
seconds (a sliding window): the ``threshold``-th timeout within it *opens* the breaker, whatever
answers came between them, and every call then fails at once with :class:`StoreDown` (a
:class:`FatalStoreError`: nothing retries it) for ``cooldown_s``; then one call is let through as
a trial, and its timeout opens the breaker again at once; its answer closes it *on probation*:
any timeout within ``window_s`` of that answer reopens it at once. Answers do not reset the
count: a store that alternately hangs and answers (*flaps*) opens the breaker on its
``threshold``-th timeout like one that only hangs (counting timeouts *in a row*, as this module
once did, a flapping store never opened it and each session waited on ~15 timeouts). An answer
only lets old timeouts age out of the window: a store that is slow now and then (fewer than
``threshold`` timeouts in any ``window_s``) is never treated as down.

The bound, hanging or flapping: a run waits on timeouts at most ``threshold × timeout_s``, plus
one ``timeout_s`` per ``cooldown_s`` of run time (the trial, or the first timeout after a trial
that answered), for as long as the store keeps timing out at least once per ``window_s``; a
store that went a whole ``window_s`` without a timeout starts afresh.

The breaker is kept by the caller across reopenings of the store (a fatal error drops the
handle; the next job opens a new one with the same breaker), and is thread-safe. A deque of
timestamps is all it needs; the circuit-breaker libraries on PyPI (``pybreaker``,
``circuitbreaker``) count failures in a row, the very rule a flapping store defeats.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from dsh_memory_worker.memory.store.base import FatalStoreError, TransientStoreError

DEFAULT_THRESHOLD = 3
DEFAULT_COOLDOWN_S = 300.0
DEFAULT_WINDOW_S = 300.0


class StoreTimeout(TransientStoreError):
    """One store call got no answer within its timeout (the call was abandoned)."""


class StoreDown(FatalStoreError):
    """The breaker is open: the store timed out ``threshold`` times within ``window_s``."""


class Breaker:
    """Counts one store's timeouts in a sliding window of time (see the module doc)."""

    def __init__(
        self,
        threshold: int = DEFAULT_THRESHOLD,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
        window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self.threshold = max(1, int(threshold))
        self.cooldown_s = float(cooldown_s)
        self.window_s = float(window_s)
        self._clock = clock
        self._lock = threading.Lock()
        #: When each timeout of the last ``window_s`` seconds happened (oldest first).
        self._timeouts: deque[float] = deque()
        self._open_until: float | None = None
        self._trial = False
        #: After a trial answered: a timeout before this time reopens the breaker at once.
        self._probation_until = float("-inf")
        self._opened_after = 0
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
                count = self._opened_after
                raise StoreDown(
                    f"{what}: the store is treated as down after {count} timeout"
                    f"{'' if count == 1 else 's'} within {self.window_s:g} s (last: "
                    f"{self._last_timeout}); no call is made until {self.cooldown_s:g} s have "
                    "passed"
                )
            # The trial: its timeout reopens the breaker at once, its answer closes it.
            self._open_until = None
            self._trial = True

    def answered(self) -> None:
        """The store answered (whatever it said): a trial closes the breaker, on probation. The
        timeouts of the window stay counted: a store that answers between its hangs is flapping,
        not up."""
        with self._lock:
            if self._trial:
                self._probation_until = self._clock() + self.window_s
            self._trial = False
            self._open_until = None

    def timed_out(self, detail: str) -> bool:
        """One more timeout; True when this one opened the breaker."""
        with self._lock:
            now = self._clock()
            self._timeouts.append(now)
            while self._timeouts[0] <= now - self.window_s:
                self._timeouts.popleft()
            self._last_timeout = detail
            on_trial = self._trial or now < self._probation_until
            if on_trial or len(self._timeouts) >= self.threshold:
                self._trial = False
                self._opened_after = len(self._timeouts)
                self._open_until = now + self.cooldown_s
                return True
            return False


__all__ = [
    "DEFAULT_COOLDOWN_S",
    "DEFAULT_THRESHOLD",
    "DEFAULT_WINDOW_S",
    "Breaker",
    "StoreDown",
    "StoreTimeout",
]
