"""The one table of jobs: every job the guard (:func:`worker.jobs.guard.run_job`), the in-process
runner and the Celery tasks can run, by its name (:mod:`worker.names`).

Nothing registers itself at import time; a test or an extension adds a job with
:func:`register_job` and it gets the same lease, retry, metrics and failure recording.
"""

from __future__ import annotations

from collections.abc import Callable

from dsh_memory_worker.worker.jobs.cascade import cascade
from dsh_memory_worker.worker.jobs.consolidate import consolidate
from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput
from dsh_memory_worker.worker.jobs.log_span import log_span
from dsh_memory_worker.worker.jobs.retract import retract_job
from dsh_memory_worker.worker.jobs.rewrite_job import rewrite_job
from dsh_memory_worker.worker.jobs.session_node import session_node
from dsh_memory_worker.worker.names import (
    JOB_CASCADE,
    JOB_CONSOLIDATE,
    JOB_LOG_SPAN,
    JOB_RETRACT,
    JOB_REWRITE,
    JOB_SESSION_NODE,
)

Job = Callable[[JobContext], JobOutput]

#: Job name → job.
JOBS: dict[str, Job] = {
    JOB_LOG_SPAN: log_span,
    JOB_SESSION_NODE: session_node,
    JOB_CONSOLIDATE: consolidate,
    JOB_CASCADE: cascade,
    JOB_RETRACT: retract_job,
    JOB_REWRITE: rewrite_job,
}


def register_job(name: str, job: Job) -> None:
    """Add a job to the table (a test's probe, an extension's job); it runs under the same guard
    as the built-in ones."""
    if name in JOBS and JOBS[name] is not job:
        raise ValueError(f"a different job is already registered as {name!r}")
    JOBS[name] = job


__all__ = ["JOBS", "Job", "register_job"]
