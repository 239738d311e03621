"""A job's success forgets its failure row in the transaction that releases the lease; a failure
keeps (counts) its row and still releases the lease."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO

from dsh_memory_worker.worker.jobs.context import JobContext, JobOutput
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.registry import register_job
from dsh_memory_worker.worker.names import session_lease_key

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import embedded_runtime

_OUTCOME: dict[str, str] = {}


def _perf_probe(ctx: JobContext) -> JobOutput:
    if _OUTCOME.get(ctx.session_id) == "fail":
        raise OSError("disk unplugged")
    return JobOutput(status="done", detail="ok")


register_job("perf_probe", _perf_probe)


def test_success_clears_the_failure_and_releases_the_lease(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    _OUTCOME["s1"] = "fail"
    failed = run_job(runtime, "perf_probe", "s1", "default")
    assert (failed.status, failed.detail) == ("retry", "disk unplugged")
    with runtime.state.transaction() as repos:
        row = repos.failures.get("perf_probe", "s1")
        assert row is not None and row.attempts == 1
        assert row.last_error == "OSError: disk unplugged"
        assert repos.leases.holder(session_lease_key("s1")) is None  # released after a failure
    _OUTCOME["s1"] = "ok"
    done = run_job(runtime, "perf_probe", "s1", "default", attempt=1)
    assert done.status == "done"
    with runtime.state.transaction() as repos:
        assert repos.failures.get("perf_probe", "s1") is None
        assert repos.leases.holder(session_lease_key("s1")) is None
        assert repos.leases.last_token(session_lease_key("s1")) == 2
    # The released lease can be taken again right away.
    assert run_job(runtime, "perf_probe", "s1", "default").status == "done"
    runtime.close()


def test_a_success_without_a_failure_row_releases_the_lease(tmp_path: Path) -> None:
    runtime = embedded_runtime(tmp_path)
    assert run_job(runtime, "perf_probe", "s2", "default").status == "done"
    with runtime.state.transaction() as repos:
        assert repos.failures.list() == []
        assert repos.leases.holder(session_lease_key("s2")) is None
    runtime.close()
