"""Property: however a growing log is cut into spans, and whenever each span is processed, carrying
out the span plans leaves exactly the non-withdrawn loggable messages in the store, under the
names a whole-log count gives them."""

from __future__ import annotations

from eventkit import assistant, marker, other, user
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.messages import base_ordinal, message_ordinals
from dsh_memory_worker.memory.span import plan_span
from dsh_memory_worker.memory.withdrawal import withdrawn_loggable

KINDS = ("human", "assistant", "plugin", "tool-only", "other", "marker", "checkpoint")


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[Event], int, list[int], list[int]]:
    size = draw(st.integers(min_value=1, max_value=40))
    events: list[Event] = []
    for seq in range(size):
        kind = draw(st.sampled_from(KINDS))
        if kind in ("marker", "checkpoint") and seq > 0:
            cited = draw(st.sets(st.integers(0, seq - 1), max_size=6))
            events.append(
                marker(
                    seq,
                    sorted(cited),
                    kind="plugin:rollback" if kind == "marker" else "compact-checkpoint",
                    start=0,
                    end=0,
                )
            )
        elif kind == "human":
            events.append(user(seq, "u"))
        elif kind == "assistant":
            events.append(assistant(seq, "a"))
        elif kind == "plugin":
            events.append(user(seq, "ctx", kind="runtime-context"))
        elif kind == "tool-only":
            events.append(assistant(seq, []))
        else:
            events.append(other(seq, "step/end"))
    cut = draw(st.integers(0, size // 3))
    bounds = sorted(draw(st.sets(st.integers(cut + 1, size), max_size=6)) | {size})
    # when each span is processed: the durable end at that moment (>= the span's end)
    seen = [draw(st.integers(b, size)) for b in bounds]
    for i in range(1, len(seen)):
        seen[i] = max(seen[i], seen[i - 1])
    return events, cut, bounds, seen


@settings(max_examples=300, deadline=None)
@given(logs())
def test_span_plans_converge_on_the_whole_log_decision(
    case: tuple[list[Event], int, list[int], list[int]],
) -> None:
    events, cut, bounds, seen = case
    store: dict[str, int] = {}
    start = cut
    for end, durable in zip(bounds, seen, strict=True):
        prefix = events[:start]
        plan = plan_span(
            events[start:end],
            events[start:durable],
            span_from=start,
            span_to=end,
            session_id="s",
            project="p",
            inherited_cut=cut,
            base_ordinal=base_ordinal(prefix, start, inherited_cut=cut),
            prefix_ordinals=message_ordinals(prefix, cut),
        )
        for item in plan.items:
            if item.withdrawn:
                store.pop(item.name, None)
            else:
                store.setdefault(item.name, item.seq)
        for retraction in plan.retract:
            store.pop(retraction.name, None)
        start = end

    ordinals = message_ordinals(events, cut)
    withdrawn = withdrawn_loggable(events, inherited_cut=cut)
    # the last span ends at the end of the log, so every marker has been seen by then
    expected = {f"msg-s-{n}": seq for seq, n in ordinals.items() if seq not in withdrawn}
    assert store == expected
