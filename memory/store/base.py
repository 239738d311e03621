"""The Hypatia seam: one ``MemoryStore`` protocol, typed rows and error classes.

Three adapters implement it (hypatia-lite in-process, the ``hypatia`` CLI over subprocess, and
``hypatia mcp`` over the MCP SDK); the contract test suite is the same for all of them, so an
adapter cannot drift. Shelf is a constructor parameter of each adapter, not a call argument.

The protocol's types (Content, rows, batch records, errors) are defined once in
:mod:`hypatia_lite.protocol`, beside the store that implements them and importing nothing of this
project; they are re-exported here, so the rest of the worker imports them from the seam.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hypatia_lite.protocol import (
    BatchResult,
    Catalog,
    Content,
    DuplicateError,
    EntryWrite,
    FatalStoreError,
    Features,
    KnowledgeEntry,
    ModelUnavailableError,
    NotFoundError,
    QueryRow,
    SearchRow,
    SimilarRow,
    StatementRow,
    StatementWrite,
    StoreError,
    Target,
    TransientStoreError,
    csv_triple,
)

__all__ = [
    "BatchResult",
    "BatchWriter",
    "Catalog",
    "Content",
    "DuplicateError",
    "EntryWrite",
    "FatalStoreError",
    "Features",
    "KnowledgeEntry",
    "MemoryStore",
    "ModelUnavailableError",
    "NotFoundError",
    "QueryRow",
    "SearchRow",
    "SimilarRow",
    "StatementRow",
    "StatementWrite",
    "StoreError",
    "Target",
    "TransientStoreError",
    "csv_triple",
    "write_batch",
]


class StoreConfigError(FatalStoreError):
    """The store cannot be opened as configured — a shelf name or URL, a refused shelf
    registration, a login the server refuses: nothing heals it until the configuration changes,
    so a job that meets it is not retried."""


# ------------------------------------------------------------------------------------- protocol


@runtime_checkable
class MemoryStore(Protocol):
    """What the rest of the code needs from a Hypatia-compatible store."""

    shelf: str

    def features(self) -> Features: ...

    def knowledge_get(self, name: str) -> KnowledgeEntry | None: ...

    def knowledge_create(
        self,
        name: str,
        data: str,
        *,
        tags: Sequence[str] = (),
        scopes: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        """True when created, False when an entry of that name already existed (unchanged)."""
        ...

    def knowledge_update(
        self,
        name: str,
        *,
        data: str | None = None,
        tags: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> bool:
        """True when changed, False when unchanged; NotFoundError when absent."""
        ...

    def knowledge_delete(self, name: str) -> bool:
        """True when removed, False when absent."""
        ...

    def statement_create(
        self,
        head: str,
        relation: str,
        tail: str,
        *,
        data: str = "",
        scopes: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        """True when created, False when the triple already existed (unchanged)."""
        ...

    def statement_delete(self, head: str, relation: str, tail: str) -> bool:
        """True when removed, False when absent."""
        ...

    def search(
        self, query: str, *, catalog: Catalog | None = None, limit: int = 100
    ) -> list[SearchRow]: ...

    def similar(
        self,
        query: str,
        *,
        target: Target = "knowledge",
        limit: int = 10,
        exclude_tags: Sequence[str] = (),
    ) -> list[SimilarRow]: ...

    def query(self, jse: Any) -> list[QueryRow]:
        """Run a JSE expression (a JSON-able value or its JSON text)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class BatchWriter(Protocol):
    """Optional capability: write many entries and statements at once.

    Same outcome as calling ``knowledge_create`` for each entry (in order) and then
    ``statement_create`` for each statement (in order); an adapter that offers it may do the
    whole batch in one transaction (all or nothing). Stores without it go through
    :func:`write_batch`, which loops over the protocol's methods.
    """

    def write_batch(
        self, entries: Sequence[EntryWrite], statements: Sequence[StatementWrite] = ()
    ) -> BatchResult: ...


def write_batch(
    store: MemoryStore,
    entries: Sequence[EntryWrite],
    statements: Sequence[StatementWrite] = (),
) -> BatchResult:
    """Write ``entries`` then ``statements`` (create-if-absent), natively when ``store`` is a
    :class:`BatchWriter`, else one call per item."""
    if not entries and not statements:
        return BatchResult()
    native = getattr(store, "write_batch", None)
    if callable(native):
        result = native(entries, statements)
        if isinstance(result, BatchResult):
            return result
        raise FatalStoreError(f"{type(store).__name__}.write_batch returned {result!r}")
    names = [
        e.name
        for e in entries
        if store.knowledge_create(e.name, e.data, tags=e.tags, scopes=e.scopes, embed=e.embed)
    ]
    triples = [
        s.triple
        for s in statements
        if store.statement_create(
            s.head, s.relation, s.tail, data=s.data, scopes=s.scopes, embed=s.embed
        )
    ]
    return BatchResult(tuple(names), tuple(triples))
