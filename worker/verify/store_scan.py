"""Searching the store through its adapter (any transport): every entry and statement read back
with ``query``, and the full-text index asked with ``search`` for every phrase.

A phrase found in an entry or statement is a leak only when the entry's own legitimate sources
do not explain it (:mod:`worker.verify.provenance`); the phrases some entry legitimately holds are
collected (``held``) so the byte scans leave them out.

Besides text, names are checked: a withdrawn message's ``msg-*`` entry, any entry of a forgotten
session (``msg-<sid>-*``, ``sum-<sid>-*``, ``session-<sid>``) and any statement naming one of
them is a leak even when its text is too short to have fragments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain

from dsh_memory_worker.memory.store.base import (
    Catalog,
    Content,
    KnowledgeEntry,
    MemoryStore,
    StatementRow,
)
from dsh_memory_worker.worker.jobs.storeview import parse_span_summary, query_all
from dsh_memory_worker.worker.verify.matcher import Leak, TextMatcher
from dsh_memory_worker.worker.verify.provenance import Provenance
from dsh_memory_worker.worker.verify.sources import FORGOTTEN, Gone, Sources, forgotten_names

_CATALOGS: tuple[Catalog, ...] = ("knowledge", "statement")
Tick = Callable[[int], None]


@dataclass(slots=True)
class StoreScan:
    leaks: list[Leak] = field(default_factory=list)
    entries: int = 0
    statements: int = 0
    searches: int = 0
    #: (session, message) → keys whose text holds that message's fragments
    leaked_keys: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: phrases some entry or statement holds and its own sources explain
    held: set[str] = field(default_factory=set)
    _seen: set[tuple[str, str, str, str]] = field(default_factory=set)


def content_text(key: str, content: Content) -> str:
    """Everything of an entry or statement a reader can see: key, data, tags, synonyms."""
    return "\n".join([key, content.data, *content.tags, *(content.synonyms or ())])


class _Names:
    """Which entry names must not exist, and whose they are."""

    def __init__(self, sources: Sources) -> None:
        self.exact: dict[str, tuple[str, str, int | None, str]] = {}
        for message in sources.messages:
            if message.by_name:
                self.exact[message.name] = (
                    message.session_id,
                    message.name,
                    message.seq,
                    message.why,
                )
        self.forgotten = list(sources.forgotten)
        for sid in sources.forgotten:
            self.exact.setdefault(forgotten_names(sid)[2], (sid, "", None, FORGOTTEN))

    def owner(self, name: str) -> tuple[str, str, int | None, str] | None:
        found = self.exact.get(name)
        if found is not None:
            return found
        if name.startswith(("msg-", "sum-")):
            for sid in self.forgotten:
                if _of_session(name, sid):
                    return (sid, "", None, FORGOTTEN)
        return None


def _of_session(name: str, session_id: str) -> bool:
    """Whether ``name`` is a message entry or a span summary of ``session_id`` (a longer
    session id that merely starts with it does not count)."""
    messages = forgotten_names(session_id)[0][:-1]
    if name.startswith(messages) and name[len(messages) :].isdigit():
        return True
    return parse_span_summary(name, session_id) is not None


def scan_store(store: MemoryStore, sources: Sources, tick: Tick | None = None) -> StoreScan:
    """Search ``store`` for every message of ``sources`` (see the module docstring)."""
    scan = StoreScan()
    matcher = TextMatcher(sources.messages)
    names = _Names(sources)
    statements = _statements(store, scan)
    provenance = Provenance(sources.kept, ((r.head, r.relation, r.tail) for r in statements))
    ends_of = {r.triple: (r.head, r.tail) for r in statements}

    def text_leaks(key: str, content: Content, where: str, via: str) -> None:
        ends = ends_of.get(key) if where.startswith("statement") else None
        for message, phrase in matcher.find(content_text(key, content)):
            unexplained = provenance.why_not(key, phrase, ends)
            if unexplained is None:
                scan.held.add(phrase)
                continue
            _add(
                scan,
                Leak(
                    where,
                    via,
                    message.session_id,
                    message.name,
                    message.seq,
                    message.why,
                    phrase,
                    unexplained,
                ),
            )
            scan.leaked_keys.setdefault((message.session_id, message.name), set()).add(key)

    rows: Iterator[KnowledgeEntry | StatementRow] = chain(_entries(store, scan), statements)
    for row in rows:
        key, ends = (
            (row.name, (row.name,))
            if isinstance(row, KnowledgeEntry)
            else (row.triple, (row.head, row.tail))
        )
        where = f"{'entry' if isinstance(row, KnowledgeEntry) else 'statement'} {key}"
        for end in ends:
            owner = names.owner(end)
            if owner is not None:
                sid, name, seq, why = owner
                _add(scan, Leak(where, "query", sid, name, seq, why, ""))
        text_leaks(key, row.content, where, "query")
        if tick is not None:
            tick(1)
    for gone in sources.messages:
        for phrase in gone.fragments.phrases:
            for catalog in _CATALOGS:
                scan.searches += 1
                for hit in store.search(phrase, catalog=catalog, limit=100):
                    where = ("entry " if catalog == "knowledge" else "statement ") + hit.key
                    text_leaks(hit.key, hit.content, where, "search")
    return scan


def _entries(store: MemoryStore, scan: StoreScan) -> Iterator[KnowledgeEntry]:
    """Every entry of the store, streamed (counted in ``scan``)."""
    for row in query_all(store, "$knowledge", [["$like", "name", "%"]]):
        if isinstance(row, KnowledgeEntry):
            scan.entries += 1
            yield row


def _statements(store: MemoryStore, scan: StoreScan) -> list[StatementRow]:
    """Every statement of the store (counted in ``scan``): read first, since the edges are how
    archives and work units name their sources."""
    rows = [
        row
        for row in query_all(store, "$statement", [["$like", "head", "%"]])
        if isinstance(row, StatementRow)
    ]
    scan.statements = len(rows)
    return rows


def distinctive_terms(store: MemoryStore, message: Gone, leaked: Iterable[str]) -> list[str]:
    """The message's byte-scan terms that no live entry or statement holds (except the ones
    already found leaking its text): a term that kept text also uses proves nothing in bytes."""
    allowed = set(leaked)
    kept: list[str] = []
    for group in message.fragments.terms:
        rows = [
            hit
            for catalog in _CATALOGS
            for hit in store.search(group[0], catalog=catalog, limit=100)
        ]
        if all(hit.key in allowed for hit in rows):
            kept += group
    return kept


def _add(scan: StoreScan, leak: Leak) -> None:
    key = (leak.where, leak.session_id, leak.message, leak.fragment)
    if key not in scan._seen:
        scan._seen.add(key)
        scan.leaks.append(leak)
