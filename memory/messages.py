"""Which events become ``msg-*`` entries, and the dense ordinal each one is named by.

One predicate, :func:`is_loggable`, is shared by everything that names message entries (the span
formatter, withdrawal, session-node ``belongTo`` edges, summary ``summary`` edges, inspect); if
two places counted differently, names would point at the wrong entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsh_memory_worker.memory.dsh.events import Event


def source_kind(event: Event) -> str:
    """The normalised ``source.kind`` of a message event ('' when there is none).

    Taken from :attr:`Event.message` when the reader derived one, else from the raw ``data``
    (``{kind:'plugin', plugin:X}`` read as ``plugin:X``).
    """
    if event.message is not None:
        return event.message.source_kind
    data = event.data if isinstance(event.data, Mapping) else {}
    source: Any = data.get("source")
    if event.type == "assistant/message":
        message = data.get("message")
        source = message.get("source") if isinstance(message, Mapping) else None
    if not isinstance(source, Mapping):
        return ""
    kind = source.get("kind")
    plugin = source.get("plugin")
    if kind == "plugin" and isinstance(plugin, str):
        return f"plugin:{plugin}"
    return kind if isinstance(kind, str) else ""


def message_blocks(event: Event) -> tuple[Mapping[str, Any], ...]:
    """The content blocks of a user/assistant/tool message event (empty when there are none)."""
    if event.message is not None:
        return tuple(event.message.content)
    data = event.data if isinstance(event.data, Mapping) else {}
    holder: Any = data if event.type == "user/message" else data.get("message")
    content = holder.get("content") if isinstance(holder, Mapping) else None
    if not isinstance(content, list | tuple):
        return ()
    return tuple(block for block in content if isinstance(block, Mapping))


def is_interrupted(event: Event) -> bool:
    """An assistant message cut off by a cancelled turn (``data.interrupted === true``)."""
    return (
        event.type == "assistant/message"
        and isinstance(event.data, Mapping)
        and event.data.get("interrupted") is True
    )


def is_human(event: Event) -> bool:
    """A ``user/message`` whose source kind is ``user`` (a human prompt, possibly empty)."""
    return event.type == "user/message" and source_kind(event) == "user"


def _has_assistant_content(event: Event) -> bool:
    for block in message_blocks(event):
        kind = block.get("type")
        if kind == "image":
            return True
        text = block.get("text")
        if kind == "text" and isinstance(text, str) and text.strip():
            return True
    return False


def is_loggable(event: Event | None) -> bool:
    """True for a human ``user/message`` (source kind ``user``, even with empty content), and for
    an ``assistant/message`` with non-blank text, an image, or ``interrupted``. Nothing else:
    not plugin/injected user messages, tool-call-only or reasoning-only assistant steps, tool
    events, chunks."""
    if event is None:
        return False
    if event.type == "assistant/message":
        return is_interrupted(event) or _has_assistant_content(event)
    return is_human(event)


def role_of(event: Event) -> str:
    """``user`` or ``assistant`` for a loggable event."""
    return "assistant" if event.type == "assistant/message" else "user"


def count_loggable(events: Iterable[Event], inherited_cut: int = 0) -> int:
    """How many loggable events with ``seq >= inherited_cut`` ``events`` holds."""
    return sum(1 for event in events if event.seq >= inherited_cut and is_loggable(event))


def message_ordinals(
    events: Iterable[Event], inherited_cut: int = 0, *, start: int = 0
) -> dict[int, int]:
    """seq → dense ordinal (0-based) for each loggable event with ``seq >= inherited_cut``.

    ``start`` is the ordinal of the first loggable event in ``events``: 0 when ``events`` begins at
    the inherited cut, or a checkpoint's ordinal when it begins at the checkpoint's seq. A fork's
    inherited prefix never counts. Withdrawn messages are counted like any other, so later names
    do not move.
    """
    ordinals: dict[int, int] = {}
    ordinal = start
    for event in events:
        if event.seq < inherited_cut or not is_loggable(event):
            continue
        ordinals[event.seq] = ordinal
        ordinal += 1
    return ordinals


def base_ordinal(
    events: Iterable[Event],
    at_seq: int,
    *,
    inherited_cut: int = 0,
    checkpoint: tuple[int, int] | None = None,
) -> int:
    """The ordinal the first loggable message at or after ``at_seq`` takes.

    Without a checkpoint, ``events`` must cover ``[inherited_cut, at_seq)``. With a checkpoint
    ``(seq, ordinal)`` — the ordinal of the next message at ``seq``, as a previous call returned —
    ``events`` need only cover ``[seq, at_seq)``. Events outside the counted range are ignored.
    """
    lower = inherited_cut
    ordinal = 0
    if checkpoint is not None:
        cp_seq, cp_ordinal = checkpoint
        if cp_seq > at_seq:
            raise ValueError(f"checkpoint seq {cp_seq} lies after seq {at_seq}")
        if cp_seq >= inherited_cut:
            lower, ordinal = cp_seq, cp_ordinal
    for event in events:
        if lower <= event.seq < at_seq and is_loggable(event):
            ordinal += 1
    return ordinal
