"""A session as memory sees it: each message of its log, in order, with what became of it.

Two reads. The *survey* of the whole log (its message ordinals, every withdrawal marker, the
session node's title choice) is decided once per log state — the decisions are
:mod:`memory.withdrawal`'s and :mod:`memory.titles`', as every job makes them — and kept for the
next pages (a few sessions, keyed by generation and durable end, so a grown or replaced log is
surveyed again). A *page* of 100 messages is then decoded alone: the reader starts at the
checkpoint index's entry at or before the page's first seq (:func:`memory.dsh.reader.read_range`),
so a page of a 10,000-message session costs what a page of a 100-message one does.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.dsh.events import Event
from dsh_memory_worker.memory.dsh.reader import read_range
from dsh_memory_worker.memory.entries import message_name
from dsh_memory_worker.memory.messages import (
    is_loggable,
    message_blocks,
    message_ordinals,
    role_of,
    source_kind,
)
from dsh_memory_worker.memory.redaction.engine import find_secrets
from dsh_memory_worker.memory.span import message_body
from dsh_memory_worker.memory.titles import CHECKPOINT_KIND, TitleChoice, survey_titles
from dsh_memory_worker.memory.withdrawal import find_markers
from dsh_memory_worker.worker.jobs.log_span import span_options_for
from dsh_memory_worker.worker.jobs.logread import END, checkpoint_index, log_source, read_window
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.state.browse import BrowseRepo
from dsh_memory_worker.worker.state.sessions import SessionState

PAGE = 100
_KEPT_SURVEYS = 8


@dataclass(frozen=True, slots=True)
class MarkerView:
    seq: int
    kind: str
    withdrawn: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Survey:
    """What the whole log decides (no message text is kept)."""

    key: tuple[int, int, int]
    #: the loggable seqs after the inherited cut, in order: index = entry ordinal
    seqs: list[int]
    #: withdrawn seq → (marker seq, marker kind) of the first marker citing it
    withdrawn: dict[int, tuple[int, str]]
    markers: dict[int, MarkerView]
    title: TitleChoice
    problems: list[str]

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.seqs) // PAGE))


@dataclass(slots=True)
class MessageView:
    seq: int
    role: str
    at: str
    text: str
    #: stored | pending | withdrawn | marker | skipped | forgotten
    fate: str
    why: str = ""
    name: str | None = None
    ordinal: int | None = None
    marker_seq: int | None = None
    marker_kind: str = ""
    retraction: str = ""
    redactions: list[str] = field(default_factory=list)

    @property
    def checkpoint(self) -> bool:
        """A compaction checkpoint: the context a compaction put back (never kept)."""
        return self.role == CHECKPOINT_KIND


class Surveys:
    """The last few surveys, by session (used from the console's one worker thread)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, Survey] = OrderedDict()

    def get(self, runtime: Runtime, state: SessionState) -> Survey:
        key = (state.generation, state.durable_end_seq, state.scan_offset)
        found = self._kept.get(state.session_id)
        if found is not None and found.key == key:
            self._kept.move_to_end(state.session_id)
            return found
        made = survey(runtime, state, key)
        self._kept[state.session_id] = made
        while len(self._kept) > _KEPT_SURVEYS:
            self._kept.popitem(last=False)
        return made


def survey(runtime: Runtime, state: SessionState, key: tuple[int, int, int]) -> Survey:
    """Read the whole log once and decide its ordinals, withdrawals and title."""
    kinds = runtime.settings.withdrawal_kinds
    window = read_window(state, 0, segments=runtime.segments)
    cut = state.inherited_cut
    ordinals = message_ordinals(window.events, cut)
    markers = [m for m in find_markers(window.events, kinds) if m.seq >= cut]
    withdrawn: dict[int, tuple[int, str]] = {}
    for marker in markers:
        for seq in marker.withdrawn_seqs:
            withdrawn.setdefault(seq, (marker.seq, marker.kind))
    created = state.header.get("created_at")
    title = survey_titles(
        window.events,
        kinds,
        cut=cut,
        tz=runtime.timezone(),
        now_ms=created if isinstance(created, int) and created > 0 else 0,
    )
    return Survey(
        key=key,
        seqs=sorted(ordinals, key=ordinals.__getitem__),
        withdrawn=withdrawn,
        markers={
            m.seq: MarkerView(m.seq, m.kind, tuple(sorted(m.withdrawn_seqs))) for m in markers
        },
        title=title,
        problems=[str(p) for p in window.problems],
    )


def page_range(found: Survey, state: SessionState, page: int) -> tuple[int, int]:
    """``[from_seq, to_seq)`` of page ``page`` (0-based): its 100 entry ordinals, with the events
    between them (the first page also from the inherited cut, the last to the durable end)."""
    first = page * PAGE
    start = state.inherited_cut if page == 0 or first >= len(found.seqs) else found.seqs[first]
    after = first + PAGE
    return start, found.seqs[after] if after < len(found.seqs) else END


def page_events(runtime: Runtime, state: SessionState, start: int, end: int) -> list[Event]:
    """The events of ``[start, end)``, decoded from the checkpoint at or before ``start``."""
    result = read_range(log_source(state, runtime.segments), start, end, checkpoint_index(state))
    return result.events


def _when(event: Event, tz: dt.tzinfo | None) -> str:
    if event.time is None:
        return ""
    return dt.datetime.fromtimestamp(event.time / 1000, tz or dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _rules(event: Event, body: str) -> list[str]:
    """Which redaction rules fired on the message (never what they matched)."""
    labels = sorted(
        {f.label or f.rule_id for f in find_secrets(flatten_blocks(message_blocks(event)))}
    )
    if "[REDACTED:custom]" in body:
        labels.append("operator pattern (redact_extra_patterns)")
    return labels


def messages(
    runtime: Runtime,
    state: SessionState,
    found: Survey,
    events: list[Event],
    logged_seq: int,
    browse: BrowseRepo,
) -> list[MessageView]:
    """Each message event of the page with its fate (see :class:`MessageView`)."""
    options = span_options_for(runtime.settings)
    tz = runtime.timezone()
    ordinal_of = {seq: i for i, seq in enumerate(found.seqs)}
    views: list[MessageView] = []
    for event in events:
        if event.type not in ("user/message", "assistant/message") or event.message is None:
            continue
        # A forgotten session's text stays off the page: its log is DSH's, but the user asked
        # memory to forget it.
        body = "" if state.forgotten else message_body(event, options)
        view = MessageView(
            event.seq,
            role_of(event) if is_loggable(event) else source_kind(event) or event.type,
            _when(event, tz),
            body,
            "skipped",
            redactions=[] if state.forgotten else _rules(event, body),
        )
        views.append(view)
        marker = found.markers.get(event.seq)
        if event.seq < state.inherited_cut:
            view.why = "inherited from the parent session (a fork): logged there, not here"
        elif marker is not None:
            view.fate = "marker"
            view.why = f"withdrawal marker ({marker.kind}) withdrawing seqs " + ", ".join(
                str(s) for s in marker.withdrawn
            )
        elif event.seq not in ordinal_of:
            view.why = _skip_reason(event)
        else:
            ordinal = ordinal_of[event.seq]
            view.ordinal = ordinal
            view.name = message_name(state.session_id, ordinal)
            view.fate = _fate(state, found, event.seq, logged_seq)
            cause = found.withdrawn.get(event.seq)
            if cause is not None:
                view.marker_seq, view.marker_kind = cause
    _retractions(state, views, browse, tz)
    return views


def _fate(state: SessionState, found: Survey, seq: int, logged_seq: int) -> str:
    if state.forgotten:
        return "forgotten"
    if seq in found.withdrawn:
        return "withdrawn"
    return "stored" if seq < logged_seq else "pending"


def _skip_reason(event: Event) -> str:
    if event.type == "assistant/message":
        return "skipped by policy: no text (tool calls or reasoning only)"
    kind = source_kind(event)
    return (
        f"skipped by policy: not a human prompt (source kind {kind!r}); only human prompts "
        "and assistant replies are logged"
    )


def _retractions(
    state: SessionState, views: list[MessageView], browse: BrowseRepo, tz: dt.tzinfo | None
) -> None:
    """Say for each withdrawn message whether it had been written, and when it was retracted."""
    withdrawn = [v for v in views if v.fate == "withdrawn" and v.name is not None]
    found = browse.retractions_of(state.session_id, [v.name for v in withdrawn if v.name])
    for view in withdrawn:
        record = found.get(view.name or "")
        if record is None:
            view.retraction = "never written (withdrawn before its span was logged)"
        else:
            at = record.at.astimezone(tz or dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            view.retraction = f"{record.outcome} at {at}" + (
                f" ({record.detail})" if record.detail else ""
            )


def node_view(found: Survey, forgotten: bool = False) -> dict[str, Any]:
    """The session node's title source and the host summaries it skipped, with why (no text of
    a forgotten session)."""
    chosen = None if forgotten else found.title.chosen
    return {
        "chosen": None
        if chosen is None
        else {"seq": chosen.seq, "type": chosen.type, "source": chosen.source, "text": chosen.text},
        "skipped": []
        if forgotten
        else [
            {"seq": s.summary.seq, "type": s.summary.type, "why": s.describe()}
            for s in found.title.skipped
        ],
    }
