"""Get-before-create against the store, batched: which entries and ``belongTo`` edges exist
already, and settling the owed ``belongTo`` edges of a session's messages (``log_span`` and
``session_node`` both settle them; ``session_node`` creates its node together with them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dsh_memory_worker.memory import entries
from dsh_memory_worker.memory.constants import REL_BELONG_TO
from dsh_memory_worker.memory.entries import LOG_EDGE_POLICY, scopes_for
from dsh_memory_worker.memory.store.base import (
    BatchWriter,
    EntryWrite,
    KnowledgeEntry,
    MemoryStore,
    StatementRow,
    StatementWrite,
    write_batch,
)

_GET_BATCH = 100
#: Entries (or edges) per store write batch: one transaction each on hypatia-lite.
WRITE_BATCH = 500


def existing_names(store: MemoryStore, names: list[str]) -> set[str]:
    """Which of ``names`` already exist — the "get" of get-before-create, batched: one
    ``{"$knowledge": [["$or", ["$eq","name",A], …]]}`` query per 100 names (the reference's own
    lookup form) instead of one ``knowledge-get`` per entry."""
    found: set[str] = set()
    for chunk, which in _any_of("name", names):
        rows = store.query({"$knowledge": [which], "limit": len(chunk), "offset": 0})
        found.update(row.name for row in rows if isinstance(row, KnowledgeEntry))
    return found


def _any_of(field: str, values: list[str]) -> Iterator[tuple[list[str], list[Any]]]:
    """``values`` in chunks of 100, each with its JSE condition ``field`` equals one of them."""
    for i in range(0, len(values), _GET_BATCH):
        chunk = values[i : i + _GET_BATCH]
        which: list[Any] = ["$or", *(["$eq", field, value] for value in chunk)]
        yield chunk, which if len(chunk) > 1 else ["$eq", field, chunk[0]]


@dataclass(frozen=True, slots=True)
class OwedEdges:
    """The ``msg-<sid>-<i> belongTo session-<sid>`` edges a session owes for ``i`` in
    ``[link_from, link_to)`` except ``skip`` (messages withdrawn or never written)."""

    session_id: str
    project: str
    link_from: int
    link_to: int
    skip: frozenset[int] = frozenset()

    @property
    def node(self) -> str:
        return entries.session_name(self.session_id)

    def heads(self) -> list[str]:
        return [
            entries.message_name(self.session_id, ordinal)
            for ordinal in range(self.link_from, self.link_to)
            if ordinal not in self.skip
        ]

    def edges(self, heads: list[str], present: set[str]) -> Iterator[StatementWrite]:
        """The edges of ``heads`` not in ``present``."""
        scopes = scopes_for(self.project)
        for head in heads:
            if head not in present:
                yield StatementWrite(
                    head, REL_BELONG_TO, self.node, scopes=scopes, embed=LOG_EDGE_POLICY.embed
                )


def settle_edges(store: MemoryStore, owed: OwedEdges, heartbeat: Callable[[], None]) -> int:
    """Re-assert the ``owed`` edges; returns how many edges are settled. When the node has
    been deleted meanwhile, nothing is linked. ``heartbeat`` runs after each write batch.

    Get before create, as for entries: a store without native batches (one call, for the CLI
    one process, per edge) is first asked which of the edges exist already, so a span re-done
    after a lost lease or a crash sends only the edges still missing."""
    heads = _owed_heads(store, owed)
    if heads is None:
        return 0
    present = set() if isinstance(store, BatchWriter) else existing_edges(store, owed.node, heads)
    return len(present) + _write_edges(store, owed.edges(heads, present), heartbeat)[0]


def span_edges(store: MemoryStore, owed: OwedEdges) -> list[StatementWrite] | None:
    """The edges :func:`settle_edges` would write for ``owed``, for the caller to write in the
    same store transaction as the span's entries (``log_span``); an empty list when none is
    owed or the node is gone. ``None`` for a store without native batches: the caller settles
    them with :func:`settle_edges` (get before create)."""
    if not isinstance(store, BatchWriter):
        return None
    heads = _owed_heads(store, owed)
    return [] if heads is None else list(owed.edges(heads, set()))


def create_node_with_edges(
    store: MemoryStore, node: EntryWrite, owed: OwedEdges, heartbeat: Callable[[], None]
) -> tuple[bool, int]:
    """Create the session node ``node`` (unless it exists) and settle its ``owed`` edges (as
    :func:`settle_edges`); returns whether the node was created and how many edges are settled.

    A natively batched store writes the node in the same transaction as the first batch of
    edges: one commit (and one WAL sync) fewer per session, and no node probe in between, as
    the node cannot vanish inside that transaction. Any other store creates the node first,
    then settles the edges with :func:`settle_edges`."""
    if not isinstance(store, BatchWriter):
        created = store.knowledge_create(
            node.name, node.data, tags=node.tags, scopes=node.scopes, embed=node.embed
        )
        return created, settle_edges(store, owed, heartbeat)
    edges = owed.edges(owed.heads(), set())
    linked, created = _write_edges(store, edges, heartbeat, node)
    return created, linked


def _owed_heads(store: MemoryStore, owed: OwedEdges) -> list[str] | None:
    """The messages that owe the session node an edge; ``None`` when the range is empty or the
    node is gone."""
    if owed.link_to <= owed.link_from:
        return None
    if store.knowledge_get(owed.node) is None:
        return None
    return owed.heads()


def _write_edges(
    store: MemoryStore,
    edges: Iterator[StatementWrite],
    heartbeat: Callable[[], None],
    node: EntryWrite | None = None,
) -> tuple[int, bool]:
    """Write ``edges`` in batches of :data:`WRITE_BATCH`, ``node`` (if given) with the first
    batch even when there are no edges; returns how many edges were written and whether the
    batch created ``node``."""
    linked, created = 0, False
    pending: list[StatementWrite] = []
    for edge in edges:
        pending.append(edge)
        if len(pending) >= WRITE_BATCH:
            created |= _flush(store, node, pending)
            linked += len(pending)
            node = None
            pending.clear()
            heartbeat()
    if pending or node is not None:
        created |= _flush(store, node, pending)
        linked += len(pending)
    return linked, created


def _flush(store: MemoryStore, node: EntryWrite | None, pending: list[StatementWrite]) -> bool:
    """One store write batch (one transaction on a batched store): ``node`` then ``pending``."""
    return bool(write_batch(store, () if node is None else (node,), pending).created_names)


def existing_edges(store: MemoryStore, node: str, heads: list[str]) -> set[str]:
    """Which of ``heads`` already have their ``belongTo`` edge to ``node``: one ``$statement``
    query per 100 heads (the edge form of :func:`existing_names`)."""
    found: set[str] = set()
    for chunk, which in _any_of("head", heads):
        rows = store.query(
            {
                "$statement": [["$eq", "relation", REL_BELONG_TO], ["$eq", "tail", node], which],
                "limit": len(chunk),
                "offset": 0,
            }
        )
        found.update(row.head for row in rows if isinstance(row, StatementRow))
    return found


__all__ = [
    "WRITE_BATCH",
    "OwedEdges",
    "create_node_with_edges",
    "existing_edges",
    "existing_names",
    "settle_edges",
    "span_edges",
]
