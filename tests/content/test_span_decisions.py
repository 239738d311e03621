"""``session_decisions``: the per-session ``messages`` / ``withdrawals`` report for inspect."""

from __future__ import annotations

from pathlib import Path

from eventkit import assistant, marker, other, user

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.span import session_decisions


def test_v4_example_report(fixtures_dir: Path) -> None:
    log = read_log(fixtures_dir / "v4-example" / "session.v4.jsonl")
    assert log.header is not None
    sid = log.header.id
    report = session_decisions(log.events, session_id=sid, inherited_cut=log.inherited)
    assert report["withdrawals"] == [
        {"seq": 58, "kind": "dsh-rewind", "withdrawn_seqs": [47, 48, 49]}
    ]
    expected = [
        (5, "user"),
        (15, "assistant"),
        (23, "user"),
        (36, "assistant"),
        (47, "user"),
        (49, "assistant"),
        (63, "user"),
        (65, "assistant"),
    ]
    assert report["messages"] == [
        {
            "ordinal": n,
            "seq": seq,
            "role": role,
            "name": f"msg-{sid}-{n}",
            "withdrawn": seq in (47, 49),
        }
        for n, (seq, role) in enumerate(expected)
    ]


def test_fork_child_report_starts_after_the_cut() -> None:
    events = [
        user(0, "parent"),
        marker(1, [0]),
        other(2, "session/end-seed"),
        user(3, "child"),
        assistant(4, "reply"),
        marker(5, [0, 4], kind="plugin:rollback", start=0, end=4),
    ]
    report = session_decisions(events, session_id="c", inherited_cut=2)
    assert report == {
        "messages": [
            {"ordinal": 0, "seq": 3, "role": "user", "name": "msg-c-0", "withdrawn": False},
            {"ordinal": 1, "seq": 4, "role": "assistant", "name": "msg-c-1", "withdrawn": True},
        ],
        "withdrawals": [{"seq": 5, "kind": "plugin:rollback", "withdrawn_seqs": [0, 4]}],
    }


def test_non_whitelisted_markers_are_not_reported() -> None:
    events = [user(0, "a"), marker(1, [0], kind="compact-checkpoint")]
    report = session_decisions(events, session_id="s")
    assert report["withdrawals"] == []
    assert report["messages"][0]["withdrawn"] is False
