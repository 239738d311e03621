"""The pipeline's jobs as plain functions with explicit dependencies — the public face of
:mod:`worker.jobs`.

* :func:`log_span` — take the lease; read ``[from, to)`` and the marker window to the durable
  end; write message entries get-before-create; skip / retract per the withdrawal decision and
  record retractions; settle owed ``belongTo`` edges with the skip set; advance
  ``last_logged_seq`` and ``last_belong_to_index`` after the writes.
* :func:`session_node` — the first title / compaction summary → ``session-<id>`` + owed edges;
  never replaced by a later title.
* :func:`run_job` — the one wrapper (lease, retry, metrics, failure recording) both the
  in-process runner and the Celery tasks call.

Consolidation and cascade are a later issue; their seam is :class:`ConsolidationOwed`, handed to
``Runtime.consolidation_hook`` when a session is idle-closed (the session row's ``closed_at``
records it too).
"""

from __future__ import annotations

from worker.jobs.context import JobContext, JobOutput, JobResult
from worker.jobs.guard import JOBS, register_job, run_job
from worker.jobs.housekeeping import reconcile_with_store
from worker.jobs.log_span import log_span, settle_edges
from worker.jobs.logread import PermanentJobError, TransientJobError, read_window
from worker.jobs.runtime import (
    ConsolidationHook,
    ConsolidationOwed,
    Runtime,
    build_runtime,
    default_owner,
)
from worker.jobs.session_node import session_node

JOB_LOG_SPAN = "log_span"
JOB_SESSION_NODE = "session_node"

__all__ = [
    "JOBS",
    "JOB_LOG_SPAN",
    "JOB_SESSION_NODE",
    "ConsolidationHook",
    "ConsolidationOwed",
    "JobContext",
    "JobOutput",
    "JobResult",
    "PermanentJobError",
    "Runtime",
    "TransientJobError",
    "build_runtime",
    "default_owner",
    "log_span",
    "read_window",
    "reconcile_with_store",
    "register_job",
    "run_job",
    "session_node",
    "settle_edges",
]
