"""How long a job answered ``retry`` waits before its next attempt, in process (the runner) and
through Celery (the tasks): one formula for both executors."""

from __future__ import annotations

import random
from typing import Final

_MAX_BACKOFF_S: Final = 600.0


def backoff_s(retries: int, base_s: float) -> float:
    """Exponential backoff with jitter: ``base * 2**retries`` (at most 600 s) scaled by a factor
    in [0.5, 1.5)."""
    ceiling = min(_MAX_BACKOFF_S, base_s * float(2**retries))
    return float(ceiling * (0.5 + random.random()))
