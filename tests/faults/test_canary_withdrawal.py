"""The canary: the model server repeats every transcript line into the summaries, archives and
work units it writes, so any withdrawn text that ever reached the model would land in memory.
Sessions are logged and consolidated (span summaries, log16 archives over two tiers, work
units), then withdrawal markers are appended to their logs after the sessions went idle. After
the worker catches up, the whole store holds no withdrawn canary, every kept message is still
there, and the audit lists each retraction and repair. The same holds when the markers were in
the logs before the first run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from canary_support import (
    CanarySession,
    canary_reply,
    dump,
    dump_text,
    names,
    process,
    runtime_for,
    triples,
)
from model_server import ModelServer, model_server_fixture  # noqa: F401

pytestmark = pytest.mark.integration


def _audit(runtime: Any) -> tuple[list[Any], list[Any]]:
    with runtime.state.transaction() as repos:
        return repos.audit.retractions(), repos.audit.entries()


def _summaries(root: Path, sid: str) -> list[str]:
    return sorted(n for n in names(root) if n.startswith(f"sum-{sid}-"))


def test_withdrawals_after_consolidation_leave_no_canary_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    a = CanarySession.start(tmp_path, "s-a")
    b = CanarySession.start(tmp_path, "s-b")
    a.turn("1")
    b.turn("1")
    b_second = b.turn("2")
    process(runtime)  # two span summaries → one tier-2 archive
    a_third = a.turn("3")
    b.turn("3")
    process(runtime)  # two more → a second tier-2 archive → one tier-3 archive
    (a1,), (a2,) = _summaries(tmp_path, "s-a")[:1], _summaries(tmp_path, "s-a")[1:]
    b1, b2 = _summaries(tmp_path, "s-b")
    archives2 = sorted(n for n in names(tmp_path) if n.startswith("sum2-"))
    archives3 = sorted(n for n in names(tmp_path) if n.startswith("sum3-"))
    units = sorted(n for n in names(tmp_path) if n.startswith("wu-"))
    assert len(archives2) == 2 and len(archives3) == 1 and len(units) == 4
    before = dump_text(tmp_path)
    assert "CANARY-s-b-2-ASK" in before and "CANARY-s-a-3-ANSWER" in before

    # The sessions went idle (closed); now the user takes back b's turn 2 onward and a's turn 3.
    marker_b, withdrawn_b = b.rewind(b_second.user_seq)
    marker_a, withdrawn_a = a.rewind(a_third.user_seq, kind="plugin:rollback")
    process(runtime)

    text = dump_text(tmp_path)
    for canary in withdrawn_a + withdrawn_b:
        assert canary not in text, canary
    for canary in a.kept(withdrawn_a) + b.kept(withdrawn_b):
        assert canary in text, canary
    rows = {row["name"]: row["content"]["data"] for row in dump(tmp_path)["knowledge"]}
    # Messages: b keeps turn 1 (ordinals 0, 1), a keeps turns 1 and 2 (0..3).
    assert {n for n in rows if n.startswith("msg-")} == {
        "msg-s-b-0",
        "msg-s-b-1",
        "msg-s-a-0",
        "msg-s-a-1",
    }
    # b's first summary is regenerated from what is left; b's second and a's second had nothing
    # left and are gone; a's first was never touched.
    assert rows[b1] == "U: question CANARY-s-b-1-ASK\nA: reply CANARY-s-b-1-ANSWER"
    assert a1 in rows and a2 not in rows and b2 not in rows
    assert {(h, t) for h, r, t in triples(tmp_path) if r == "summary" and h == b1} == {
        (b1, "msg-s-b-0"),
        (b1, "msg-s-b-1"),
    }
    assert not [t for t in triples(tmp_path) if t[0] in (a2, b2) or t[2] in (a2, b2)]
    # The archive over a1 + b1 is regenerated, the one over a2 + b2 lost every member.
    archive_left = [n for n in archives2 if n in rows]
    assert len(archive_left) == 1 and "CANARY-s-b-1-ASK" in rows[archive_left[0]]
    assert archives3[0] in rows and "CANARY-s-b-1-ASK" in rows[archives3[0]]
    # Work units: every unit of an affected summary is gone; b1's clean span is re-extracted.
    left_units = sorted(n for n in rows if n.startswith("wu-"))
    assert len(left_units) == 2
    derived = {(h, t) for h, r, t in triples(tmp_path) if r == "derivedFrom"}
    assert {t for _, t in derived} == {a1, b1}

    retractions, audit = _audit(runtime)
    assert sorted((r.entry, r.marker_seq, r.source_kind, r.outcome) for r in retractions) == sorted(
        [(f"msg-s-b-{n}", marker_b, "dsh-rewind", "retracted") for n in (2, 3, 4, 5)]
        + [(f"msg-s-a-{n}", marker_a, "plugin:rollback", "retracted") for n in (2, 3)]
    )
    done = {
        (e.subject, e.outcome, e.cause_marker_seq, e.source_kind)
        for e in audit
        if e.action == "repair-summary"
    }
    assert done == {
        (b1, "regenerated", marker_b, "dsh-rewind"),
        (b2, "retracted", marker_b, "dsh-rewind"),
        (a2, "retracted", marker_a, "plugin:rollback"),
    }
    archive_outcomes = sorted((e.subject, e.outcome) for e in audit if e.action == "repair-archive")
    assert (archives3[0], "regenerated") in archive_outcomes
    assert {o for _, o in archive_outcomes} == {"regenerated", "retracted"}
    unit_outcomes = [e.outcome for e in audit if e.action == "repair-work-unit"]
    assert unit_outcomes.count("retracted") == 3 and unit_outcomes.count("re-extracted") == 1
    assert [e for e in audit if e.action == "repair-intent"] and all(
        e.outcome == "pending" for e in audit if e.action == "repair-intent"
    )

    # Idempotent: another catch-up changes nothing.
    settled = dump(tmp_path)
    process(runtime)
    assert dump(tmp_path) == settled
    runtime.close()


def test_markers_already_in_the_logs_before_the_first_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ModelServer
) -> None:
    model_server.responder = canary_reply
    runtime = runtime_for(tmp_path, model_server, monkeypatch)
    a = CanarySession.start(tmp_path, "s-pre")
    a.turn("1")
    second = a.turn("2")
    a.turn("3")
    _, withdrawn = a.rewind(second.user_seq)
    a.turn("4")
    process(runtime)
    text = dump_text(tmp_path)
    assert len(withdrawn) == 4
    for canary in withdrawn:
        assert canary not in text, canary
    for canary in a.kept(withdrawn):
        assert canary in text, canary
    assert [n for n in names(tmp_path) if n.startswith("wu-")]
    for request in model_server.requests:
        for canary in withdrawn:
            assert canary not in request.body.decode(), canary
    retractions, audit = _audit(runtime)
    assert retractions == [] and not [e for e in audit if e.action.startswith("repair-")]
    runtime.close()
