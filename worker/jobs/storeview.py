"""Reading the derived-memory layout back out of a store: span summaries of a session, the
``summary`` / ``derivedFrom`` edges into and out of an entry, archives above a summary.

Names follow ``memory.entries``: ``sum-<sid>-<from>-<to>``, ``sum<L>-<digest12>``,
``wu-<slug>-<hash8>``. Every query pages through the whole result (JSE's default limit is 100).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.entries import message_name, span_summary_name
from dsh_memory_worker.memory.store.base import KnowledgeEntry, MemoryStore, StatementRow

_PAGE = 500
_ARCHIVE = re.compile(r"^sum(\d+)-[0-9a-f]{12}$")


def query_all(store: MemoryStore, top: str, conditions: list[Any]) -> list[Any]:
    """Every row of ``{top: conditions}``, paged."""
    rows: list[Any] = []
    offset = 0
    while True:
        page = store.query({top: conditions, "limit": _PAGE, "offset": offset})
        rows.extend(page)
        if len(page) < _PAGE:
            return rows
        offset += _PAGE


def knowledge_like(store: MemoryStore, pattern: str) -> list[KnowledgeEntry]:
    found = query_all(store, "$knowledge", [["$like", "name", pattern]])
    return [row for row in found if isinstance(row, KnowledgeEntry)]


def edges(
    store: MemoryStore,
    relation: str | None = None,
    *,
    head: str | None = None,
    tail: str | None = None,
) -> list[StatementRow]:
    """Statements with the given relation / head / tail (at least one of head, tail)."""
    conditions: list[Any] = []
    if relation is not None:
        conditions.append(["$eq", "relation", relation])
    if head is not None:
        conditions.append(["$eq", "head", head])
    if tail is not None:
        conditions.append(["$eq", "tail", tail])
    found = query_all(store, "$statement", conditions)
    return [row for row in found if isinstance(row, StatementRow)]


@dataclass(frozen=True, slots=True)
class SpanSummaryRef:
    name: str
    from_seq: int
    to_seq: int


def parse_span_summary(name: str, session_id: str) -> SpanSummaryRef | None:
    """``sum-<session_id>-<from>-<to>`` → its range; ``None`` for any other name."""
    head, _, rest = name.rpartition("-")
    prefix, _, start = head.rpartition("-")
    if not (rest.isdigit() and start.isdigit()):
        return None
    ref = SpanSummaryRef(name, int(start), int(rest))
    if span_summary_name(session_id, ref.from_seq, ref.to_seq) != name:
        return None
    return ref if prefix == f"sum-{session_id}" else None


def span_summaries(store: MemoryStore, session_id: str) -> list[SpanSummaryRef]:
    """The session's span summaries in the store, by range."""
    prefix = span_summary_name(session_id, 0, 0)[: -len("0-0")]
    refs = []
    for entry in knowledge_like(store, prefix + "%"):  # LIKE may over-match; parse filters
        ref = parse_span_summary(entry.name, session_id)
        if ref is not None:
            refs.append(ref)
    return sorted(refs, key=lambda r: (r.from_seq, r.to_seq))


def message_entries(store: MemoryStore, session_id: str) -> list[str]:
    """Names of the session's ``msg-<sid>-<N>`` entries in the store."""
    prefix = message_name(session_id, 0)[:-1]
    names = []
    for entry in knowledge_like(store, prefix + "%"):
        tail = entry.name[len(prefix) :]
        if tail.isdigit() and message_name(session_id, int(tail)) == entry.name:
            names.append(entry.name)
    return names


def archive_level(name: str) -> int | None:
    """The tier of an archive name ``sum<L>-<digest12>``; ``None`` for anything else."""
    found = _ARCHIVE.match(name)
    return int(found.group(1)) if found else None


def archives_above(store: MemoryStore, name: str) -> list[str]:
    """Archives with a ``summary`` edge to ``name``."""
    return sorted(
        row.head
        for row in edges(store, C.REL_SUMMARY, tail=name)
        if archive_level(row.head) is not None
    )


def summary_members(store: MemoryStore, name: str) -> list[str]:
    """The tails of ``name``'s ``summary`` edges (messages, or lower-tier summaries)."""
    return sorted(row.tail for row in edges(store, C.REL_SUMMARY, head=name))


def derived_units(store: MemoryStore, summary: str) -> list[str]:
    """Work units with a ``derivedFrom`` edge to ``summary``."""
    return sorted(row.head for row in edges(store, C.REL_DERIVED_FROM, tail=summary))


def unit_sources(store: MemoryStore, unit: str) -> list[str]:
    return sorted(row.tail for row in edges(store, C.REL_DERIVED_FROM, head=unit))
