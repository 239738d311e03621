"""Which message entries a span summary points at.

A span summary ``sum-<session>-<from>-<coveredTo>`` gets one ``summary`` edge to each message
entry of the part of the span it covers: every loggable message with ``from <= seq < coveredTo``
at or after the inherited cut, named by its dense ordinal. A withdrawn message has no entry to
cite, so its name is left out — but its ordinal is still counted, so the names after it stay
aligned with the entries the log layer wrote (``memory.messages`` counts the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.entries import message_name
from dsh_memory_worker.memory.messages import message_ordinals


def summary_member_names(
    events: Iterable[Event],
    session_id: str,
    *,
    from_seq: int,
    covered_to_seq: int,
    base_ordinal: int,
    withdrawn: Set[int] = frozenset(),
    inherited_cut: int = 0,
) -> list[str]:
    """``msg-<session>-<N>`` for each loggable, non-withdrawn message in
    ``[max(from_seq, inherited_cut), covered_to_seq)``, in log order.

    ``events`` must start at ``from_seq``; ``base_ordinal`` is the ordinal of the first loggable
    message at or after ``from_seq`` (``memory.messages.base_ordinal``).
    """
    lower = max(from_seq, inherited_cut)
    in_span = [e for e in events if lower <= e.seq < covered_to_seq]
    ordinals = message_ordinals(in_span, inherited_cut, start=base_ordinal)
    return [
        message_name(session_id, ordinal)
        for seq, ordinal in ordinals.items()
        if seq not in withdrawn
    ]
