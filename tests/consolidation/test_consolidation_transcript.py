"""The consolidation transcript: exact lines, exclusions, redaction, dates, the budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

from eventkit import T0, assistant, marker, other, text, tool_call, tool_result, user

from dsh_memory_worker.memory.consolidation.transcript import (
    build_transcript,
    fit_budget,
    transcript_lines,
)
from dsh_memory_worker.memory.withdrawal import withdrawn_seqs


def lines_of(events: list, **kwargs: object) -> list[str]:  # type: ignore[type-arg]
    return [line.text for line in transcript_lines(events, tz=UTC, **kwargs)]  # type: ignore[arg-type]


def test_user_assistant_and_tool_lines_without_tool_output() -> None:
    events = [
        user(1, "Why does the build fail?"),
        other(2, "turn/start", {"turn": 1}),
        assistant(3, [{"type": "reasoning", "text": "hmm"}, {"type": "tool-call", "id": "c1"}]),
        tool_call(4, "c1", "bash"),
        tool_result(5, "c1", "SECRET-OUTPUT-LINE"),
        tool_call(6, "c2", "read"),
        tool_result(7, "c2", "boom", error={"name": "Error", "code": "ENOENT"}),
        assistant(8, "The lockfile was stale."),
        other(9, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    assert lines_of(events) == [
        "U: Why does the build fail?",
        "T: bash ✅",
        "T: read ❌",
        "A: The lockfile was stale.",
    ]


def test_plugin_messages_checkpoints_and_empty_messages_are_left_out() -> None:
    events = [
        user(1, "runtime context", kind="runtime-context"),
        user(2, "recall seed", kind="plugin:dsh-hypatia-auto-memory"),
        user(3, "checkpoint summary", kind="compact-checkpoint", sources=[1], replace=(1, 1)),
        user(4, "   "),
        assistant(5, ""),
        assistant(6, "", interrupted=True),
        user(7, "real question"),
    ]
    assert lines_of(events) == ["U: real question"]


def test_nested_tool_result_blocks_are_unwrapped_but_output_never_shown() -> None:
    plain = tool_result(3, "c9", "ignored")
    block = {"type": "tool-result", "toolCallId": "c9", "content": [text("NESTED-OUTPUT")]}
    assert plain.message is not None
    nested = replace(plain, message=replace(plain.message, content=(block,)))
    events = [tool_call(2, "c9", "grep"), nested, user(4, [text("a"), {"type": "image"}])]
    result = build_transcript(events, tz=UTC)
    assert result.text == "T: grep ✅\nU: a\n[image]"
    assert "NESTED-OUTPUT" not in result.text


def test_a_result_whose_call_is_outside_the_span_is_named_tool() -> None:
    events = [tool_result(10, "gone", "x", error={"name": "Error"})]
    assert lines_of(events) == ["T: tool ❌"]


def test_compaction_replacements_are_left_out_even_at_the_span_start() -> None:
    prune = other(19, "compaction/prune", {"shadowedRange": {"start": 5, "end": 5}})
    restated = tool_result(20, "c1", "short form")
    events = [restated, tool_call(21, "c2", "edit"), tool_result(22, "c2", "done")]
    assert lines_of(events, before=prune) == ["T: edit ✅"]
    assert lines_of(events) == ["T: tool ✅", "T: edit ✅"]
    in_span = [other(30, "compaction/prune"), tool_result(31, "c3", "x"), user(32, "next")]
    assert lines_of(in_span) == ["U: next"]
    replaced = [tool_result(40, "c4", "x", replace=(12, 12))]
    assert lines_of(replaced) == []


def test_secrets_are_redacted_and_dates_absolutised_against_the_send_time() -> None:
    said = T0 + 3_600_000  # 2025-09-09 09:00 UTC
    events = [
        user(1, "use key sk-abcdef0123456789 and password=hunter22 today", time=said),
        assistant(2, "I will do it tomorrow, Bearer abcdefghijklmnop", time=said),
        user(3, "明天 再说", time=said + 86_400_000),
    ]
    assert lines_of(events) == [
        "U: use key [REDACTED:secret:key] and password=[REDACTED:secret:credential] 2025-09-09",
        "A: I will do it 2025-09-10, Bearer [REDACTED:secret:bearer]",  # the scheme word stays
        "U: 2025-09-11 再说",
    ]


def test_withdrawn_messages_never_reach_the_transcript() -> None:
    span = [
        user(1, "keep this"),
        assistant(2, "kept answer"),
        user(3, "WITHDRAWN-QUESTION"),
        assistant(4, "WITHDRAWN-ANSWER"),
    ]
    later = [marker(9, [3, 4])]
    withdrawn = withdrawn_seqs(span + later)
    assert withdrawn == {3, 4}
    result = build_transcript(span, withdrawn=withdrawn, tz=UTC)
    assert result.text == "U: keep this\nA: kept answer"
    assert "WITHDRAWN" not in result.text
    assert result.complete is True
    assert result.last_seq == 2


def test_nothing_below_the_inherited_cut_is_shown() -> None:
    events = [user(1, "parent question"), assistant(2, "parent answer"), user(5, "child")]
    assert lines_of(events, inherited_cut=5) == ["U: child"]


def test_over_budget_keeps_the_oldest_and_marks_the_deferral() -> None:
    events = [user(seq, "x" * 95) for seq in range(1, 100)]  # each line costs 3 + 95 + 1 = 99
    result = build_transcript(events, max_input_tokens=100, tz=UTC)  # 400 characters
    assert result.complete is False
    assert [line.seq for line in result.lines] == [1, 2, 3, 4]
    assert result.last_seq == 4
    assert result.dropped == 95
    assert result.text.endswith(
        "\n[later content deferred to the next consolidation run: 95 entries]"
    )
    assert result.text.count("U: ") == 4
    assert result.covered_to(100) == 5


def test_the_whole_span_is_covered_when_it_fits() -> None:
    result = build_transcript([user(3, "a"), assistant(7, "b")], tz=UTC)
    assert result.text == "U: a\nA: b"
    assert (result.complete, result.last_seq, result.covered_to(12)) == (True, 7, 12)


def test_an_oversized_single_entry_is_admitted_truncated() -> None:
    (line,) = transcript_lines([user(4, "y" * 5000)], tz=UTC)
    result = fit_budget([line], max_input_tokens=1000)  # 4000 characters
    assert result.complete is True
    assert result.last_seq == 4
    assert result.text == ("U: " + "y" * 3997) + "\n[...truncated 1003 chars]"
    assert result.covered_to(9) == 9


def test_an_oversized_first_entry_then_more_defers_the_rest() -> None:
    lines = transcript_lines([user(4, "y" * 5000), user(5, "next")], tz=UTC)
    result = fit_budget(lines, max_input_tokens=1000)
    assert (result.complete, result.last_seq, result.dropped) == (False, 4, 1)
    assert result.text.endswith(
        "[...truncated 1003 chars]\n[later content deferred to the next consolidation run: "
        "1 entries]"
    )
    assert result.covered_to(9) == 5


def test_an_empty_transcript_covers_the_whole_span() -> None:
    result = build_transcript([other(1, "turn/start"), user(2, "ctx", kind="goal")], tz=UTC)
    assert result.empty is True
    assert (result.text, result.last_seq, result.complete) == ("", None, True)
    assert result.covered_to(3) == 3
