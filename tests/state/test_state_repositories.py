"""Sessions, failures, audit and model-call repositories keep exactly what they are given."""

from __future__ import annotations

import datetime as dt

import pytest

from dsh_memory_worker.worker.state import Checkpoint, StateDB

T0 = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC)


def test_upsert_scan_creates_then_updates_a_session(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        first = repos.sessions.upsert_scan(
            "s1",
            path="/h/sessions/p/s1/session.jsonl",
            scan_offset=512,
            scan_seq=9,
            durable_end_seq=9,
            generation=0,
            project="/work/app",
            header={"cwd": "/work/app", "version": 4},
            inherited_cut=3,
            new_checkpoints=[Checkpoint(0, 0, 0), Checkpoint(8, 400, 2)],
            last_turn_end_seq=7,
            title=(2, "Fix the parser"),
            last_activity_at=T0,
        )
    assert first.session_id == "s1"
    assert first.project == "/work/app"
    assert first.header == {"cwd": "/work/app", "version": 4}
    assert first.inherited_cut == 3
    assert first.checkpoints == (Checkpoint(0, 0, 0), Checkpoint(8, 400, 2))
    assert (first.scan_offset, first.scan_seq, first.durable_end_seq) == (512, 9, 9)
    assert (first.last_turn_end_seq, first.last_title_seq, first.title_text) == (
        7,
        2,
        "Fix the parser",
    )
    assert first.last_activity_at == T0
    with state_db.transaction() as repos:
        second = repos.sessions.upsert_scan(
            "s1",
            path="/h/sessions/p/s1/session.jsonl",
            scan_offset=900,
            scan_seq=15,
            durable_end_seq=15,
            new_checkpoints=[Checkpoint(14, 850, 5), Checkpoint(8, 400, 2)],
            title=(1, "an older title"),
        )
    # Unset fields keep their value; checkpoints merge by seq; an older title is ignored.
    assert second.project == "/work/app"
    assert second.inherited_cut == 3
    assert second.checkpoints == (
        Checkpoint(0, 0, 0),
        Checkpoint(8, 400, 2),
        Checkpoint(14, 850, 5),
    )
    assert second.title_text == "Fix the parser"
    assert second.checkpoint_at_or_before(13) == Checkpoint(8, 400, 2)
    assert second.checkpoint_at_or_before(14) == Checkpoint(14, 850, 5)


def test_a_new_generation_drops_the_old_checkpoints(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        repos.sessions.upsert_scan(
            "s2",
            path="/a",
            scan_offset=100,
            scan_seq=4,
            durable_end_seq=4,
            generation=0,
            new_checkpoints=[Checkpoint(0, 0, 0), Checkpoint(3, 90, 1)],
        )
        replaced = repos.sessions.upsert_scan(
            "s2",
            path="/a",
            scan_offset=0,
            scan_seq=0,
            durable_end_seq=4,
            generation=1,
            new_checkpoints=[Checkpoint(0, 0, 0)],
        )
    assert replaced.generation == 1
    assert replaced.checkpoints == (Checkpoint(0, 0, 0),)


def test_growth_reopens_a_closed_session(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        repos.sessions.upsert_scan("s3", path="/a", scan_offset=10, scan_seq=2, durable_end_seq=2)
        assert repos.sessions.mark_closed("s3", T0)
        assert repos.sessions.get("s3").closed_at == T0  # type: ignore[union-attr]
        same = repos.sessions.upsert_scan(
            "s3", path="/a", scan_offset=10, scan_seq=2, durable_end_seq=2
        )
        assert same.closed_at == T0
        grown = repos.sessions.upsert_scan(
            "s3", path="/a", scan_offset=20, scan_seq=3, durable_end_seq=3
        )
        assert grown.closed_at is None
        assert repos.sessions.mark_closed("missing") is False


def test_forgotten_sessions_are_left_out_of_the_listing(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        for sid in ("a", "b"):
            repos.sessions.upsert_scan(
                sid, path=f"/{sid}", scan_offset=0, scan_seq=0, durable_end_seq=0
            )
        assert repos.sessions.set_forgotten("b")
        # Forgetting a session never seen creates its row so it is never ingested later.
        assert repos.sessions.set_forgotten("c")
        listed = [s.session_id for s in repos.sessions.list()]
        every = [s.session_id for s in repos.sessions.list(include_forgotten=True)]
        flags = (
            repos.sessions.is_forgotten("a"),
            repos.sessions.is_forgotten("b"),
            repos.sessions.is_forgotten("c"),
            repos.sessions.is_forgotten("zzz"),
        )
    assert listed == ["a"]
    assert every == ["a", "b", "c"]
    assert flags == (False, True, True, False)


def test_failures_count_attempts_per_task_and_session(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        one = repos.failures.record("log_span", "s1", ConnectionError("store\n  down"))
        two = repos.failures.record("log_span", "s1", "still down")
        other = repos.failures.record("consolidate", "s1", ValueError("bad json"), permanent=True)
        cascade = repos.failures.record("cascade", "/work/app", TimeoutError())
    assert (one.attempts, one.last_error, one.permanent) == (
        1,
        "ConnectionError: store down",
        False,
    )
    assert (two.attempts, two.last_error) == (2, "still down")
    assert two.first_at == one.first_at and two.last_at >= one.last_at
    assert (other.attempts, other.permanent) == (1, True)
    assert cascade.last_error == "TimeoutError"
    with state_db.transaction() as repos:
        assert [f.task for f in repos.failures.list(permanent=True)] == ["consolidate"]
        assert sorted(f.task for f in repos.failures.list()) == [
            "cascade",
            "consolidate",
            "log_span",
        ]
        assert repos.failures.clear("log_span", "s1") is True
        assert repos.failures.clear("log_span", "s1") is False
        assert repos.failures.get("log_span", "s1") is None
        assert len(repos.failures.list(task="cascade")) == 1


def test_a_long_error_is_cut_to_one_line_of_2000_characters(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        failure = repos.failures.record("log_span", "s9", "x" * 5000 + "\nsecond line")
    assert len(failure.last_error) == 2000
    assert "\n" not in failure.last_error
    assert failure.last_error.endswith("…")


def test_retractions_and_repairs_are_audited(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        first = repos.audit.record_retraction(
            shelf="default",
            session_id="s1",
            ordinal=4,
            entry="msg-s1-4",
            marker_seq=31,
            source_kind="dsh-rewind",
            outcome="retracted",
        )
        second = repos.audit.record_retraction(
            shelf="default",
            session_id="s1",
            ordinal=5,
            entry="msg-s1-5",
            marker_seq=31,
            source_kind="dsh-rewind",
            outcome="absent",
            detail="not found: knowledge",
        )
        repos.audit.record_retraction(
            shelf="default",
            session_id="s2",
            ordinal=0,
            entry="msg-s2-0",
            marker_seq=3,
            source_kind="plugin:rollback",
            outcome="failed",
        )
        repair = repos.audit.record(
            "reconsolidate",
            "ok",
            shelf="default",
            session_id="s1",
            subject="sum-s1-0-40",
            cause_marker_seq=31,
            source_kind="dsh-rewind",
        )
        with pytest.raises(ValueError, match="unknown retraction outcome"):
            repos.audit.record_retraction(
                shelf="default",
                session_id="s1",
                ordinal=1,
                entry="msg-s1-1",
                marker_seq=1,
                source_kind="dsh-rewind",
                outcome="deleted",
            )  # type: ignore[arg-type]
    assert second > first
    with state_db.transaction() as repos:
        s1 = repos.audit.retractions(session_id="s1")
        entries = repos.audit.entries(session_id="s1")
    assert [(r.entry, r.outcome, r.marker_seq) for r in s1] == [
        ("msg-s1-4", "retracted", 31),
        ("msg-s1-5", "absent", 31),
    ]
    assert s1[1].detail == "not found: knowledge"
    assert [(e.id, e.action, e.subject, e.cause_marker_seq) for e in entries] == [
        (repair, "reconsolidate", "sum-s1-0-40", 31)
    ]


def test_model_calls_are_started_settled_and_pruned(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        ids = [
            repos.model_calls.start(
                purpose="consolidate",
                route_index=i % 2,
                base_url="http://127.0.0.1:9/v1",
                model="m",
                effort="high",
                session_id="s1",
            )
            for i in range(5)
        ]
        assert repos.model_calls.settle(
            ids[0], "ok", ms=812, input_tokens=1000, output_tokens=200, reasoning_tokens=50
        )
        assert repos.model_calls.settle(ids[1], "error", detail="HTTP 503 " + "y" * 400)
        assert repos.model_calls.settle(999_999, "ok") is False
        with pytest.raises(ValueError, match="unknown model call outcome"):
            repos.model_calls.settle(ids[2], "great")  # type: ignore[arg-type]
    with state_db.transaction() as repos:
        recent = repos.model_calls.recent()
        assert [c.id for c in recent] == list(reversed(ids))
        ok = recent[-1]
        assert (
            ok.outcome,
            ok.ms,
            ok.input_tokens,
            ok.output_tokens,
            ok.reasoning_tokens,
            ok.effort,
        ) == ("ok", 812, 1000, 200, 50, "high")
        assert len(recent[-2].detail or "") == 200
        assert recent[0].outcome == "pending"
        assert repos.model_calls.prune(keep=2) == 3
        assert [c.id for c in repos.model_calls.recent()] == [ids[4], ids[3]]
        assert repos.model_calls.prune(keep=2) == 0
