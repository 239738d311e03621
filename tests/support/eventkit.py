"""Hand-built normalised events for unit tests (the shapes ``memory.dsh`` produces)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dsh_memory_worker.memory.dsh.events import APPEND, Event, Message, Replace

T0 = 1_757_404_800_000  # 2025-09-09T08:00:00Z


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _blocks(content: str | Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return (text(content),) if isinstance(content, str) else tuple(content)


def _surface(
    seq: int,
    type_: str,
    time: int | None,
    data: Mapping[str, Any],
    message: Message | None,
    *,
    replace: tuple[int, int] | None = None,
    sources: Iterable[int] = (),
) -> Event:
    """A surface event carrying ``message``: an append, or a replace of ``replace``'s range."""
    return Event(
        seq=seq,
        type=type_,
        time=T0 + seq if time is None else time,
        data=data,
        surface_op=Replace(*replace) if replace is not None else APPEND,
        source_seqs=tuple(sources),
        message=message,
    )


def user(
    seq: int,
    content: str | Sequence[Mapping[str, Any]] = "hello",
    *,
    kind: str = "user",
    time: int | None = None,
    sources: Iterable[int] = (),
    replace: tuple[int, int] | None = None,
) -> Event:
    """A ``user/message``; ``kind`` is the normalised source kind."""
    blocks = _blocks(content)
    message = Message(
        id=f"u{seq}", role="user", content=blocks, source_kind=kind, source={"kind": kind}
    )
    data = {"id": f"u{seq}", "role": "user", "content": list(blocks), "source": {"kind": kind}}
    return _surface(seq, "user/message", time, data, message, replace=replace, sources=sources)


def marker(
    seq: int,
    cited: Iterable[int],
    *,
    kind: str = "dsh-rewind",
    start: int | None = None,
    end: int | None = None,
) -> Event:
    """A withdrawal-style replacement ``user/message`` citing ``cited``."""
    seqs = tuple(cited)
    lo = start if start is not None else (seqs[0] if seqs else 0)
    hi = end if end is not None else (seqs[-1] if seqs else 0)
    return user(seq, "(empty message)", kind=kind, sources=seqs, replace=(lo, hi))


def assistant(
    seq: int,
    content: str | Sequence[Mapping[str, Any]] = "ok",
    *,
    turn: int = 1,
    step: int = 1,
    interrupted: bool = False,
    time: int | None = None,
) -> Event:
    blocks = _blocks(content)
    message = Message(
        id=f"a{seq}",
        role="assistant",
        content=blocks,
        source_kind="model",
        source={"kind": "model", "provider": "p", "model": "m"},
    )
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "message": {
            "id": f"a{seq}",
            "role": "assistant",
            "content": list(blocks),
            "source": {"kind": "model"},
        },
    }
    if interrupted:
        data["interrupted"] = True
    return _surface(seq, "assistant/message", time, data, message if blocks else None)


def tool_call(
    seq: int, call_id: str, name: str, *, turn: int = 1, step: int = 1, time: int | None = None
) -> Event:
    data = {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": "{}"}
    return Event(seq=seq, type="tool/call", time=T0 + seq if time is None else time, data=data)


def tool_result(
    seq: int,
    call_id: str,
    output: str = "output",
    *,
    turn: int = 1,
    step: int = 1,
    time: int | None = None,
    error: Mapping[str, Any] | None = None,
    replace: tuple[int, int] | None = None,
) -> Event:
    blocks = (text(output),)
    message = Message(
        id=f"t{seq}",
        role="tool",
        content=blocks,
        source_kind="tool",
        source={"kind": "tool", "callId": call_id},
        tool_call_id=call_id,
        is_error=error is not None,
    )
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "message": {"role": "tool", "content": list(blocks)},
    }
    if error is not None:
        data["error"] = dict(error)
    return _surface(seq, "tool/result", time, data, message, replace=replace, sources=(seq - 1,))


def other(
    seq: int, type_: str, data: Mapping[str, Any] | None = None, *, time: int | None = None
) -> Event:
    return Event(
        seq=seq, type=type_, time=T0 + seq if time is None else time, data=dict(data or {})
    )


def chunk(seq: int) -> Event:
    return other(seq, "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta"}})
