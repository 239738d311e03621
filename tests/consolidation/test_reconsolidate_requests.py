"""On-demand reconsolidation: the owed span is queued with thresholds waived and reported as
``queued`` / ``empty`` / ``busy`` (or ``disabled`` / ``unavailable`` / ``unknown-session``); a
repeated request writes no second summary; ``--from-seq`` re-summarises a range; the CLI runs it
with ``--wait`` and exits non-zero only for errors; the startup backfill queues the biggest
backlogs per project, and a failing session backs off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_server import ModelServer, model_server_fixture  # noqa: F401
from test_consolidate_pipeline import KEY_ENV, entries, process, progress, routes, runtime_for
from typer.testing import CliRunner
from worker_dshgen import SessionLogWriter, embedded_runtime

from dsh_memory_worker.worker.cli import _register, app
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.reconsolidate import (
    backfill_consolidation,
    queued_sessions,
    request_reconsolidation,
)

pytestmark = pytest.mark.integration

CWD = "/home/dev/proj"


def summaries(root: Path) -> list[str]:
    return sorted(n for n in entries(root) if n.startswith("sum-"))


def test_queued_busy_empty_and_no_second_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=50,
        min_new_tokens=100_000,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-now", CWD)
    log.turn("short question", "short answer")
    log.turn("another", "reply")
    log.flush()
    process(runtime)
    assert summaries(tmp_path) == []  # the gate refuses: too soon, too few tokens
    end = log.seq

    first = request_reconsolidation(runtime, "s-now", "default")
    assert (first.queued, first.reason, first.from_seq, first.to_seq) == (True, "", 0, end)
    again = request_reconsolidation(runtime, "s-now", "default")
    assert (again.queued, again.reason) == (False, "busy")

    assert run_job(runtime, "consolidate", "s-now", "default").status == "done"
    assert summaries(tmp_path) == [f"sum-s-now-0-{end}"]
    assert progress(runtime, "s-now").last_consolidated_seq == end

    empty = request_reconsolidation(runtime, "s-now", "default")
    assert (empty.queued, empty.reason, empty.from_seq, empty.to_seq) == (False, "empty", end, end)
    assert run_job(runtime, "consolidate", "s-now", "default").status == "skipped"

    # Re-summarising the same range again finds the summary: no model call, no second entry.
    ranged = request_reconsolidation(runtime, "s-now", "default", from_seq=0)
    assert ranged.queued
    assert run_job(runtime, "consolidate", "s-now", "default").status == "done"
    assert summaries(tmp_path) == [f"sum-s-now-0-{end}"]
    assert len(model_server.requests) == 1
    with runtime.state.transaction() as repos:
        audit = repos.audit.entries(session_id="s-now", action="reconsolidate")
    assert [(a.outcome, a.subject) for a in audit] == [
        ("queued", f"0-{end}"),
        ("done", f"0-{end}"),
        ("queued", f"0-{end}"),
        ("done", f"0-{end}"),
    ]
    runtime.close()


def test_from_seq_resummarises_a_later_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(tmp_path, monkeypatch, model_server)
    log = SessionLogWriter(tmp_path / "dsh", "s-range", CWD)
    log.turn("one", "uno")
    second = log.turn("two", "dos")
    log.flush()
    process(runtime)
    end = log.seq
    assert summaries(tmp_path) == [f"sum-s-range-0-{end}"]
    start = second.user_seq - 3  # the first turn's turn/end
    result = request_reconsolidation(runtime, "s-range", "default", from_seq=start)
    assert (result.queued, result.from_seq, result.to_seq) == (True, start, end)
    assert run_job(runtime, "consolidate", "s-range", "default").status == "done"
    assert summaries(tmp_path) == [f"sum-s-range-0-{end}", f"sum-s-range-{start}-{end}"]
    assert entries(tmp_path)[f"sum-s-range-{start}-{end}"]["data"] == "U: two\nA: dos"
    assert progress(runtime, "s-range").last_consolidated_seq == end  # never moves back
    runtime.close()


def test_error_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    plain = embedded_runtime(tmp_path / "a")
    assert request_reconsolidation(plain, "s-x", "default").reason == "unavailable"
    plain.close()
    off = runtime_for(tmp_path / "b", monkeypatch, model_server, consolidation_enabled=False)
    assert request_reconsolidation(off, "s-x", "default").reason == "disabled"
    off.close()
    on = runtime_for(tmp_path / "c", monkeypatch, model_server)
    assert request_reconsolidation(on, "s-missing", "default").reason == "unknown-session"
    on.close()


def test_cli_waits_with_a_progress_bar_and_reports_each_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    monkeypatch.setenv(KEY_ENV, "sk-test-route-key-0000000000")
    for name, value in {
        "DSH_HOME": tmp_path / "dsh",
        "DATA_DIR": tmp_path / "data",
        "LITE_HOME": tmp_path / "lite",
        "CHECK_EVERY_TURNS": 50,
        "MIN_NEW_TOKENS": 100_000,
        "MODEL_ROUTES": json.dumps(routes(model_server)),
    }.items():
        monkeypatch.setenv(f"MEMORY_WORKER_{name}", str(value))
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=50,
        min_new_tokens=100_000,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-cli", CWD)
    log.turn("question", "answer")
    log.flush()
    process(runtime)
    runtime.close()
    assert summaries(tmp_path) == []
    _register()
    cli = CliRunner()

    done = cli.invoke(app, ["reconsolidate", "s-cli", "--wait"])
    assert done.exit_code == 0, done.output
    assert f"s-cli: queued [0, {log.seq})" in done.output
    assert "consolidating" in done.output
    assert f"s-cli: done — consolidated [0, {log.seq}) into sum-s-cli-0-{log.seq}" in done.output
    assert summaries(tmp_path) == [f"sum-s-cli-0-{log.seq}"]

    again = cli.invoke(app, ["reconsolidate", "--all", "--wait"])
    assert again.exit_code == 0, again.output
    assert f"s-cli: empty — nothing owed [{log.seq}, {log.seq})" in again.output

    # A request already queued (here by another process) is `busy`; --wait runs it anyway.
    other = embedded_runtime(tmp_path, model_routes=routes(model_server))
    assert request_reconsolidation(other, "s-cli", "default", from_seq=0).queued
    other.close()
    busy = cli.invoke(app, ["reconsolidate", "s-cli", "--from-seq", "0", "--wait"])
    assert busy.exit_code == 0, busy.output
    assert f"s-cli: busy — a queued request already covers [0, {log.seq})" in busy.output
    # Nothing was written the second time, and the line says so (never "consolidated … into").
    assert (
        f"s-cli: done — already summarised: sum-s-cli-0-{log.seq} exists, nothing written"
        in busy.output
    )
    assert "consolidated [0" not in busy.output

    unknown = cli.invoke(app, ["reconsolidate", "s-nope"])
    assert unknown.exit_code == 1
    assert "s-nope: unknown-session" in unknown.output
    usage = cli.invoke(app, ["reconsolidate"])
    assert usage.exit_code == 2
    assert "name at least one SESSION, or pass --all" in usage.output
    assert len(model_server.requests) == 1


def test_startup_backfill_queues_the_biggest_backlogs_per_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    plain = embedded_runtime(tmp_path, force_idle=True)
    for sid, cwd, turns in (
        ("b-small", "/w/alpha", 1),
        ("b-mid", "/w/alpha", 2),
        ("b-big", "/w/alpha", 3),
        ("b-other", "/w/beta", 1),
    ):
        log = SessionLogWriter(tmp_path / "dsh", sid, cwd)
        for i in range(turns):
            log.turn(f"q{i}", f"a{i}")
        log.flush()
    process(plain)  # logged without a model: nothing consolidated
    plain.close()
    runtime = runtime_for(tmp_path, monkeypatch, model_server, consolidation_backfill_per_scope=2)
    queued = backfill_consolidation(runtime, "default")
    assert sorted(r.session_id for r in queued) == ["b-big", "b-mid", "b-other"]
    assert queued_sessions(runtime, "default") == ["b-big", "b-mid", "b-other"]
    with runtime.state.transaction() as repos:
        repos.failures.record("consolidate", "b-mid", "HTTP 502")
    assert queued_sessions(runtime, "default") == ["b-big", "b-other"]  # backing off
    runtime.close()
