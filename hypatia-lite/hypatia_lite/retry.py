"""The one retry rule of hypatia-lite: a number of attempts, and a back-off between them.

Four places retry: a SQLite statement that found the database locked
(:func:`hypatia_lite.db.retry_locked`), a PostgreSQL statement that lost its connection or a
lock (:meth:`hypatia_lite.pg.backend.PgBackend.run`), an update whose compare-and-swap met a
concurrent writer (:meth:`hypatia_lite.store.LiteStore.knowledge_update`) and a ``VACUUM FULL``
that had to keep dead row versions (:func:`hypatia_lite.pg.vacuum.rewrite_clean`). Each says its
attempts and :class:`Backoff`; :func:`call` retries on exceptions, :func:`attempts` paces a loop
that retries on a result.

Not tenacity: importing it costs about 110 ms (``python -X importtime -c "import tenacity"``,
asyncio included), half again what ``hypatia_lite.store`` costs, paid by every short
``hypatia-lite`` command; these rules need a dozen lines.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

Sleep = Callable[[float], None]


@dataclass(frozen=True)
class Backoff:
    """The pause before retry ``n`` (1 for the first): ``first * factor ** (n - 1)``, at most
    ``cap``; with ``jitter``, a uniformly random part of it (full jitter), so that processes
    which met once do not meet again in lockstep."""

    first: float
    factor: float = 2.0
    cap: float = float("inf")
    jitter: bool = False

    def delay(self, retry: int) -> float:
        pause = min(self.first * self.factor ** (retry - 1), self.cap)
        return random.uniform(0, pause) if self.jitter else pause


def attempts(times: int, backoff: Backoff, *, sleep: Sleep = time.sleep) -> Iterator[int]:
    """Attempt numbers ``0 .. times - 1``, pausing ``backoff.delay(n)`` before attempt ``n > 0``
    (never before the first, never after the last): ``for _ in attempts(…): … if done: return``."""
    for attempt in range(times):
        if attempt:
            sleep(backoff.delay(attempt))
        yield attempt


def call(
    action: Callable[[], T],
    *,
    times: int,
    backoff: Backoff,
    retry_on: Callable[[BaseException], bool],
    between: Callable[[], None] | None = None,
    sleep: Sleep = time.sleep,
) -> T:
    """``action()``, tried up to ``times`` times while it raises an exception ``retry_on``
    accepts (``between`` runs after each pause, before the next try, e.g. to reconnect). An
    exception ``retry_on`` refuses propagates at once; the last try's exception propagates when
    every try failed."""
    for attempt in attempts(times, backoff, sleep=sleep):
        if attempt and between is not None:
            between()
        try:
            return action()
        except Exception as err:
            if attempt == times - 1 or not retry_on(err):
                raise
    raise ValueError(f"retry.call needs at least one attempt, not {times}")
