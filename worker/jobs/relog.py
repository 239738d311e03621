"""Re-rendering logged entries under the current content policy (``memory-worker relog``).

:func:`stale_renderings` renders every ``msg-*`` entry of a session that the store holds, and its
``session-<id>`` node, with the same functions ``log_span`` and ``session_node`` write them with
(:func:`memory.span.plan_span`, :func:`memory.entries.session_node_text`: redaction rules
including ``redact_extra_patterns``, caps, date rules) and returns the ones whose text differs
from the store's. :func:`rewrite_in_place` writes such a text under the same name
(``knowledge-update``, or delete + create with the entry's own tags and scopes when the store
has no update). Which summaries and archives must follow is :mod:`worker.jobs.rewrite`'s call.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field

from dsh_memory_worker.memory import entries
from dsh_memory_worker.memory.entries import scopes_for
from dsh_memory_worker.memory.span import SpanOptions, plan_span
from dsh_memory_worker.memory.span_cut import SESSION_NODE_EVENTS
from dsh_memory_worker.memory.store.base import KnowledgeEntry, MemoryStore, NotFoundError
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.storeview import knowledge_like
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog
from dsh_memory_worker.worker.settings import Settings


@dataclass(slots=True)
class Renderings:
    """Entries whose stored text differs from today's rendering: name → (seq, new text)."""

    messages: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: the session node's new text, when it differs
    node: str | None = None


def span_options_for(s: Settings) -> SpanOptions:
    """The content policy of ``msg-*`` entries under settings ``s`` (``log_span`` writes them
    under it, ``relog`` renders them again under it)."""
    return SpanOptions(
        max_assistant_chars=s.max_assistant_chars,
        max_user_chars=s.max_user_chars,
        tool_ledger=s.tool_ledger,
        tz=zoneinfo.ZoneInfo(s.timezone) if s.timezone else None,
        # An event without a time (only normalised fixtures) keeps relative dates as written,
        # so an entry's text never depends on when the worker ran.
        now_ms=None,
    )


def stale_renderings(
    runtime: Runtime, store: MemoryStore, log_: SessionLog, logged_to: int
) -> Renderings:
    """What differs between the store and today's rendering of ``log_`` (messages up to the
    logged watermark ``logged_to``; withdrawn ones are retraction's business, not this)."""
    found = Renderings()
    sid = log_.session_id
    cut = log_.state.inherited_cut
    prefix = entries.message_name(sid, 0)[:-1]
    stored = {e.name: e for e in knowledge_like(store, prefix + "%")}
    if stored and log_.ordinals:
        plan = plan_span(
            log_.events,
            log_.events,
            span_from=cut,
            span_to=logged_to,
            session_id=sid,
            project=log_.project,
            inherited_cut=cut,
            base_ordinal=min(log_.ordinals.values()),
            whitelist=runtime.settings.withdrawal_kinds,
            options=span_options_for(runtime.settings),
            before=log_.event_at(cut - 1) if cut > 0 else None,
        )
        for item in plan.to_write:
            entry = stored.get(item.name)
            if entry is not None and entry.content.data != item.markdown:
                found.messages[item.name] = (item.seq, item.markdown)
    node = store.knowledge_get(entries.session_name(sid))
    text = node_text(runtime, log_)
    if node is not None and text and node.content.data != text:
        found.node = text
    return found


def node_text(runtime: Runtime, log_: SessionLog) -> str:
    """The session node's text today: its first host summary at or after the inherited cut."""
    tz = span_options_for(runtime.settings).tz
    created = log_.state.header.get("created_at")
    now_ms = created if isinstance(created, int) and created > 0 else runtime.now_ms()
    for event in log_.events:
        if event.seq >= log_.state.inherited_cut and event.type in SESSION_NODE_EVENTS:
            text = entries.session_node_text(event, tz, now_ms)
            if text:
                return text
    return ""


def rewrite_in_place(
    store: MemoryStore,
    name: str,
    text: str,
    project: str,
    tags: tuple[str, ...] | None = None,
    embed: bool = False,
) -> bool:
    """Give ``name`` the text ``text`` (True when it changed); absent entries stay absent."""
    found: KnowledgeEntry | None = store.knowledge_get(name)
    if found is None or found.content.data == text:
        return False
    if store.features().update:
        try:
            return store.knowledge_update(name, data=text)
        except NotFoundError:
            return False
    store.knowledge_delete(name)
    store.knowledge_create(
        name,
        text,
        tags=tags if tags is not None else found.content.tags,
        scopes=found.content.scopes or scopes_for(project),
        embed=embed,
    )
    return True


__all__ = ["Renderings", "node_text", "rewrite_in_place", "stale_renderings"]
