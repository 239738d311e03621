"""A job added with ``register_job`` runs under the same guard as the built-in ones: the session's
lease (``busy`` while another holder has it), success clears the failure row, an error is
recorded and answered ``retry`` with the watermark untouched."""

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

calls: list[tuple[str, str, int]] = []


def probe(ctx: JobContext) -> JobOutput:
    calls.append((ctx.session_id, ctx.shelf, ctx.lease.token))
    if ctx.session_id == "s-broken":
        raise OSError("disk on fire")
    return JobOutput(status="done", detail="probed", written=1)


def test_a_registered_job_gets_the_lease_and_the_failure_record(tmp_path: Path) -> None:
    register_job("probe", probe)
    runtime = embedded_runtime(tmp_path)
    ok = run_job(runtime, "probe", "s-ok", "default")
    assert (ok.status, ok.detail, ok.written) == ("done", "probed", 1)
    assert calls[-1][:2] == ("s-ok", "default") and calls[-1][2] >= 1

    with runtime.state.transaction() as repos:
        held = repos.leases.acquire(session_lease_key("s-ok"), "someone-else", 60)
    before = len(calls)
    busy = run_job(runtime, "probe", "s-ok", "default")
    assert busy.status == "busy" and len(calls) == before
    with runtime.state.transaction() as repos:
        assert held is not None and repos.leases.release(held)

    failed = run_job(runtime, "probe", "s-broken", "default")
    assert failed.status == "retry" and failed.detail == "disk on fire"
    with runtime.state.transaction() as repos:
        failure = repos.failures.get("probe", "s-broken")
        assert failure is not None and failure.attempts == 1 and not failure.permanent
        assert repos.leases.holder(session_lease_key("s-broken")) is None  # released
    runtime.close()
