"""The pipeline's jobs as plain functions with explicit dependencies — the public face of
:mod:`worker.jobs`.

* :func:`log_span` — take the lease; read ``[from, to)`` and the marker window to the durable
  end; write message entries get-before-create; skip / retract per the withdrawal decision and
  record retractions; settle owed ``belongTo`` edges with the skip set; advance
  ``last_logged_seq`` and ``last_belong_to_index`` after the writes.
* :func:`session_node` — the first clean title / compaction summary → ``session-<id>`` + owed
  edges; never replaced by a later title, rewritten or deleted when a withdrawal taints it.
* :func:`run_job` — the one wrapper (lease, retry, metrics, failure recording) both the
  in-process runner and the Celery tasks call.

* :func:`consolidate` — the turn-end gate (or thresholds waived after an idle-close or for a
  ``reconsolidate`` request), the span summary with its ``summary`` edges, the work units, then
  ``last_consolidated_seq``; owes ``cascade``.
* :func:`cascade` — the project's log₁₆ archive tiers 2…8.
* :func:`request_reconsolidation` — queue a session's owed span (or a seq range) on demand.
* :func:`retract_job` — a retraction run of one session: withdrawn entries still in the store
  are removed and the summaries, archives and work units built on them repaired
  (``worker.jobs.repair``); ``log_span`` does the same right after it retracts, and
  :func:`resume_repairs` finishes repairs a crash interrupted.

``log_span`` owes a consolidation through ``Runtime.consolidation_hook``
(:class:`ConsolidationOwed`)
after a turn and at idle-close; :func:`owe_consolidation` wires that hook to a job queue.
"""

from __future__ import annotations

from worker.jobs.cascade import JOB_CASCADE, build_archive, cascade, run_cascade
from worker.jobs.consolidate import JOB_CONSOLIDATE, consolidate, write_span_summary
from worker.jobs.context import JobContext, JobOutput, JobResult
from worker.jobs.guard import JOBS, register_job, run_job
from worker.jobs.housekeeping import reconcile_with_store
from worker.jobs.log_span import log_span, settle_edges
from worker.jobs.logread import PermanentJobError, TransientJobError, read_window
from worker.jobs.reconsolidate import ReconsolidateResult, request_reconsolidation
from worker.jobs.retract import JOB_RETRACT, resume_repairs, retract_job
from worker.jobs.runtime import (
    ConsolidationHook,
    ConsolidationOwed,
    Runtime,
    build_runtime,
    default_owner,
    owe_consolidation,
)
from worker.jobs.session_node import session_node
from worker.jobs.work_units import extract_work_units, store_work_unit

JOB_LOG_SPAN = "log_span"
JOB_SESSION_NODE = "session_node"

register_job(JOB_CONSOLIDATE, consolidate)
register_job(JOB_CASCADE, cascade)
register_job(JOB_RETRACT, retract_job)

__all__ = [
    "JOBS",
    "JOB_CASCADE",
    "JOB_CONSOLIDATE",
    "JOB_LOG_SPAN",
    "JOB_RETRACT",
    "JOB_SESSION_NODE",
    "ConsolidationHook",
    "ConsolidationOwed",
    "JobContext",
    "JobOutput",
    "JobResult",
    "PermanentJobError",
    "ReconsolidateResult",
    "Runtime",
    "TransientJobError",
    "build_archive",
    "build_runtime",
    "cascade",
    "consolidate",
    "default_owner",
    "extract_work_units",
    "log_span",
    "owe_consolidation",
    "read_window",
    "reconcile_with_store",
    "register_job",
    "request_reconsolidation",
    "resume_repairs",
    "retract_job",
    "run_cascade",
    "run_job",
    "session_node",
    "settle_edges",
    "store_work_unit",
    "write_span_summary",
]
