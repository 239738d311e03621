"""The tool-call ledger of a message entry: what each step called, how long it took, whether it
worked — never what a tool returned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.content.slugs import one_line_error
from dsh_memory_worker.memory.dsh.events import Event, Replace
from dsh_memory_worker.memory.messages import message_blocks
from dsh_memory_worker.memory.redaction import redact

StepKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One tool result: tool name, outcome, duration in ms (None when unknown), one-line error."""

    name: str
    ok: bool
    ms: int | None = None
    error: str | None = None


def step_key(event: Event) -> StepKey:
    """``(turn, step)`` of a turn/step-scoped event; missing numbers read as 0."""
    return (event.turn or 0, event.step or 0)


def is_compaction_replacement(
    event: Event, by_seq: Mapping[int, Event], before: Event | None = None
) -> bool:
    """A ``tool/result`` restating an old result: it directly follows a ``compaction/prune``
    (looked up in the span, or the event just ahead of it), or it is itself a replacement."""
    if event.type != "tool/result":
        return False
    if isinstance(event.surface_op, Replace):
        return True
    previous = by_seq.get(event.seq - 1)
    if previous is None and before is not None and before.seq == event.seq - 1:
        previous = before
    return previous is not None and previous.type == "compaction/prune"


def _failure(event: Event) -> str | None:
    error = event.data.get("error") if isinstance(event.data, Mapping) else None
    failed = isinstance(error, Mapping) or (event.message is not None and event.message.is_error)
    if not failed:
        return None
    name = error.get("name") if isinstance(error, Mapping) else None
    code = error.get("code") if isinstance(error, Mapping) else None
    text = f"{name if isinstance(name, str) and name else 'Error'}"
    if code not in (None, ""):
        text += f" ({code})"
    detail = one_line_error(redact(flatten_blocks(message_blocks(event))))  # redact, then cut
    return f"{text} — {detail}" if detail else text


def _call_id(event: Event) -> str | None:
    if event.message is not None and event.message.tool_call_id:
        return event.message.tool_call_id
    data = event.data if isinstance(event.data, Mapping) else {}
    message = data.get("message")
    source = message.get("source") if isinstance(message, Mapping) else None
    call_id = source.get("callId") if isinstance(source, Mapping) else None
    return call_id if isinstance(call_id, str) else None


def build_ledger(
    span: Iterable[Event], before: Event | None = None
) -> dict[StepKey, list[LedgerItem]]:
    """Every non-replacement ``tool/result`` in the span as a ledger item, keyed by step. The
    name comes from the ``tool/call`` with the same call id in the span (else ``tool``); the
    duration is result time − call time when both exist and it is not negative."""
    events = list(span)
    by_seq = {event.seq: event for event in events}
    calls: dict[str, Event] = {}
    for event in events:
        call_id = event.data.get("callId") if isinstance(event.data, Mapping) else None
        if event.type == "tool/call" and isinstance(call_id, str):
            calls.setdefault(call_id, event)
    ledger: dict[StepKey, list[LedgerItem]] = {}
    for event in events:
        if event.type != "tool/result" or is_compaction_replacement(event, by_seq, before):
            continue
        call_id = _call_id(event)
        call = calls.get(call_id) if call_id is not None else None
        raw_name = call.data.get("name") if call is not None else None
        name = raw_name if isinstance(raw_name, str) and raw_name else "tool"
        ms: int | None = None
        if (
            call is not None
            and call.time is not None
            and event.time is not None
            and event.time >= call.time
        ):
            ms = event.time - call.time
        error = _failure(event)
        item = LedgerItem(name=name, ok=error is None, ms=ms, error=error)
        ledger.setdefault(step_key(event), []).append(item)
    return ledger


def format_duration(ms: float) -> str:
    """``340`` → ``340ms``; ``2400`` → ``2.4s``; ``192000`` → ``3m12s``."""
    if ms < 1000:
        return f"{_half_up(ms, '1')}ms"
    if ms < 60_000:
        return f"{_half_up(ms / 1000, '0.1')}s"
    minutes = int(ms // 60_000)
    return f"{minutes}m{_half_up((ms - minutes * 60_000) / 1000, '1')}s"


def _half_up(value: float, step: str) -> Decimal:
    """Round the exact binary value half-up, as JavaScript's ``Math.round``/``toFixed`` do."""
    return Decimal(value).quantize(Decimal(step), rounding=ROUND_HALF_UP)


def render_ledger(items: Iterable[LedgerItem]) -> list[str]:
    """Numbered rows; consecutive items with the same name, outcome and error collapse into one
    row with a count and a total: ``1. `read` ×5 — ✅ 1.2s total``,
    ``2. `bash` — ❌ 2.0s — Error (ENOENT) — no such file``."""
    rows: list[tuple[str, bool, str | None, int, int | None]] = []
    for item in items:
        if rows and rows[-1][:3] == (item.name, item.ok, item.error):
            name, ok, error, count, ms = rows[-1]
            total = None if ms is None or item.ms is None else ms + item.ms
            rows[-1] = (name, ok, error, count + 1, total)
        else:
            rows.append((item.name, item.ok, item.error, 1, item.ms))
    lines: list[str] = []
    for index, (name, ok, error, count, ms) in enumerate(rows, start=1):
        times = f" ×{count}" if count > 1 else ""
        took = "" if ms is None else f" {format_duration(ms)}{' total' if count > 1 else ''}"
        tail = "" if ok else f" — {error}"
        lines.append(f"{index}. `{name}`{times} — {'✅' if ok else '❌'}{took}{tail}")
    return lines
