"""The single loggable-message predicate (reference §2.2 truth table)."""

from __future__ import annotations

from eventkit import assistant, chunk, marker, other, tool_call, tool_result, user

from dsh_memory_worker.memory.dsh.events import APPEND, Event, Message
from dsh_memory_worker.memory.messages import is_loggable, source_kind


def test_truth_table() -> None:
    assert is_loggable(assistant(1, "text")) is True
    assert is_loggable(assistant(2, [])) is False
    assert is_loggable(assistant(3, [], interrupted=True)) is True
    assert is_loggable(assistant(4, [{"type": "reasoning", "text": "hmm"}])) is False
    assert (
        is_loggable(
            assistant(5, [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "hi"}])
        )
        is True
    )
    assert is_loggable(user(6, "hi")) is True
    assert is_loggable(user(7, "ctx", kind="plugin:recall")) is False
    assert is_loggable(tool_result(8, "c1")) is False
    assert is_loggable(None) is False


def test_edge_cases() -> None:
    assert is_loggable(user(1, [])) is True  # a human message counts even when empty
    assert is_loggable(assistant(2, "   \n ")) is False  # blank text only
    assert is_loggable(assistant(3, [{"type": "image", "attachment": {}}])) is True
    assert is_loggable(assistant(4, [{"type": "tool-call", "id": "c", "name": "read"}])) is False
    assert is_loggable(assistant(5, [{"type": "widget"}])) is False  # unknown blocks only
    assert is_loggable(chunk(6)) is False
    assert is_loggable(tool_call(7, "c", "read")) is False
    assert is_loggable(other(8, "turn/end", {"turn": 1})) is False
    for kind in (
        "runtime-context",
        "compact-checkpoint",
        "session-retry",
        "memory-manager",
        "plugin:rollback",
        "dsh-rewind",
    ):
        assert is_loggable(user(9, "x", kind=kind)) is False
    assert is_loggable(marker(10, [1, 2])) is False


def test_source_kind_falls_back_to_raw_data() -> None:
    raw = Event(
        seq=0,
        type="user/message",
        time=0,
        data={"content": [], "source": {"kind": "plugin", "plugin": "rollback"}},
        surface_op=APPEND,
    )
    assert source_kind(raw) == "plugin:rollback"
    human = Event(
        seq=1, type="user/message", time=0, data={"content": [], "source": {"kind": "user"}}
    )
    assert is_loggable(human) is True
    normalised = Event(
        seq=2,
        type="user/message",
        time=0,
        data={},
        message=Message(id="m", role="user", content=(), source_kind="user"),
    )
    assert is_loggable(normalised) is True
