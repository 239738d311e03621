"""How many processes ``run --once --jobs N`` should really use: what the cores and the home allow.

More processes than free cores only share the busy ones, and every process costs a fork, a
runtime of its own and the final pass: on a busy machine, or for a small home, ``--jobs 2`` would
be slower than one process. So the parent measures the cores left to it while it discovers the
sessions (:class:`CpuProbe`: the idle time of the CPUs it may run on over that window, plus its
own CPU time in it, through psutil) and :func:`plan_processes` chooses the count:

- no more than requested, than sessions, or than one per :data:`MIN_BYTES_PER_PROCESS` of log;
- no more than the free cores, rounded up from :data:`ROUND_UP_FROM` of a core (two processes on
  1.4 free cores still gain more than their overhead; on 1.2 they do not).

``jobs_adapt = false`` (``MEMORY_WORKER_JOBS_ADAPT=false``) keeps exactly N: for a machine whose
load is known, and for the tests that must see N processes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

#: The shortest window the free cores are measured over (seconds): shorter reads are noise.
MIN_WINDOW_S = 0.1
#: A share of a core this large counts as one more core.
ROUND_UP_FROM = 0.4
#: Less log than this per process: its start-up and the final pass outweigh the split.
MIN_BYTES_PER_PROCESS = 256 << 10


@dataclass(frozen=True, slots=True)
class ProcessPlan:
    """The processes to use and, when fewer than requested, why (one line's worth)."""

    count: int
    why: str | None = None


def plan_processes(
    requested: int, *, free_cores: float, sessions: int, log_bytes: int
) -> ProcessPlan:
    """The number of processes to split ``sessions`` (``log_bytes`` of logs in all) over, out
    of ``requested``, given ``free_cores`` measured just before."""
    usable = max(1, int(free_cores + (1 - ROUND_UP_FROM)))
    by_size = max(1, log_bytes // MIN_BYTES_PER_PROCESS)
    count = max(1, min(requested, usable, sessions, by_size))
    if count == requested:
        return ProcessPlan(count)
    if count == usable and usable < requested:
        why = f"{free_cores:.1f} of {_cores()} cores free"
    elif count == sessions:
        why = f"{sessions} session(s)"
    else:
        why = f"{log_bytes / (1 << 20):.1f} MiB of logs"
    return ProcessPlan(count, why)


class CpuProbe:
    """The free cores of this process's CPUs, measured from construction to :meth:`free_cores`
    (this process's own CPU time in the window counts as free: it is the work being planned)."""

    def __init__(self) -> None:
        self._cpus = sorted(os.sched_getaffinity(0))
        self._me = psutil.Process()
        self._started = time.monotonic()
        self._idle = self._idle_seconds()
        self._own = self._own_seconds()

    def free_cores(self) -> float:
        """Idle cores over the window (waits out :data:`MIN_WINDOW_S` if it is shorter)."""
        left = MIN_WINDOW_S - (time.monotonic() - self._started)
        if left > 0:
            time.sleep(left)
        elapsed = time.monotonic() - self._started
        idle = self._idle_seconds() - self._idle
        own = self._own_seconds() - self._own
        return max(0.0, min(float(len(self._cpus)), (idle + own) / elapsed))

    def _idle_seconds(self) -> float:
        times = psutil.cpu_times(percpu=True)
        # Time waiting for the disk is time a core could have computed.
        return sum(
            times[cpu].idle + getattr(times[cpu], "iowait", 0.0)
            for cpu in self._cpus
            if cpu < len(times)
        )

    def _own_seconds(self) -> float:
        mine = self._me.cpu_times()
        return mine.user + mine.system


def _cores() -> int:
    return len(os.sched_getaffinity(0))
