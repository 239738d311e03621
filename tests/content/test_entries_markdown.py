"""Message entry markdown, the tool ledger rendering and the session node text."""

from __future__ import annotations

from datetime import UTC

from eventkit import T0, other

from dsh_memory_worker.memory.entries import render_message, session_node_text
from dsh_memory_worker.memory.ledger import LedgerItem, format_duration, render_ledger


def test_user_entry_layout_has_no_turn() -> None:
    assert render_message(role="user", time_ms=T0, body="hi") == (
        "## Role\nuser\n\n## Timestamp\n2025-09-09T08:00:00.000Z\n\n## Content\nhi"
    )


def test_assistant_entry_layout() -> None:
    ledger = [LedgerItem("read", True, 600), LedgerItem("read", True, 700)]
    assert render_message(role="assistant", time_ms=T0, body="done", turn=3, ledger=ledger) == (
        "## Role\nassistant\n\n## Timestamp\n2025-09-09T08:00:00.000Z\n\n## Turn\n3\n\n"
        "## Content\ndone\n\n## Tool Calls\n1. `read` ×2 — ✅ 1.3s total"
    )


def test_interrupted_and_tool_calls_only() -> None:
    out = render_message(
        role="assistant",
        time_ms=T0,
        body=" ",
        turn=None,
        interrupted=True,
        ledger=[LedgerItem("bash", True, 5)],
    )
    assert out.endswith(
        "## Turn\n0\n\n## Content\n(tool calls only)\n\n[turn interrupted mid-stream]\n\n"
        "## Tool Calls\n1. `bash` — ✅ 5ms"
    )
    assert render_message(role="user", time_ms=None, body="x").startswith(
        "## Role\nuser\n\n## Timestamp\nunknown\n"
    )


def test_ledger_rows() -> None:
    rows = render_ledger(
        [
            LedgerItem("grep", True, 0),
            LedgerItem("grep", True, 0),
            LedgerItem("bash", False, 0, "Error (ENOENT) — missing"),
            LedgerItem("grep", True, None),
            LedgerItem("grep", True, 5),
        ]
    )
    assert rows == [
        "1. `grep` ×2 — ✅ 0ms total",
        "2. `bash` — ❌ 0ms — Error (ENOENT) — missing",
        "3. `grep` ×2 — ✅",
    ]


def test_format_duration() -> None:
    assert format_duration(340) == "340ms"
    assert format_duration(2400) == "2.4s"
    assert format_duration(192000) == "3m12s"
    assert format_duration(60000) == "1m0s"


def test_session_node_text() -> None:
    title = other(9, "session/title", {"title": "  Fix port today token=abcd1234 "})
    assert session_node_text(title, UTC) == "Fix port 2025-09-09 token=[REDACTED:secret:credential]"
    summary = other(
        3,
        "compaction/summary",
        {"summary": [{"type": "text", "text": "Earlier: a"}, {"type": "image"}]},
    )
    assert session_node_text(summary, UTC) == "Earlier: a\n[image]"
    assert session_node_text(other(4, "session/title", {"title": "   "}), UTC) == ""
    assert session_node_text(other(5, "turn/end", {"turn": 1}), UTC) == ""
    assert session_node_text(None) == ""


def test_out_of_range_time_is_reported_not_raised() -> None:
    assert render_message(role="user", time_ms=9 * 10**15, body="x") == (
        "## Role\nuser\n\n## Timestamp\ninvalid (9000000000000000 ms)\n\n## Content\nx"
    )
