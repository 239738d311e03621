"""The hints the clock owes, not new bytes: step flushes and idle-closes.

* A turn whose ``step/end`` was seen but whose ``turn/end`` was not is flushed at step
  boundaries once ``flush_window_s`` has passed since that first ``step/end``: one ``log_span``
  hint at the deadline.
* A session whose log has not grown for ``idle_close_s`` is idle-closed: one ``log_span`` hint
  per durable end (the job flushes the tail and owes the consolidation). The state database is
  asked at most every few seconds, and not at all while every session is closed and none grew.

The watcher tells :class:`TimedHints` what its scans saw (:meth:`turn_ended`,
:meth:`step_pending`, :meth:`grew`), calls :meth:`send_due` after each poll and sleeps no longer
than :meth:`next_due`.
"""

from __future__ import annotations

import time

from dsh_memory_worker.worker.jobs.runtime import Enqueue, Runtime, ms_of
from dsh_memory_worker.worker.names import JOB_LOG_SPAN
from dsh_memory_worker.worker.state.unsettled import open_sessions


class TimedHints:
    """Step-flush deadlines and idle-close checks of one watcher."""

    def __init__(self, runtime: Runtime, enqueue: Enqueue, shelf: str) -> None:
        self.runtime = runtime
        self.enqueue = enqueue
        self.shelf = shelf
        self._step_deadline: dict[str, int] = {}  # sid → epoch ms
        self._idle_hinted: dict[str, int] = {}  # sid → durable end it was hinted at
        self._next_idle_check = 0.0  # monotonic
        self._idle_check_needed = True  # some session may be open (not idle-closed yet)

    # ------------------------------------------------------------------ what the scans saw

    def turn_ended(self, session_id: str) -> None:
        """A ``turn/end`` was logged: no step flush is owed for the turn."""
        self._step_deadline.pop(session_id, None)

    def step_pending(self, session_id: str, first_step_ms: int | None) -> None:
        """A ``step/end`` after the last ``turn/end`` (at ``first_step_ms``, or now): flush at
        the window's end unless the turn ends first."""
        if session_id not in self._step_deadline:
            first = first_step_ms or self.runtime.now_ms()
            window = int(self.runtime.settings.flush_window_s * 1000)
            self._step_deadline[session_id] = first + window

    def grew(self) -> None:
        """Some session grew: it may go idle later, so idle checks are needed again."""
        self._idle_check_needed = True

    # ------------------------------------------------------------------------------ hints

    def send_due(self, *, skip_idle_when_closed: bool = False) -> int:
        """Hint every step flush whose deadline passed and every session gone idle (unless
        ``skip_idle_when_closed`` and every session was closed at the last check and none grew
        since); returns the number of hints sent."""
        now = self.runtime.now_ms()
        sent = 0
        for sid, deadline in list(self._step_deadline.items()):
            if now >= deadline:
                del self._step_deadline[sid]
                self.enqueue(JOB_LOG_SPAN, sid, self.shelf)
                sent += 1
        if skip_idle_when_closed and not self._idle_check_needed:
            return sent
        return sent + self._send_idle_closes(now)

    def next_due(self, now: float) -> float | None:
        """The monotonic time of the next step flush or idle check (None: nothing is due)."""
        due: list[float] = []
        if self._step_deadline:
            due.append(now + (min(self._step_deadline.values()) - self.runtime.now_ms()) / 1000)
        if self._idle_check_needed:
            due.append(self._next_idle_check)
        return min(due) if due else None

    def _send_idle_closes(self, now_ms: int) -> int:
        if time.monotonic() < self._next_idle_check:
            return 0
        settings = self.runtime.settings
        self._next_idle_check = time.monotonic() + min(5.0, settings.idle_close_s / 4)
        idle_ms = int(settings.idle_close_s * 1000)
        with self.runtime.state.read() as repos:
            open_ = sorted(open_sessions(repos.conn), key=lambda s: s.session_id)
        # No open session: a notified loop need not look again until a session grows (a
        # session the jobs re-open is found by the reconcile's idle-close all the same).
        self._idle_check_needed = bool(open_)
        sent = 0
        for state in open_:
            if now_ms - (ms_of(state.last_activity_at) or 0) < idle_ms:
                continue
            if self._idle_hinted.get(state.session_id) == state.durable_end_seq:
                continue
            self._idle_hinted[state.session_id] = state.durable_end_seq
            self.enqueue(JOB_LOG_SPAN, state.session_id, self.shelf)
            sent += 1
        return sent
