"""The turn-end gate in the running worker (follow mode, sessions not idle): a consolidation needs
``check_every_turns`` turns and ``min_new_tokens`` estimated tokens; low tokens do not consume an
elapsed turn interval; a user abort is a boundary with a quarter of the token floor; blocked,
error and max-tokens turns never trigger; progress advances only after the summary is written;
an idle-closed session is consolidated with the thresholds waived."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, model_server_fixture  # noqa: F401
from test_consolidate_pipeline import entries, process, progress, runtime_for
from worker_dshgen import SessionLogWriter

pytestmark = pytest.mark.integration

CWD = "/home/dev/proj"
BIG = "x" * 2400  # 600 estimated tokens (the floor below is 500)


def turn(log: SessionLogWriter, prompt: str, answer: str, reason: dict[str, Any]) -> int:
    """One turn ending with ``reason``; returns the seq just after its ``turn/end``."""
    log.open_turn(prompt)
    log.assistant_message(answer, turn=log.turn_no, step=1)
    log.event("step/end", {"turn": log.turn_no, "step": 1})
    end = log.event("turn/end", {"turn": log.turn_no, "reason": reason})
    log.flush()
    return end + 1


COMPLETED = {"kind": "completed"}


def summaries(root: Path) -> list[str]:
    return sorted(n for n in entries(root) if n.startswith("sum-"))


def test_turn_interval_and_token_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=2,
        min_new_tokens=500,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-gate", CWD)

    turn(log, BIG, "one", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == []  # too soon: turn 1 − 0 < 2
    state = progress(runtime, "s-gate")
    assert (state.last_consolidated_seq, state.last_check_turn) == (0, 0)
    assert state.pending_tokens >= 600

    end_2 = turn(log, "two", "two", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == [f"sum-s-gate-0-{end_2}"]
    state = progress(runtime, "s-gate")
    assert (state.last_consolidated_seq, state.last_check_turn, state.pending_tokens) == (
        end_2,
        2,
        0,
    )

    turn(log, "three", "small", COMPLETED)
    turn(log, "four", "small", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == [f"sum-s-gate-0-{end_2}"]  # too few tokens
    assert progress(runtime, "s-gate").last_check_turn == 2  # the interval is not consumed

    end_5 = turn(log, BIG, "five", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == [f"sum-s-gate-0-{end_2}", f"sum-s-gate-{end_2}-{end_5}"]
    assert progress(runtime, "s-gate").last_check_turn == 5
    assert len(model_server.requests) == 2
    runtime.close()


def test_user_abort_is_a_boundary_and_failed_turns_never_trigger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=5,
        min_new_tokens=500,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-abort", CWD)

    for kind in (
        {"kind": "error", "error": {"message": "boom"}},
        {"kind": "blocked"},
        {"kind": "max-tokens"},
        {"kind": "aborted", "reason": {"kind": "hook"}},
    ):
        turn(log, BIG, "failed turn", kind)
        process(runtime)
    assert summaries(tmp_path) == []

    # A user abort needs no turn interval and only ceil(500 / 4) = 125 tokens.
    end = turn(log, "y" * 600, "stopped", {"kind": "aborted", "reason": {"kind": "user"}})
    process(runtime)
    assert summaries(tmp_path) == [f"sum-s-abort-0-{end}"]
    assert progress(runtime, "s-abort").last_check_turn == 5
    runtime.close()


def test_disabled_consolidation_never_triggers_at_turn_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        check_every_turns=1,
        min_new_tokens=500,
        consolidation_enabled=False,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-off", CWD)
    turn(log, BIG, "answer", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == []
    assert model_server.requests == []
    assert set(entries(tmp_path)) == {"msg-s-off-0", "msg-s-off-1"}
    runtime.close()


def test_idle_close_consolidates_with_thresholds_waived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.echo = True
    runtime = runtime_for(
        tmp_path,
        monkeypatch,
        model_server,
        force_idle=False,
        idle_close_s=1,
        check_every_turns=50,
        min_new_tokens=100_000,
    )
    log = SessionLogWriter(tmp_path / "dsh", "s-idle", CWD)
    end = turn(log, "small", "talk", COMPLETED)
    process(runtime)
    assert summaries(tmp_path) == []  # far below both thresholds
    time.sleep(1.2)  # no growth for the idle time: the session is closed
    process(runtime)
    assert summaries(tmp_path) == [f"sum-s-idle-0-{end}"]
    state = progress(runtime, "s-idle")
    assert (state.last_consolidated_seq, state.pending_tokens) == (end, 0)
    runtime.close()
