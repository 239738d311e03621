"""When a finished turn owes a consolidation run: the turn-end gate, as pure functions.

At each ``turn/end`` (:func:`turn_end_gate`):

1. consolidation disabled → nothing;
2. the turn-end reason is classified (:func:`classify_turn_end`): a user abort is a task
   **boundary**; any other abort, ``blocked``, ``error``, ``max-tokens`` and ``interrupted`` are
   **skipped**; ``completed`` and unknown kinds are **normal**;
3. unless it is a boundary, at least ``check_every_turns`` turns must have passed since the last
   accepted check;
4. the new-token floor is ``min_new_tokens`` (a quarter of it, rounded up, for a boundary);
5. the span is ``[max(last_consolidated, inherited_cut), min(session_end, last_logged))`` — only
   what was already logged (:func:`consolidation_span`); an empty span is nothing.

An accepted gate resets the pending-token count and moves the turn checkpoint to this turn; a
refused one changes neither, so low tokens never consume an elapsed turn interval. Session end
and explicit requests use :func:`consolidation_span` alone (thresholds waived).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

TurnEndClass = Literal["boundary", "skip", "normal"]

DEFAULT_CHECK_EVERY_TURNS: Final = 5
DEFAULT_MIN_NEW_TOKENS: Final = 3000
_SKIPPED: Final = frozenset({"aborted", "blocked", "error", "max-tokens", "interrupted"})


@dataclass(frozen=True, slots=True)
class GateDecision:
    """``span`` is the ``(from_seq, to_seq)`` to consolidate, or ``None``; ``reason`` says why
    (``accepted``, ``disabled``, ``skipped``, ``too-soon``, ``too-few-tokens``, ``empty``)."""

    span: tuple[int, int] | None
    reason: str

    @property
    def accepted(self) -> bool:
        return self.span is not None

    @property
    def reset_tokens(self) -> bool:
        return self.accepted

    @property
    def advance_checkpoint(self) -> bool:
        return self.accepted


def classify_turn_end(reason: Mapping[str, Any] | None) -> TurnEndClass:
    """``boundary`` for a user abort, ``skip`` for other aborts and failures, else ``normal``."""
    kind = reason.get("kind") if isinstance(reason, Mapping) else None
    if kind == "aborted":
        inner = reason.get("reason") if isinstance(reason, Mapping) else None
        if isinstance(inner, Mapping) and inner.get("kind") == "user":
            return "boundary"
        return "skip"
    if kind in _SKIPPED:
        return "skip"
    return "normal"


def token_floor(min_new_tokens: int, boundary: bool) -> int:
    return math.ceil(min_new_tokens / 4) if boundary else min_new_tokens


def consolidation_span(
    last_consolidated_seq: int,
    inherited_cut: int,
    session_end_seq: int,
    last_logged_seq: int,
) -> tuple[int, int] | None:
    """``[max(last_consolidated, inherited_cut), min(session_end, last_logged))``, or ``None``
    when that is empty. Never starts inside a fork's inherited prefix."""
    from_seq = max(last_consolidated_seq, inherited_cut)
    to_seq = min(session_end_seq, last_logged_seq)
    return (from_seq, to_seq) if to_seq > from_seq else None


def turn_end_gate(
    *,
    reason: Mapping[str, Any] | None,
    turn: int,
    last_check_turn: int,
    pending_tokens: int,
    last_consolidated_seq: int,
    inherited_cut: int,
    session_end_seq: int,
    last_logged_seq: int,
    enabled: bool = True,
    check_every_turns: int = DEFAULT_CHECK_EVERY_TURNS,
    min_new_tokens: int = DEFAULT_MIN_NEW_TOKENS,
) -> GateDecision:
    """Whether this ``turn/end`` enqueues a consolidation, and of which span."""
    if not enabled:
        return GateDecision(None, "disabled")
    kind = classify_turn_end(reason)
    if kind == "skip":
        return GateDecision(None, "skipped")
    boundary = kind == "boundary"
    if not boundary and turn - last_check_turn < check_every_turns:
        return GateDecision(None, "too-soon")
    if pending_tokens < token_floor(min_new_tokens, boundary):
        return GateDecision(None, "too-few-tokens")
    span = consolidation_span(
        last_consolidated_seq, inherited_cut, session_end_seq, last_logged_seq
    )
    if span is None:
        return GateDecision(None, "empty")
    return GateDecision(span, "accepted")
