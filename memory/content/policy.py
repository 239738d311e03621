"""A message body's policy in its fixed order: redact → cap → absolutise (redacting before the
cut means no secret survives as a short fragment)."""

from __future__ import annotations

from datetime import tzinfo

from dsh_memory_worker.memory.content.caps import cap_assistant
from dsh_memory_worker.memory.content.dates import absolutise_dates
from dsh_memory_worker.memory.redaction import redact


def clean_text(text: str, *, max_chars: int, base_ms: int, tz: tzinfo | None = None) -> str:
    """The message-body policy in its fixed order: redact → cap → absolutise."""
    return absolutise_dates(cap_assistant(redact(text), max_chars), base_ms, tz)
