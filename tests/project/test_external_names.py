"""Names other processes and the state database rely on are defined once, with fixed formats."""

from __future__ import annotations

from dsh_memory_worker.memory.constants import DEFAULT_WITHDRAWAL_WHITELIST
from dsh_memory_worker.worker import names
from dsh_memory_worker.worker.run import tasks
from dsh_memory_worker.worker.settings import Settings


def test_task_and_queue_names() -> None:
    assert names.TASK_LOG_SPAN == "memory_worker.log_span"
    assert names.TASK_SESSION_NODE == "memory_worker.session_node"
    assert names.TASK_JOB == "memory_worker.job"
    assert names.DEFAULT_QUEUE == "memory-worker"
    assert names.TASK_OF_JOB == {
        "log_span": "memory_worker.log_span",
        "session_node": "memory_worker.session_node",
        "consolidate": "memory_worker.consolidate",
        "cascade": "memory_worker.cascade",
        "retract": "memory_worker.retract",
        "rewrite": "memory_worker.rewrite",
    }
    assert {*names.TASK_OF_JOB.values(), names.TASK_JOB} <= set(tasks.app.tasks)


def test_every_built_in_job_has_its_own_task() -> None:
    from dsh_memory_worker.worker.jobs.registry import JOBS

    # Jobs other test modules register at import (collection) time are not built in.
    built_in = {
        name for name, job in JOBS.items() if job.__module__.startswith("dsh_memory_worker.worker.")
    }
    assert built_in == set(names.TASK_OF_JOB)
    assert {job: task.name for job, task in tasks.TASKS.items()} == names.TASK_OF_JOB


def test_lease_keys() -> None:
    assert names.session_lease_key("7d3c") == "session:7d3c"
    assert names.archive_lease_key("widget") == "archives:widget"


def test_settings_default_whitelist_is_the_memory_layouts() -> None:
    assert tuple(Settings().withdrawal_kinds) == DEFAULT_WITHDRAWAL_WHITELIST
    assert DEFAULT_WITHDRAWAL_WHITELIST == ("dsh-rewind", "plugin:dsh-rewind", "plugin:rollback")
