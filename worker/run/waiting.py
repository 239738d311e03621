"""What a ``run --once`` leaves waiting on a back-off, said and named (issue 32, item 9).

A ``consolidate``, ``retract`` or ``rewrite`` job that failed transiently (a model outage, a
store that timed out) is not hinted again until its back-off has passed: a minute per recorded
attempt, at most an hour (:func:`worker.watch.owed.backoff_s`). A run inside that wait does not
try the job, so it cannot finish the session either: it says on one line per job what waits and
until when, and names those sessions as not finished in its summary (exit 1), like any session
it could not finish. A job already named by this run (it failed here) gets no second line. A
permanent failure waits for its log to grow, not for the clock: ``status`` shows it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.names import JOB_CONSOLIDATE
from dsh_memory_worker.worker.watch.owed import BACKED_OFF_JOBS, backoff_s

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.run.once_children import OnceTotals


@dataclass(frozen=True, slots=True)
class Waiting:
    """A job of a session held back by its back-off until ``until``."""

    job: str
    session_id: str
    until: dt.datetime


def waiting_after_failures(runtime: Runtime) -> list[Waiting]:
    """Every job owed but held back by the back-off after a transient failure, now (a job's
    failure row is cleared when its work is done)."""
    settings = runtime.settings
    consolidating = settings.consolidation_enabled and bool(settings.model_routes)
    now = runtime.now()
    found = []
    with runtime.state.read() as repos:
        for failure in repos.failures.list(permanent=False):
            if failure.task not in BACKED_OFF_JOBS:
                continue
            if failure.task == JOB_CONSOLIDATE and not consolidating:
                continue  # not owed at all without a model route
            until = failure.last_at + dt.timedelta(seconds=backoff_s(failure.attempts))
            if until > now and repos.sessions.get(failure.session_id) is not None:
                found.append(Waiting(failure.task, failure.session_id, until))
    return sorted(found, key=lambda w: (w.job, w.session_id))


def note_waiting(runtime: Runtime, totals: OnceTotals) -> list[str]:
    """Name every waiting job's session as not finished in ``totals``; return the lines that say
    what waits and until when (one per job, for the jobs this run has not named already)."""
    named = set(totals.unfinished)
    by_job: dict[str, list[Waiting]] = {}
    for item in waiting_after_failures(runtime):
        key = (item.job, item.session_id)
        stamp = item.until.strftime("%Y-%m-%d %H:%M:%S")
        totals.unfinished.setdefault(key, f"waits after a failure until {stamp} UTC")
        if key not in named:
            by_job.setdefault(item.job, []).append(item)
    lines = []
    for job, items in sorted(by_job.items()):
        until = max(item.until for item in items).strftime("%Y-%m-%d %H:%M:%S")
        sessions = printable(", ".join(item.session_id for item in items))
        lines.append(
            f"memory-worker: {job} waits after a failure (back-off) until {until} UTC: "
            f"{sessions}; a run after that tries again (`memory-worker status` shows why)"
        )
    return lines


__all__ = ["Waiting", "note_waiting", "waiting_after_failures"]
