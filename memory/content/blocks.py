"""Content blocks → plain text (what a message's text is)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def flatten_blocks(blocks: Iterable[Any] | None) -> str:
    """Content blocks → plain text, parts joined with ``\\n``.

    ``text`` → its text; ``image`` → ``[image]``; ``thinking``/``reasoning`` and ``tool-call`` are
    dropped; ``tool-result`` is unwrapped (its own ``content`` is flattened); anything else becomes
    ``[<type>]``. Non-mapping items are ignored.
    """
    parts: list[str] = []
    for block in blocks or ():
        if type(block) is not dict and not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else "")
        elif kind == "image":
            parts.append("[image]")
        elif kind in ("thinking", "reasoning", "tool-call"):
            continue
        elif kind == "tool-result":
            inner = block.get("content")
            parts.append(flatten_blocks(inner if isinstance(inner, list | tuple) else ()))
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)
