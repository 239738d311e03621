"""The turn-end consolidation gate."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_memory_worker.memory.consolidation.gates import (
    GateDecision,
    classify_turn_end,
    consolidation_span,
    turn_end_gate,
)


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ({"kind": "completed"}, "normal"),
        ({"kind": "aborted", "reason": {"kind": "user"}}, "boundary"),
        ({"kind": "aborted", "reason": {"kind": "parent"}}, "skip"),
        ({"kind": "aborted"}, "skip"),
        ({"kind": "blocked"}, "skip"),
        ({"kind": "error", "error": {"message": "x"}}, "skip"),
        ({"kind": "max-tokens"}, "skip"),
        ({"kind": "interrupted"}, "skip"),
        ({"kind": "forked"}, "normal"),
        (None, "normal"),
    ],
)
def test_turn_end_reasons_are_classified(reason: dict[str, Any] | None, kind: str) -> None:
    assert classify_turn_end(reason) == kind


def gate(**overrides: Any) -> GateDecision:
    values: dict[str, Any] = {
        "reason": {"kind": "completed"},
        "turn": 5,
        "last_check_turn": 0,
        "pending_tokens": 3000,
        "last_consolidated_seq": 2,
        "inherited_cut": 0,
        "session_end_seq": 12,
        "last_logged_seq": 10,
    }
    values.update(overrides)
    return turn_end_gate(**values)


def test_both_gates_pass_and_the_span_ends_at_what_was_logged() -> None:
    decision = gate()
    assert decision == GateDecision((2, 10), "accepted")
    assert decision.reset_tokens and decision.advance_checkpoint


def test_each_refusal_keeps_tokens_and_checkpoint() -> None:
    refusals = {
        "disabled": gate(enabled=False),
        "skipped": gate(reason={"kind": "error"}),
        "too-soon": gate(turn=4),
        "too-few-tokens": gate(pending_tokens=2999),
        "empty": gate(last_consolidated_seq=10),
    }
    for reason, decision in refusals.items():
        assert decision.reason == reason
        assert decision.span is None
        assert not decision.reset_tokens and not decision.advance_checkpoint


def test_a_user_abort_ignores_the_turn_interval_and_needs_a_quarter_of_the_tokens() -> None:
    abort = {"kind": "aborted", "reason": {"kind": "user"}}
    assert gate(reason=abort, turn=1, pending_tokens=750).span == (2, 10)
    assert gate(reason=abort, turn=1, pending_tokens=749).reason == "too-few-tokens"
    assert gate(reason=abort, turn=1, pending_tokens=250, min_new_tokens=1000).accepted


def test_the_span_never_starts_inside_a_fork_prefix() -> None:
    assert consolidation_span(0, 62678, 65723, 65723) == (62678, 65723)
    assert consolidation_span(0, 40, 40, 40) is None
    assert consolidation_span(6, 0, 30, 99) == (6, 30)
