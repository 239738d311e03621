"""The cap on an assistant text and the protocol's token estimate."""

from __future__ import annotations

import math

from dsh_memory_worker.memory.constants import TRUNCATION_MARKER


def cap_assistant(text: str, max_chars: int) -> str:
    """Keep the first ``max_chars`` characters and append ``\\n\\n[...truncated <n> chars]``."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + TRUNCATION_MARKER.format(omitted=len(text) - max_chars)


def estimate_tokens(text: str) -> int:
    """The protocol's estimator: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)
