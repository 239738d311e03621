"""The span formatter: collector-format cases of the reference (§10.2), through ``plan_span``."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from eventkit import T0, assistant, chunk, other, tool_call, tool_result, user

from dsh_memory_worker.memory.span import SpanOptions, plan_span

LEDGER = SpanOptions(tool_ledger=True, tz=UTC)


def _plan(events, options=LEDGER, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("span_from", events[0].seq if events else 0)
    return plan_span(events, events, session_id="s1", project="demo", options=options, **kw)


def test_user_and_assistant_render_redacted_and_absolutised() -> None:
    events = [
        user(1, "my token=abcd1234 and sk-abcdef1234567890, do it today"),
        assistant(2, "Done today.", turn=1),
    ]
    plan = _plan(events)
    assert [item.name for item in plan.items] == ["msg-s1-0", "msg-s1-1"]
    assert plan.items[0].markdown == (
        "## Role\nuser\n\n## Timestamp\n2025-09-09T08:00:00.001Z\n\n## Content\n"
        "my token=[REDACTED:secret:credential] and [REDACTED:secret:key], do it 2025-09-09"
    )
    assert plan.items[1].markdown == (
        "## Role\nassistant\n\n## Timestamp\n2025-09-09T08:00:00.002Z\n\n## Turn\n1\n\n"
        "## Content\nDone 2025-09-09."
    )
    first = plan.items[0]
    assert (first.tags, first.scopes, first.embed, first.project) == (
        ("message",),
        ("demo",),
        False,
        "demo",
    )
    assert plan.next_ordinal == 2 and plan.retract == [] and plan.skip_ordinals == frozenset()


def test_plugin_user_message_produces_no_entry() -> None:
    assert _plan([user(1, "recall seed", kind="plugin:hypatia-recall")]).items == []


def test_interrupted_assistant_gets_the_suffix() -> None:
    plan = _plan([assistant(3, "partial", interrupted=True)])
    assert plan.items[0].markdown.endswith("## Content\npartial\n\n[turn interrupted mid-stream]")


def test_ledger_collapses_and_shows_failures_without_output() -> None:
    events = [
        assistant(1, "looking", step=1),
        tool_call(2, "c1", "grep"),
        tool_result(3, "c1", "MATCH", time=T0 + 2),
        tool_call(4, "c2", "grep"),
        tool_result(5, "c2", "MATCH", time=T0 + 4),
        tool_call(6, "c3", "bash"),
        tool_result(7, "c3", "missing", time=T0 + 6, error={"name": "Error", "code": "ENOENT"}),
    ]
    markdown = _plan(events).items[0].markdown
    assert markdown.endswith(
        "## Content\nlooking\n\n## Tool Calls\n"
        "1. `grep` ×2 — ✅ 0ms total\n2. `bash` — ❌ 0ms — Error (ENOENT) — missing"
    )
    assert "MATCH" not in markdown


def test_ledger_names_duration_and_stripped_stack() -> None:
    events = [
        assistant(
            10,
            [
                {"type": "text", "text": "reading"},
                {"type": "tool-call", "id": "r1", "name": "read", "arguments": "{}"},
            ],
        ),
        tool_call(11, "r1", "read", time=T0),
        tool_result(12, "r1", "x", time=T0 + 600),
        tool_call(13, "r2", "read", time=T0),
        tool_result(14, "r2", "y", time=T0 + 700),
        tool_call(15, "b1", "bash", time=T0),
        tool_result(
            16,
            "b1",
            "Error: no such file\n    at open (fs.js:1:1)",
            time=T0 + 2000,
            error={"name": "Error", "code": "ENOENT"},
        ),
    ]
    markdown = _plan(events).items[0].markdown
    assert markdown.endswith(
        "## Content\nreading\n\n## Tool Calls\n1. `read` ×2 — ✅ 1.3s total\n"
        "2. `bash` — ❌ 2.0s — Error (ENOENT) — Error: no such file"
    )
    assert "[tool-call]" not in markdown


def test_long_assistant_text_is_capped() -> None:
    plan = _plan([assistant(1, "x" * 900)], SpanOptions(max_assistant_chars=500, tz=UTC))
    assert plan.items[0].markdown.endswith("x" * 500 + "\n\n[...truncated 400 chars]")


def test_user_text_is_capped_and_redacted_before_the_cut() -> None:
    plan = _plan([user(1, "abc sk-abcdefghijklmnopqrstu")], SpanOptions(max_user_chars=8, tz=UTC))
    assert plan.items[0].markdown.endswith("## Content\nabc [RED\n\n[...truncated 17 chars]")


def test_no_ledger_when_disabled() -> None:
    events = [assistant(1, "hi"), tool_call(2, "c", "read"), tool_result(3, "c")]
    assert "## Tool Calls" not in _plan(events, SpanOptions(tz=UTC)).items[0].markdown
    assert "## Tool Calls" in _plan(events).items[0].markdown


def test_dense_ordinals_from_the_base() -> None:
    events = [
        other(0, "turn/start"),
        user(1, "a"),
        chunk(2),
        user(3, "ctx", kind="runtime-context"),
        assistant(4, "b"),
        tool_call(5, "c", "read"),
        tool_result(6, "c"),
        assistant(7, "c"),
    ]
    plan = _plan(events, span_from=0)
    assert [(i.seq, i.ordinal) for i in plan.items] == [(1, 0), (4, 1), (7, 2)]
    plan = _plan(events[4:], base_ordinal=1)
    assert [i.name for i in plan.items] == ["msg-s1-1", "msg-s1-2"]
    assert plan.next_ordinal == 3


def test_relative_dates_resolve_against_send_time() -> None:
    sh = ZoneInfo("Asia/Shanghai")
    sent = int(datetime(2025, 9, 1, 10, 0, tzinfo=sh).timestamp() * 1000)
    plan = _plan([user(1, "明天", time=sent)], SpanOptions(tz=sh))
    assert plan.items[0].markdown.endswith("## Content\n2025-09-02")


def test_each_assistant_gets_only_its_own_steps_ledger() -> None:
    events = [
        assistant(1, "step one", step=1),
        tool_call(2, "a", "read", step=1),
        tool_result(3, "a", step=1),
        assistant(4, "step two", step=2),
        tool_call(5, "b", "edit", step=2),
        tool_result(6, "b", step=2),
    ]
    items = _plan(events).items
    assert items[0].markdown.endswith("## Tool Calls\n1. `read` — ✅ 1ms")
    assert items[1].markdown.endswith("## Tool Calls\n1. `edit` — ✅ 1ms")


def test_compaction_replacement_adds_no_ledger_row() -> None:
    events = [
        assistant(1, "x", step=1),
        tool_call(2, "a", "read"),
        tool_result(3, "a"),
        other(4, "compaction/prune", {"turn": 1, "step": 1}),
        tool_result(5, "a", "pruned"),
    ]
    assert _plan(events).items[0].markdown.endswith("## Tool Calls\n1. `read` — ✅ 1ms")


def test_leading_replacement_is_recognised_through_the_before_event() -> None:
    span = [tool_result(5, "a", "pruned"), assistant(6, "y")]
    prune = other(4, "compaction/prune")
    assert "## Tool Calls" not in _plan(span, before=prune).items[0].markdown
    unrelated = other(3, "compaction/prune")  # not at seq - 1: only that event counts
    assert "## Tool Calls\n1. `tool` — ✅" in _plan(span, before=unrelated).items[0].markdown
    assert "## Tool Calls" in _plan(span, before=other(4, "step/end")).items[0].markdown


def test_step_that_only_calls_tools_produces_no_entry() -> None:
    events = [
        assistant(1, [{"type": "tool-call", "id": "c", "name": "read", "arguments": "{}"}]),
        tool_call(2, "c", "read"),
        tool_result(3, "c"),
    ]
    assert _plan(events).items == []


def test_event_without_time_is_still_formatted() -> None:
    plan = _plan([user(1, "today")], SpanOptions(tz=UTC))
    assert plan.items[0].markdown.startswith("## Role\nuser\n\n## Timestamp\n2025")
    untimed = replace(user(2, "today"), time=None)
    plan = _plan([untimed], SpanOptions(tz=UTC))
    assert plan.items[0].markdown == "## Role\nuser\n\n## Timestamp\nunknown\n\n## Content\ntoday"
    plan = _plan([untimed], SpanOptions(tz=UTC, now_ms=T0))
    assert plan.items[0].markdown.endswith("## Content\n2025-09-09")
