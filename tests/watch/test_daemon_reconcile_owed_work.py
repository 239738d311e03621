"""The reconcile loop re-derives ALL owed work from the log facts and the watermarks: consolidation
of idle-closed sessions, queued reconsolidation requests, interrupted repairs and lost idle-closes
are hinted again; failing sessions back off (failures table) instead of being hot-looped; a
``consolidate`` hint already sent is not repeated while its watermarks are unchanged; a backlog of
closed sessions is hinted a few per project and round, biggest owed tails first."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from sqlalchemy import update

from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.reconsolidate import request_reconsolidation
from dsh_memory_worker.worker.state.models import ProgressRow
from dsh_memory_worker.worker.watch.owed import Owed, owed_by_clock, owed_work
from dsh_memory_worker.worker.watch.watcher import Watcher

sys.path.insert(0, str(REPO / "benchmarks"))
from worker_dshgen import SessionLogWriter, embedded_runtime

KEY_ENV = "RECONCILE_TEST_KEY"
ROUTE = [{"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": KEY_ENV}]
SHELF = "default"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_ENV, "sk-reconcile-test-000000000000")
    rt = embedded_runtime(
        tmp_path,
        force_idle=True,
        model_routes=ROUTE,
        consolidation_backfill_per_scope=2,
        lease_ttl_s=60,
        reconcile_interval_s=5,
    )
    yield rt
    rt.close()


def write_session(root: Path, sid: str, turns: int = 1, cwd: str = "/home/dev/proj") -> int:
    writer = SessionLogWriter(root / "dsh", sid, cwd)
    for n in range(turns):
        writer.turn(f"question {n} of {sid}", f"answer {n}")
    writer.flush()
    return writer.seq


def log_and_close(runtime: Any, *sids: str) -> None:
    """Scan, then log each session in process (no consolidation hook: the hint is lost)."""
    Watcher(runtime, lambda *_: None).poll_once()
    for sid in sids:
        for _ in range(3):
            run_job(runtime, "log_span", sid, SHELF)
            with runtime.state.transaction() as repos:
                if repos.sessions.get(sid).closed_at is not None:
                    break
        with runtime.state.transaction() as repos:
            assert repos.sessions.get(sid).closed_at is not None


def owed(runtime: Any) -> list[tuple[str, str, str]]:
    return [(o.job, o.session_id, o.why) for o in owed_work(runtime, SHELF)]


def test_idle_closed_session_owes_its_consolidation(runtime: Any, tmp_path: Path) -> None:
    end = write_session(tmp_path, "s-one", turns=2)
    log_and_close(runtime, "s-one")
    items = owed_work(runtime, SHELF)
    assert items == [Owed("consolidate", "s-one", "consolidation", (0, end))]

    sent: list[tuple[str, str, str]] = []
    watcher = Watcher(runtime, lambda *hint: sent.append(hint))
    assert watcher.reconcile() == 1
    assert sent == [("consolidate", "s-one", SHELF)]
    # Not repeated while the watermarks are unchanged and the job may still be running...
    assert watcher.reconcile() == 0
    # ...but re-sent once a lease TTL has passed without progress (the hint was lost).
    watcher._owed_hinted[("consolidate", "s-one")] = ((0, end), 0.0)
    assert watcher.reconcile() == 1
    assert sent[-1] == ("consolidate", "s-one", SHELF)


def test_nothing_owed_without_a_route_or_with_consolidation_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(tmp_path, "s-off")
    for overrides in (
        {"model_routes": []},
        {"model_routes": ROUTE, "consolidation_enabled": False},
    ):
        monkeypatch.setenv(KEY_ENV, "sk-reconcile-test-000000000000")
        rt = embedded_runtime(tmp_path, force_idle=True, **overrides)
        try:
            log_and_close(rt, "s-off")
            assert owed(rt) == []
        finally:
            rt.close()


def test_transient_failures_back_off_a_minute_per_attempt(
    runtime: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(tmp_path, "s-fail")
    log_and_close(runtime, "s-fail")
    with runtime.state.transaction() as repos:
        for _ in range(3):
            failure = repos.failures.record("consolidate", "s-fail", "RetryableModelError: 503")
    assert failure.attempts == 3
    assert owed(runtime) == []
    later = failure.last_at + dt.timedelta(seconds=179)
    monkeypatch.setattr(runtime, "now", lambda: later)
    assert owed(runtime) == []
    later = failure.last_at + dt.timedelta(seconds=181)
    monkeypatch.setattr(runtime, "now", lambda: later)
    assert owed(runtime) == [("consolidate", "s-fail", "consolidation")]


def test_permanent_failure_waits_for_the_log_to_grow(
    runtime: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(tmp_path, "s-perm")
    log_and_close(runtime, "s-perm")
    with runtime.state.transaction() as repos:
        failure = repos.failures.record(
            "consolidate", "s-perm", "PermanentModelError: 401", permanent=True
        )
    much_later = failure.last_at + dt.timedelta(days=2)
    monkeypatch.setattr(runtime, "now", lambda: much_later)
    assert owed(runtime) == []
    with runtime.state.transaction() as repos:  # the log grew after the failure
        state = repos.sessions.get("s-perm")
        repos.sessions.upsert_scan(
            "s-perm",
            path=state.path,
            scan_offset=state.scan_offset,
            scan_seq=state.scan_seq,
            durable_end_seq=state.durable_end_seq,
            last_activity_at=failure.last_at + dt.timedelta(seconds=1),
        )
    assert owed(runtime) == [("consolidate", "s-perm", "consolidation")]


def test_queued_request_of_an_open_session_is_owed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-reconcile-test-000000000000")
    rt = embedded_runtime(tmp_path, model_routes=ROUTE, idle_close_s=3600)
    try:
        end = write_session(tmp_path, "s-open", turns=2)
        Watcher(rt, lambda *_: None).poll_once()
        run_job(rt, "log_span", "s-open", SHELF)
        with rt.state.transaction() as repos:
            assert repos.sessions.get("s-open").closed_at is None
            assert repos.progress.get(SHELF, "s-open").last_logged_seq == end
        assert owed(rt) == []  # open, gated: the next turn end hints it
        result = request_reconsolidation(rt, "s-open", SHELF)
        assert (result.queued, result.from_seq, result.to_seq) == (True, 0, end)
        assert owed(rt) == [("consolidate", "s-open", "reconsolidate request")]
    finally:
        rt.close()


def test_lost_idle_close_is_hinted_again(tmp_path: Path) -> None:
    rt = embedded_runtime(tmp_path, idle_close_s=60)
    try:
        write_session(tmp_path, "s-idle")
        Watcher(rt, lambda *_: None).poll_once()
        run_job(rt, "log_span", "s-idle", SHELF)  # logged; not idle yet
        assert owed(rt) == []
        with rt.state.transaction() as repos:
            state = repos.sessions.get("s-idle")
            repos.sessions.upsert_scan(
                "s-idle",
                path=state.path,
                scan_offset=state.scan_offset,
                scan_seq=state.scan_seq,
                durable_end_seq=state.durable_end_seq,
                last_activity_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=61),
            )
        assert owed(rt) == [("log_span", "s-idle", "idle-close")]
        run_job(rt, "log_span", "s-idle", SHELF)
        with rt.state.transaction() as repos:
            assert repos.sessions.get("s-idle").closed_at is not None
        assert owed(rt) == []
    finally:
        rt.close()


def test_interrupted_repair_is_owed_and_backs_off(runtime: Any, tmp_path: Path) -> None:
    write_session(tmp_path, "s-rep")
    log_and_close(runtime, "s-rep")
    with runtime.state.transaction() as repos:
        repos.progress.get(SHELF, "s-rep")
        repos.audit.record(
            "repair-intent", "started", shelf=SHELF, session_id="s-rep", subject="sum-s-rep-0-4"
        )
    assert ("retract", "s-rep", "repair") in owed(runtime)
    with runtime.state.transaction() as repos:
        repos.failures.record("retract", "s-rep", "TransientStoreError: down")
    assert ("retract", "s-rep", "repair") not in owed(runtime)


def test_backlog_is_hinted_a_few_per_project_biggest_first(runtime: Any, tmp_path: Path) -> None:
    sizes = {"b-1": 1, "b-2": 3, "b-3": 2, "b-4": 1}
    for sid, turns in sizes.items():
        write_session(tmp_path, sid, turns=turns)
    write_session(tmp_path, "other", cwd="/home/dev/elsewhere")
    log_and_close(runtime, *sizes, "other")
    assert owed(runtime) == [
        ("consolidate", "b-2", "consolidation"),
        ("consolidate", "b-3", "consolidation"),
        ("consolidate", "other", "consolidation"),
    ]


def test_work_a_back_off_hides_is_owed_by_the_clock(
    runtime: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What keeps ``run --once`` from being recorded at rest (worker.at_rest): work owed once a
    back-off ends is owed by the clock alone; a permanent failure (it waits for the log to grow,
    a file change) is not."""
    write_session(tmp_path, "s-wait")
    write_session(tmp_path, "s-perm")
    log_and_close(runtime, "s-wait", "s-perm")
    with runtime.state.transaction() as repos:
        failure = repos.failures.record("consolidate", "s-wait", "RetryableModelError: 503")
        repos.failures.record("consolidate", "s-perm", "PermanentModelError: 401", permanent=True)
    assert owed(runtime) == []
    assert owed_by_clock(runtime, SHELF)
    later = failure.last_at + dt.timedelta(hours=2)  # what the full path owes then
    monkeypatch.setattr(runtime, "now", lambda: later)
    assert owed(runtime) == [("consolidate", "s-wait", "consolidation")]
    with runtime.state.transaction() as repos:
        repos.failures.clear("consolidate", "s-wait")  # consolidated when the model came back
        repos.conn.execute(
            update(ProgressRow)
            .where(ProgressRow.session_id == "s-wait")
            .values(last_consolidated_seq=ProgressRow.last_logged_seq)
        )
    assert owed(runtime) == []
    assert not owed_by_clock(runtime, SHELF)
