"""Bulk work runs with the long-lived objects frozen, and gives them back to the collector."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest

from dsh_memory_worker.worker.jobs.runtime import long_lived_frozen
from dsh_memory_worker.worker.run.runner import InProcessRunner


def test_objects_alive_on_entry_are_frozen_and_unfrozen_on_exit() -> None:
    assert gc.get_freeze_count() == 0
    with long_lived_frozen():
        inside = gc.get_freeze_count()
        assert inside > 1000  # modules, classes, the test's own objects
    assert gc.get_freeze_count() == 0


def test_nested_use_keeps_the_freeze_until_the_outer_exit() -> None:
    with long_lived_frozen():
        with long_lived_frozen():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_an_error_inside_still_unfreezes() -> None:
    with pytest.raises(RuntimeError, match="boom"), long_lived_frozen():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_from_before_is_collected_after_exit() -> None:
    class Node:
        other: object

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b
    with long_lived_frozen():
        gc.collect()
        assert alive() is not None  # frozen: out of the collector's reach
    gc.collect()
    assert alive() is None  # given back on exit: nothing leaks


def test_runner_jobs_run_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def fake_run_job(runtime: object, job: str, sid: str, shelf: str, *, attempt: int) -> object:
        from dsh_memory_worker.worker.jobs.context import JobResult

        seen.append(gc.get_freeze_count())
        return JobResult(job=job, session_id=sid, shelf=shelf, status="done")

    monkeypatch.setattr(
        "dsh_memory_worker.worker.jobs.guard.run_job", fake_run_job
    )  # imported per run
    runtime = SimpleNamespace(settings=SimpleNamespace(task_max_retries=0, retry_backoff_s=0.1))
    runner = InProcessRunner(runtime)  # type: ignore[arg-type]
    runner.submit("log_span", "s1", "default")
    runner.submit("log_span", "s2", "default")
    runner.drain()
    assert len(seen) == 2 and all(n > 0 for n in seen)
    assert gc.get_freeze_count() == 0
    assert runner.stats.done == 2
