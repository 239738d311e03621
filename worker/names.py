"""Every name the runtime shares with the outside world, defined once: Celery task and queue
names (other processes route on them) and lease keys (rows in the state database). The memory
layout's names (entries, tags, relations, the default withdrawal whitelist) live in
``memory/constants.py``."""

from __future__ import annotations

from typing import Final

#: Job names: the keys of the job table (:data:`worker.jobs.registry.JOBS`), of the failure rows
#: and of the hints every executor sends.
JOB_LOG_SPAN: Final = "log_span"
JOB_SESSION_NODE: Final = "session_node"
JOB_CONSOLIDATE: Final = "consolidate"
JOB_CASCADE: Final = "cascade"
JOB_RETRACT: Final = "retract"
JOB_REWRITE: Final = "rewrite"

#: One Celery task per job kind (Flower and ``celery events`` tell them apart by name); the
#: message carries only ``(session_id, shelf)``.
TASK_OF_JOB: Final = {
    job: f"memory_worker.{job}"
    for job in (
        JOB_LOG_SPAN,
        JOB_SESSION_NODE,
        JOB_CONSOLIDATE,
        JOB_CASCADE,
        JOB_RETRACT,
        JOB_REWRITE,
    )
}
TASK_LOG_SPAN: Final = TASK_OF_JOB[JOB_LOG_SPAN]
TASK_SESSION_NODE: Final = TASK_OF_JOB[JOB_SESSION_NODE]
#: Any other job added with ``worker.jobs.registry.register_job`` (its name travels as an argument).
TASK_JOB: Final = "memory_worker.job"
DEFAULT_QUEUE: Final = "memory-worker"

#: The audit action of a fork child's check against an incomplete seed (worker.jobs.seed_repair).
ACTION_SEED_CHECK: Final = "seed-check"

SESSION_LEASE: Final = "session:{session_id}"
ARCHIVE_LEASE: Final = "archives:{project}"


def session_lease_key(session_id: str) -> str:
    """The lease key that makes work on one session exclusive."""
    return SESSION_LEASE.format(session_id=session_id)


def archive_lease_key(project: str) -> str:
    """The lease that serialises rewrites of one project's archives."""
    return ARCHIVE_LEASE.format(project=project)
