"""Synthetic V4 session logs for tests and benchmarks (valid rows, realistic sizes)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import zstandard

_TURN_EVENTS = 9


def synthetic_header(session_id: str = "synthetic-0001", cwd: str = "/home/dev/synthetic") -> str:
    header = {
        "type": "session",
        "version": 4,
        "id": session_id,
        "createdAt": 1790000000000,
        "cwd": cwd,
        "isSeeded": False,
        "delegationDepth": 0,
    }
    return json.dumps(header, separators=(",", ":"))


def synthetic_rows(n_events: int, start_time: int = 1790000000000) -> Iterator[str]:
    """``n_events`` V4 rows: complete turns of human prompt → assistant tool call → tool result →
    assistant answer; the last turn may be cut short (left open)."""
    seq = 0
    turn = 0
    while seq < n_events:
        turn += 1
        rows: list[dict[str, Any]] = []
        human = seq + 2
        rows.append({"type": "turn/start", "data": {"turn": turn}})
        rows.append({"type": "step/start", "data": {"turn": turn, "step": 1}})
        rows.append(
            {
                "type": "user/message",
                "data": {
                    "id": f"u-{turn}",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"Question {turn}: what is in file {turn}?"}
                    ],
                    "source": {"kind": "user"},
                },
                "surfaceOp": "append",
            }
        )
        call = f"call_{turn}"
        rows.append(
            _assistant_message(
                turn,
                1,
                [
                    {"type": "reasoning", "text": "Let me read the file first. " * 3},
                    {"type": "tool-call", "id": call, "name": "read",
                     "arguments": json.dumps({"path": f"file{turn}.txt"})},
                ],
                usage={"inputTokens": 900 + turn, "outputTokens": 40},
            )
        )  # fmt: skip
        rows.append(
            {
                "type": "tool/call",
                "data": {"turn": turn, "step": 1, "callId": call, "name": "read",
                         "arguments": json.dumps({"path": f"file{turn}.txt"})},
            }
        )  # fmt: skip
        rows.append(
            {
                "type": "tool/result",
                "data": {
                    "turn": turn,
                    "step": 1,
                    "message": {
                        "id": f"t-{turn}",
                        "role": "tool",
                        "toolCallId": call,
                        "content": [{"type": "text", "text": f"contents of file {turn}\n" * 4}],
                        "source": {"kind": "tool", "callId": call},
                    },
                },
                "surfaceOp": "append",
                "sourceEventSeqs": [seq + 4],
            }
        )
        answer = {"type": "text", "text": f"File {turn} holds text {turn}."}
        rows.append(_assistant_message(turn, 2, [answer]))
        rows.append({"type": "step/end", "data": {"turn": turn, "step": 1}})
        rows.append({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
        assert len(rows) == _TURN_EVENTS and human == seq + 2
        for row in rows:
            if seq >= n_events:
                return
            row["seq"] = seq
            row["time"] = start_time + seq * 7
            yield json.dumps(row, separators=(",", ":"))
            seq += 1


def _assistant_message(
    turn: int, n: int, content: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    """An ``assistant/message`` row of step 1 (its ``n``-th message), ``extra`` data after it."""
    message = {
        "id": f"a-{turn}-{n}",
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", "provider": "synthetic", "model": "m1"},
    }
    return {
        "type": "assistant/message",
        "data": {"turn": turn, "step": 1, "message": message, **extra},
        "surfaceOp": "append",
    }


def write_log(
    path: Path,
    rows: Iterator[str] | list[str],
    *,
    compressed: bool,
    batch: int = 50,
    header: str | None = None,
    level: int = 3,
    first_batches: Sequence[int] = (),
) -> list[int]:
    """Write a log (header frame + one frame per ``batch`` rows when compressed); returns the
    byte offset where each frame / batch starts (the first is the body start).

    ``first_batches`` sizes the first frames / batches (``batch`` sizes the rest), e.g. a few
    small frames before a large last one."""
    starts: list[int] = []
    cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
    with open(path, "wb") as f:
        head = ((header or synthetic_header()) + "\n").encode()
        f.write(cctx.compress(head) if compressed else head)
        pending: list[str] = []

        def flush() -> None:
            starts.append(f.tell())
            data = ("\n".join(pending) + "\n").encode()
            f.write(cctx.compress(data) if compressed else data)
            pending.clear()

        sizes = iter(first_batches)
        size = next(sizes, batch)
        for row in rows:
            pending.append(row)
            if len(pending) >= size:
                flush()
                size = next(sizes, batch)
        if pending:
            flush()
    return starts
