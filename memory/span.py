"""The span formatter: for one log span ``[span_from, span_to)`` and its marker window, every
message entry to write (or, when withdrawn, not to write) and every earlier entry to retract —
the whole decision, which the log task only carries out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import tzinfo

from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.content.caps import cap_assistant
from dsh_memory_worker.memory.content.dates import absolutise_dates
from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.entries import (
    MESSAGE_POLICY,
    message_name,
    render_message,
    scopes_for,
)
from dsh_memory_worker.memory.ledger import LedgerItem, build_ledger, step_key
from dsh_memory_worker.memory.messages import (
    is_interrupted,
    is_loggable,
    message_blocks,
    message_ordinals,
    role_of,
)
from dsh_memory_worker.memory.redaction import redact
from dsh_memory_worker.memory.withdrawal import (
    DEFAULT_WHITELIST,
    OrdinalLookup,
    find_markers,
    withdrawal_work,
)


@dataclass(frozen=True, slots=True)
class SpanOptions:
    """Formatting knobs (the reference's ``collector.*`` defaults)."""

    max_assistant_chars: int = 8000
    max_user_chars: int = 32000
    tool_ledger: bool = False
    #: timezone for absolutised dates; None = the local timezone
    tz: tzinfo | None = None
    #: base (Unix ms) for relative dates in an event without a time; None leaves them as written
    now_ms: int | None = None


@dataclass(frozen=True, slots=True)
class MessageItem:
    """One loggable message of the span. A withdrawn item must not be written (and an entry of
    that name, if one exists, is deleted); its ``markdown`` is empty so its text cannot leak."""

    ordinal: int
    seq: int
    role: str
    name: str
    markdown: str
    project: str
    withdrawn: bool
    tags: tuple[str, ...] = MESSAGE_POLICY.tags
    scopes: tuple[str, ...] = ()
    embed: bool = MESSAGE_POLICY.embed
    #: for a withdrawn item: the seq and kind of the first marker citing it
    marker_seq: int | None = None
    marker_kind: str = ""


@dataclass(frozen=True, slots=True)
class RetractItem:
    """An entry an earlier span wrote that a marker has since withdrawn."""

    ordinal: int
    seq: int
    name: str
    marker_seq: int
    kind: str


@dataclass(frozen=True, slots=True)
class SpanPlan:
    """``items`` in log order; ``retract`` in seq order; ``next_ordinal`` is the ordinal after the
    span (the ``belongTo`` cursor's ``linkTo``); ``skip_ordinals`` are ordinals that get no
    ``belongTo`` edge (withdrawn items and retractions)."""

    items: list[MessageItem] = field(default_factory=list)
    retract: list[RetractItem] = field(default_factory=list)
    next_ordinal: int = 0
    skip_ordinals: frozenset[int] = frozenset()

    @property
    def to_write(self) -> list[MessageItem]:
        return [item for item in self.items if not item.withdrawn]


def loggable_once(event: Event) -> bool:
    """:func:`memory.messages.is_loggable`, decided once per event object and kept on it
    (:attr:`Event.loggable_memo`): in one run the watcher's scan, this planner and the session
    node's survey ask about the same decoded events."""
    memo = event.loggable_memo
    if memo is None:
        memo = is_loggable(event)
        object.__setattr__(event, "loggable_memo", memo)
    return memo


def message_body(event: Event, options: SpanOptions = SpanOptions()) -> str:
    """The cleaned text of a loggable message: flatten → redact → cap (assistant or user limit)
    → absolutise dates against the event's own time."""
    role = role_of(event)
    limit = options.max_assistant_chars if role == "assistant" else options.max_user_chars
    capped = cap_assistant(redact(flatten_blocks(message_blocks(event))), limit)
    base = event.time if event.time is not None else options.now_ms
    return capped if base is None else absolutise_dates(capped, base, options.tz)


def format_message(
    event: Event,
    options: SpanOptions = SpanOptions(),
    ledger: Mapping[tuple[int, int], list[LedgerItem]] | None = None,
) -> str:
    """The ``msg-*`` markdown of one loggable event; an assistant gets its own step's ledger."""
    role = role_of(event)
    rows = (ledger or {}).get(step_key(event), []) if role == "assistant" else []
    return render_message(
        role=role,
        time_ms=event.time,
        body=message_body(event, options),
        turn=event.turn,
        interrupted=is_interrupted(event),
        ledger=rows,
    )


def plan_span(
    span_events: Iterable[Event],
    window_events: Iterable[Event],
    *,
    span_from: int,
    span_to: int | None = None,
    session_id: str,
    project: str,
    inherited_cut: int = 0,
    base_ordinal: int = 0,
    prefix_ordinals: OrdinalLookup | None = None,
    whitelist: Iterable[str] = DEFAULT_WHITELIST,
    options: SpanOptions = SpanOptions(),
    before: Event | None = None,
) -> SpanPlan:
    """Plan the message entries of ``[span_from, span_to)``.

    ``span_events`` are the span's events (others are ignored; a fork's inherited prefix never
    yields items); ``window_events`` are ``[span_from, end of log)`` so a marker past the span's
    end is seen; ``base_ordinal`` is the ordinal of the span's first loggable message
    (:func:`memory.messages.base_ordinal`); ``prefix_ordinals`` maps loggable seqs before the
    span to their ordinals (:func:`memory.messages.message_ordinals` over the prefix) and is
    needed only to retract; ``before`` is the event at ``span_from - 1`` (a leading compaction
    replacement is recognised through it). ``span_to`` defaults to one past the last event.
    """
    lower = max(span_from, inherited_cut)
    events = [e for e in span_events if e.seq >= lower and (span_to is None or e.seq < span_to)]
    upper = span_to if span_to is not None else (events[-1].seq + 1 if events else lower)
    work = withdrawal_work(span_from, upper, window_events, whitelist, prefix_ordinals)
    ledger = build_ledger(events, before) if options.tool_ledger else {}

    items: list[MessageItem] = []
    ordinal = base_ordinal
    scopes = scopes_for(project)
    for event in events:
        if not loggable_once(event):
            continue
        withdrawn = event.seq in work.skip
        cited_by = work.marker_of.get(event.seq) if withdrawn else None
        items.append(
            MessageItem(
                ordinal=ordinal,
                seq=event.seq,
                role=role_of(event),
                name=message_name(session_id, ordinal),
                markdown="" if withdrawn else format_message(event, options, ledger),
                project=project,
                withdrawn=withdrawn,
                scopes=scopes,
                marker_seq=cited_by.seq if cited_by is not None else None,
                marker_kind=cited_by.kind if cited_by is not None else "",
            )
        )
        ordinal += 1

    retract = [
        RetractItem(
            ordinal=index,
            seq=seq,
            name=message_name(session_id, index),
            marker_seq=work.marker_of[seq].seq,
            kind=work.marker_of[seq].kind,
        )
        for seq, index in sorted(work.retract.items())
        if seq >= inherited_cut
    ]
    skip = frozenset(item.ordinal for item in items if item.withdrawn) | frozenset(
        item.ordinal for item in retract
    )
    return SpanPlan(items=items, retract=retract, next_ordinal=ordinal, skip_ordinals=skip)


def session_decisions(
    events: Iterable[Event],
    *,
    session_id: str,
    inherited_cut: int = 0,
    whitelist: Iterable[str] = DEFAULT_WHITELIST,
) -> dict[str, list[dict[str, object]]]:
    """What the worker would write for a whole session log, and why — the ``messages`` and
    ``withdrawals`` keys of ``memory-worker inspect --json``.

    ``messages``: every loggable message after the inherited cut, in order, as ``{ordinal, seq,
    role, name, withdrawn}``. ``withdrawals``: every whitelisted marker after the cut as
    ``{seq, kind, withdrawn_seqs}`` (the cited seqs, ascending).
    """
    own = [event for event in events if event.seq >= inherited_cut]
    by_seq = {event.seq: event for event in own}
    markers = find_markers(own, whitelist)
    withdrawn: set[int] = set()
    for found in markers:
        withdrawn |= found.withdrawn_seqs
    messages: list[dict[str, object]] = []
    for seq, ordinal in message_ordinals(own, inherited_cut).items():
        messages.append(
            {
                "ordinal": ordinal,
                "seq": seq,
                "role": role_of(by_seq[seq]),
                "name": message_name(session_id, ordinal),
                "withdrawn": seq in withdrawn,
            }
        )
    withdrawals: list[dict[str, object]] = [
        {"seq": m.seq, "kind": m.kind, "withdrawn_seqs": sorted(m.withdrawn_seqs)} for m in markers
    ]
    return {"messages": messages, "withdrawals": withdrawals}
