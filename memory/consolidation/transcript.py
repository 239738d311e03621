"""The consolidation transcript: what the model is shown of a span.

One line per event, oldest first:

* a human ``user/message`` (source kind ``user``) → ``U: <text>``;
* an ``assistant/message`` → ``A: <text>``;
* a ``tool/result`` → ``T: <name> ✅`` or ``T: <name> ❌`` — never the output; the name comes from
  the span's ``tool/call`` with the same call id, else ``tool``.

Left out: plugin and injected user messages (compaction checkpoints, runtime context, markers),
tool output, compaction replacements (a ``tool/result`` right after a ``compaction/prune``, or any
``tool/result`` that replaces a surface node — it restates an old result), events in a fork's
inherited prefix, everything else, and **withdrawn messages**: a message the user took back never
reaches the summariser, because summaries are immutable and no later delete could reach text
carried into one.

Each line is redacted, then its relative dates are made absolute against the event's own time,
then trimmed; an empty line is dropped. The text is cut to a budget of ``max_input_tokens × 4``
characters (each line costs its length + 1), keeping the oldest lines; when lines are dropped the
text ends with the deferral marker, and a first line larger than the whole budget is admitted
alone, truncated, so the watermark always advances.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, Final

from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.content.dates import absolutise_dates
from dsh_memory_worker.memory.dsh.events import Event, Replace
from dsh_memory_worker.memory.messages import is_human, message_blocks
from dsh_memory_worker.memory.redaction import redact

#: Characters per token of the budget (the reference's ``estimateTokens``).
CHARS_PER_TOKEN: Final = 4
DEFAULT_MAX_INPUT_TOKENS: Final = 16000
DEFERRAL_MARKER: Final = "\n[later content deferred to the next consolidation run: {count} entries]"
OVERSIZE_MARKER: Final = "\n[...truncated {omitted} chars]"
TOOL_OK: Final = "✅"
TOOL_FAILED: Final = "❌"
UNKNOWN_TOOL: Final = "tool"
PRUNE_EVENT: Final = "compaction/prune"


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class Transcript:
    """The text sent to the model and how much of the span it covers.

    ``last_seq`` is the seq of the last line kept (``None`` when there is no line); ``complete``
    is False when the budget pushed later lines to the next run. ``lines`` holds every line
    kept (the first one untruncated), ``dropped`` how many were deferred.
    """

    text: str
    last_seq: int | None
    complete: bool
    lines: tuple[TranscriptLine, ...] = ()
    dropped: int = 0

    @property
    def empty(self) -> bool:
        return self.text.strip() == ""

    def covered_to(self, to_seq: int) -> int:
        """The end (exclusive) of what this run consolidates out of ``[from, to_seq)``."""
        if self.complete or self.last_seq is None:
            return to_seq
        return self.last_seq + 1


def _call_id(event: Event) -> str | None:
    if event.message is not None and event.message.tool_call_id:
        return event.message.tool_call_id
    data = event.data if isinstance(event.data, Mapping) else {}
    message: Any = data.get("message")
    source = message.get("source") if isinstance(message, Mapping) else None
    call_id = source.get("callId") if isinstance(source, Mapping) else None
    return call_id if isinstance(call_id, str) else None


def _tool_failed(event: Event) -> bool:
    data = event.data if isinstance(event.data, Mapping) else {}
    if data.get("error") is not None:
        return True
    return event.message is not None and event.message.is_error


def is_compaction_replacement(event: Event, previous: Event | None) -> bool:
    """A ``tool/result`` that restates an old result: right after a ``compaction/prune``, or
    carrying a replace surface op."""
    if event.type != "tool/result":
        return False
    if isinstance(event.surface_op, Replace):
        return True
    return previous is not None and previous.seq == event.seq - 1 and previous.type == PRUNE_EVENT


def transcript_lines(
    events: Iterable[Event],
    *,
    withdrawn: Set[int] = frozenset(),
    inherited_cut: int = 0,
    before: Event | None = None,
    now_ms: int | None = None,
    tz: tzinfo | None = None,
) -> list[TranscriptLine]:
    """Every transcript line of ``events`` (no budget), oldest first.

    ``before`` is the event just ahead of the span (seq ``from - 1``), so a replacement at the
    very start is recognised. ``now_ms`` is the date base of an event without a time.
    """
    events = list(events)
    names: dict[str, str] = {}
    for event in events:
        if event.type == "tool/call" and isinstance(event.data, Mapping):
            call_id, name = event.data.get("callId"), event.data.get("name")
            if isinstance(call_id, str) and isinstance(name, str) and name:
                names[call_id] = name
    fallback_ms = int(time.time() * 1000) if now_ms is None else now_ms
    by_seq = {event.seq: event for event in events}
    if before is not None:
        by_seq.setdefault(before.seq, before)
    lines: list[TranscriptLine] = []
    for event in events:
        if event.seq < inherited_cut or event.seq in withdrawn:
            continue
        if event.type == "user/message":
            if not is_human(event):
                continue
            raw = "U: " + flatten_blocks(message_blocks(event))
        elif event.type == "assistant/message":
            raw = "A: " + flatten_blocks(message_blocks(event))
        elif event.type == "tool/result":
            if is_compaction_replacement(event, by_seq.get(event.seq - 1)):
                continue
            call_id = _call_id(event)
            name = names.get(call_id, UNKNOWN_TOOL) if call_id is not None else UNKNOWN_TOOL
            raw = f"T: {name} {TOOL_FAILED if _tool_failed(event) else TOOL_OK}"
        else:
            continue
        base = event.time if event.time is not None else fallback_ms
        line = absolutise_dates(redact(raw), base, tz).strip()
        if line in ("U:", "A:"):
            continue
        lines.append(TranscriptLine(event.seq, line))
    return lines


def fit_budget(lines: Iterable[TranscriptLine], max_input_tokens: int) -> Transcript:
    """Keep the oldest lines within ``max_input_tokens × 4`` characters (see the module doc)."""
    lines = list(lines)
    budget = max(1, max_input_tokens) * CHARS_PER_TOKEN
    kept: list[TranscriptLine] = []
    parts: list[str] = []
    used = 0
    for line in lines:
        cost = len(line.text) + 1
        if used >= budget:
            break
        if used + cost > budget:
            if kept:
                break
            text = line.text
            if len(text) > budget:
                text = text[:budget] + OVERSIZE_MARKER.format(omitted=len(text) - budget)
            kept.append(line)
            parts.append(text)
            used = budget
            continue
        kept.append(line)
        parts.append(line.text)
        used += cost
    dropped = len(lines) - len(kept)
    text = "\n".join(parts)
    if dropped:
        text += DEFERRAL_MARKER.format(count=dropped)
    return Transcript(
        text=text,
        last_seq=kept[-1].seq if kept else None,
        complete=dropped == 0,
        lines=tuple(kept),
        dropped=dropped,
    )


def build_transcript(
    events: Iterable[Event],
    *,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    withdrawn: Set[int] = frozenset(),
    inherited_cut: int = 0,
    before: Event | None = None,
    now_ms: int | None = None,
    tz: tzinfo | None = None,
) -> Transcript:
    """The budgeted transcript of a span's events ``[from, to)``.

    ``withdrawn`` is every seq a withdrawal marker cites — compute it over ``[from, end of log)``
    (``memory.withdrawal.withdrawn_seqs``), since a marker comes after what it withdraws.
    """
    lines = transcript_lines(
        events,
        withdrawn=withdrawn,
        inherited_cut=inherited_cut,
        before=before,
        now_ms=now_ms,
        tz=tz,
    )
    return fit_budget(lines, max_input_tokens)
