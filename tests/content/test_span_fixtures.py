"""The span plan on real fixtures: exact names, markdown, skips and retractions."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.messages import base_ordinal, message_ordinals
from dsh_memory_worker.memory.span import RetractItem, SpanOptions, SpanPlan, plan_span

OPTIONS = SpanOptions(tool_ledger=True, tz=UTC)


def _plan(path: Path, frm: int, to: int) -> tuple[str, SpanPlan]:
    log = read_log(path)
    assert log.header is not None
    sid = log.header.id
    prefix = [e for e in log.events if e.seq < frm]
    plan = plan_span(
        [e for e in log.events if frm <= e.seq < to],
        [e for e in log.events if e.seq >= frm],
        span_from=frm,
        span_to=to,
        session_id=sid,
        project="demo",
        inherited_cut=log.inherited,
        base_ordinal=base_ordinal(prefix, frm, inherited_cut=log.inherited),
        prefix_ordinals=message_ordinals(prefix, log.inherited),
        options=OPTIONS,
        before=prefix[-1] if prefix else None,
    )
    return sid, plan


def test_v4_turn_spans(fixtures_dir: Path) -> None:
    path = fixtures_dir / "v4-example" / "session.v4.jsonl"
    sid, first = _plan(path, 0, 18)
    assert [(i.seq, i.name, i.withdrawn) for i in first.items] == [
        (5, f"msg-{sid}-0", False),
        (15, f"msg-{sid}-1", False),
    ]
    assert first.items[1].markdown == (
        "## Role\nassistant\n\n## Timestamp\n2026-09-21T14:13:21.222Z\n\n## Turn\n1\n\n"
        "## Content\nThe service listens on port 8080."
    )
    # turn 3 is logged with the marker window reaching the end of the log: both skipped
    _, third = _plan(path, 43, 52)
    assert [(i.seq, i.name, i.withdrawn, i.markdown) for i in third.items] == [
        (47, f"msg-{sid}-4", True, ""),
        (49, f"msg-{sid}-5", True, ""),
    ]
    assert third.retract == [] and third.next_ordinal == 6


def test_v4_rewind_after_the_flush_retracts(fixtures_dir: Path) -> None:
    path = fixtures_dir / "v4-example" / "session.v4.jsonl"
    sid, later = _plan(path, 52, 69)
    assert later.retract == [
        RetractItem(4, 47, f"msg-{sid}-4", 58, "dsh-rewind"),
        RetractItem(5, 49, f"msg-{sid}-5", 58, "dsh-rewind"),
    ]
    assert [(i.seq, i.name, i.withdrawn) for i in later.items] == [
        (63, f"msg-{sid}-6", False),
        (65, f"msg-{sid}-7", False),
    ]
    assert later.skip_ordinals == frozenset({4, 5})
    assert later.next_ordinal == 8


def test_fork_child_span_from_zero_skips_the_prefix(fixtures_dir: Path) -> None:
    path = fixtures_dir / "subagent-fork-in-process" / "session.1.jsonl"
    sid, plan = _plan(path, 0, 200)
    assert [(i.seq, i.name) for i in plan.items] == [(49, f"msg-{sid}-0"), (96, f"msg-{sid}-1")]


def test_cancelled_turn_and_untimed_v0_events(fixtures_dir: Path) -> None:
    _, plan = _plan(fixtures_dir / "cancel" / "session.jsonl", 0, 14)
    assert [i.markdown for i in plan.items] == [
        "## Role\nuser\n\n## Timestamp\nunknown\n\n## Content\n"
        "Start a long task; this turn will be cancelled mid-stream.",
        "## Role\nassistant\n\n## Timestamp\nunknown\n\n## Turn\n1\n\n## Content\npartial\n\n"
        "[turn interrupted mid-stream]",
    ]


def test_inline_image_prompt(fixtures_dir: Path) -> None:
    _, plan = _plan(fixtures_dir / "inline-image-prompt" / "session.jsonl", 0, 16)
    assert [i.markdown for i in plan.items] == [
        "## Role\nuser\n\n## Timestamp\nunknown\n\n## Content\n"
        "Inspect this image, then reply with exactly \n[image]\nthe single word DONE.",
        "## Role\nassistant\n\n## Timestamp\nunknown\n\n## Turn\n1\n\n## Content\nDONE",
    ]
