"""Hypatia's protocol types: the Content object, the rows a store returns, the batch-write
records and the error classes.

They are what any Hypatia-compatible store and its clients exchange, so they live with the store
this project ships and import nothing else; ``memory.store.base`` re-exports them for the
adapters and the rest of the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Catalog = Literal["knowledge", "statement"]
Target = Literal["knowledge", "statement", "both"]


@dataclass(frozen=True, slots=True)
class Features:
    """What the connected store offers (probed once per adapter)."""

    no_embed: bool = False  # knowledge/statement create accept "no embedding"
    similar_filters: bool = False  # similar accepts exclude_tags
    delete: bool = False  # knowledge-delete / statement-delete
    update: bool = False  # knowledge-update


@dataclass(frozen=True, slots=True)
class Content:
    """Hypatia's six-field Content object."""

    data: str = ""
    format: str = "markdown"
    tags: tuple[str, ...] = ()
    synonyms: tuple[str, ...] | None = None
    figures: tuple[str, ...] | None = None
    scopes: tuple[str, ...] | None = None  # None = no scopes; ("",) = global

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "data": self.data,
            "tags": list(self.tags),
            "synonyms": None if self.synonyms is None else list(self.synonyms),
            "figures": None if self.figures is None else list(self.figures),
            "scopes": None if self.scopes is None else list(self.scopes),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Content:
        def _opt(key: str) -> tuple[str, ...] | None:
            raw = value.get(key)
            return None if raw is None else tuple(str(x) for x in raw)

        return cls(
            data=str(value.get("data") or ""),
            format=str(value.get("format") or "markdown"),
            tags=tuple(str(x) for x in (value.get("tags") or ())),
            synonyms=_opt("synonyms") if isinstance(value.get("synonyms"), list) else None,
            figures=_opt("figures"),
            scopes=_opt("scopes"),
        )


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    name: str
    content: Content
    created_at: str  # 'YYYY-MM-DD HH:MM:SS.fff' UTC


@dataclass(frozen=True, slots=True)
class StatementRow:
    head: str
    relation: str
    tail: str
    content: Content = field(default_factory=Content)
    created_at: str = ""

    @property
    def triple(self) -> str:
        return csv_triple(self.head, self.relation, self.tail)


@dataclass(frozen=True, slots=True)
class SearchRow:
    """A full-text hit: Hypatia's ``{id, catalog, key, content:<JSON string>, rank}``."""

    id: int
    catalog: Catalog
    key: str
    content: Content
    rank: float


@dataclass(frozen=True, slots=True)
class SimilarRow:
    """A vector hit: ``key`` is the entry name or the CSV triple; lower distance is closer."""

    catalog: Catalog
    key: str
    content: Content
    distance: float


QueryRow = KnowledgeEntry | StatementRow


# --------------------------------------------------------------------------------------- errors


class StoreError(Exception):
    """Base class; ``str(err)`` is one line a user can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class NotFoundError(StoreError):
    """The named entry / statement / shelf does not exist."""


class DuplicateError(StoreError):
    """Create of an existing name (stores report it with a UNIQUE / duplicate-key text)."""


class ModelUnavailableError(StoreError):
    """Semantic search is off: no embedding model / provider configured."""


class TransientStoreError(StoreError):
    """Worth retrying: a timeout, ``database is locked``, a crashed server process."""


class FatalStoreError(StoreError):
    """Not worth retrying: bad arguments, a missing binary, an unknown shelf, a broken reply."""


# ------------------------------------------------------------------------------- batch writes


@dataclass(frozen=True, slots=True)
class EntryWrite:
    """One ``knowledge_create`` of a batch (create if absent; an existing entry is unchanged)."""

    name: str
    data: str
    tags: tuple[str, ...] = ()
    scopes: tuple[str, ...] | None = None
    embed: bool = True


@dataclass(frozen=True, slots=True)
class StatementWrite:
    """One ``statement_create`` of a batch (idempotent: an existing triple is unchanged)."""

    head: str
    relation: str
    tail: str
    data: str = ""
    scopes: tuple[str, ...] | None = None
    embed: bool = True

    @property
    def triple(self) -> str:
        return csv_triple(self.head, self.relation, self.tail)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What a batch created, in write order: entry names and statement triples (CSV keys of
    ``StatementWrite.triple``), spelled as the caller passed them."""

    created_names: tuple[str, ...] = ()
    created_triples: tuple[str, ...] = ()


# -------------------------------------------------------------------------------------- helpers


def _csv_field(value: str) -> str:
    if "," in value or '"' in value or "\n" in value:
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_triple(head: str, relation: str, tail: str) -> str:
    """Hypatia's statement key: the CSV rendering of ``(head, relation, tail)``."""
    return f"{_csv_field(head)},{_csv_field(relation)},{_csv_field(tail)}"
