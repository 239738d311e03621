"""Get-before-create against the store, batched: which entries and ``belongTo`` edges exist
already, and settling the owed ``belongTo`` edges of a session's messages (``log_span`` and
``session_node`` both settle them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memory import entries
from memory.constants import REL_BELONG_TO
from memory.entries import LOG_EDGE_POLICY, scopes_for
from memory.store.base import (
    BatchWriter,
    KnowledgeEntry,
    MemoryStore,
    StatementRow,
    StatementWrite,
    write_batch,
)
from worker.jobs.context import JobContext

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


def settle_edges(
    ctx: JobContext,
    store: MemoryStore,
    *,
    project: str,
    link_from: int,
    link_to: int,
    skip: frozenset[int],
) -> int:
    """Re-assert ``msg-<sid>-<i> belongTo session-<sid>`` for ``i`` in ``[link_from, link_to)``
    except ``skip``; returns how many edges are settled. When the node has been deleted
    meanwhile, nothing is linked.

    Get before create, as for entries: a store without native batches (one call, for the CLI
    one process, per edge) is first asked which of the edges exist already, so a span re-done
    after a lost lease or a crash sends only the edges still missing."""
    if link_to <= link_from:
        return 0
    node = entries.session_name(ctx.session_id)
    if store.knowledge_get(node) is None:
        return 0
    heads = [entries.message_name(ctx.session_id, ordinal)
             for ordinal in range(link_from, link_to) if ordinal not in skip]
    present = set() if isinstance(store, BatchWriter) else existing_edges(store, node, heads)
    linked = len(present)
    scopes = scopes_for(project)
    pending: list[StatementWrite] = []
    for head in heads:
        if head in present:
            continue
        pending.append(StatementWrite(
            head,
            REL_BELONG_TO,
            node,
            scopes=scopes,
            embed=LOG_EDGE_POLICY.embed,
        ))
        if len(pending) >= WRITE_BATCH:
            write_batch(store, (), pending)
            linked += len(pending)
            pending.clear()
            ctx.heartbeat()
    if pending:
        write_batch(store, (), pending)
        linked += len(pending)
    return linked


def existing_edges(store: MemoryStore, node: str, heads: list[str]) -> set[str]:
    """Which of ``heads`` already have their ``belongTo`` edge to ``node``: one ``$statement``
    query per 100 heads (the edge form of :func:`existing_names`)."""
    found: set[str] = set()
    for chunk, which in _any_of("head", heads):
        rows = store.query({
            "$statement": [["$eq", "relation", REL_BELONG_TO], ["$eq", "tail", node], which],
            "limit": len(chunk), "offset": 0,
        })
        found.update(row.head for row in rows if isinstance(row, StatementRow))
    return found


__all__ = ["WRITE_BATCH", "existing_edges", "existing_names", "settle_edges"]
