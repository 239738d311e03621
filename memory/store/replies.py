"""Hypatia replies and arguments, the same for every transport: the row parsers (knowledge,
query, search and similar rows), the tag / scope normalisers, the ``--data`` fitting, the error
classification of Hypatia's texts and the tool-schema feature probe.

Shared by the CLI adapter (:mod:`memory.store.cli`) and the MCP adapter (:mod:`memory.store.mcp`),
so both transports turn the same server reply into the same rows and errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dsh_memory_worker.memory.store.base import (
    Catalog,
    Content,
    DuplicateError,
    FatalStoreError,
    Features,
    KnowledgeEntry,
    ModelUnavailableError,
    NotFoundError,
    QueryRow,
    SearchRow,
    SimilarRow,
    StatementRow,
    StoreError,
    Target,
    TransientStoreError,
)

MAX_DATA_BYTES = 96 * 1024

_DUPLICATE = re.compile(r"UNIQUE constraint failed:|duplicate key", re.IGNORECASE)
_MODEL_UNAVAILABLE = re.compile(r"model unavailable|no embedding provider", re.IGNORECASE)
_TRANSIENT = re.compile(r"database is locked|database is busy", re.IGNORECASE)
_NOT_FOUND = re.compile(r"(^|Error: )not found:", re.MULTILINE)


def well_formed(text: str) -> str:
    """Replace lone surrogates with U+FFFD (what JavaScript's ``toWellFormed`` does)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def fit_data(data: str, limit: int = MAX_DATA_BYTES) -> str:
    """Cut ``data`` to ``limit`` UTF-8 bytes on a character boundary, with a marker."""
    raw = data.encode("utf-8")
    if len(raw) <= limit:
        return data
    kept = raw[:limit].decode("utf-8", "ignore")
    dropped = len(raw) - len(kept.encode("utf-8"))
    return f"{kept}\n\n[...truncated {dropped} bytes to fit the command line]"


def _check_item(kind: str, item: str) -> str:
    if "," in item:
        raise FatalStoreError(f"a {kind} may not contain a comma: {item!r}")
    return well_formed(item.strip())


def normalize_tags(tags: Sequence[str]) -> list[str]:
    """Tags the way Hypatia stores them from a CLI list: trimmed, blanks dropped."""
    return [t for t in (_check_item("tag", x) for x in tags) if t]


def normalize_scopes(scopes: Sequence[str] | None) -> list[str] | None:
    """Scopes as Hypatia stores them: trimmed, de-duplicated, global ``""`` last; [] → None."""
    if scopes is None:
        return None
    named: list[str] = []
    has_global = False
    for raw in scopes:
        item = _check_item("scope", raw)
        if not item:
            has_global = True
        elif item not in named:
            named.append(item)
    result = named + ([""] if has_global else [])
    return result or None


def scopes_arg(scopes: list[str]) -> str:
    """The ``--scopes`` value for normalised scopes (a trailing comma adds the global scope)."""
    named = [s for s in scopes if s]
    return ",".join(named) + ("," if "" in scopes else "")


def create_args(
    data: str,
    *,
    tags: Sequence[str] = (),
    scopes: Sequence[str] | None = None,
    embed: bool = True,
    features: Callable[[], Features],
) -> dict[str, Any]:
    """A create's optional arguments, normalised: ``data``, ``tags`` and ``scopes`` when not
    empty, ``embed=False`` when not embedding and the store supports it (``features`` is asked
    only then, after the lists are checked)."""
    args: dict[str, Any] = {}
    if data:
        args["data"] = well_formed(data)
    if tag_list := normalize_tags(tags):
        args["tags"] = tag_list
    if scope_list := normalize_scopes(scopes):
        args["scopes"] = scope_list
    if not embed and features().no_embed:
        args["embed"] = False
    return args


def update_args(
    data: str | None, tags: Sequence[str] | None, scopes: Sequence[str] | None
) -> dict[str, Any]:
    """A ``knowledge_update``'s arguments, normalised: each one given (even empty) is set."""
    if data is None and tags is None and scopes is None:
        raise FatalStoreError("knowledge_update needs at least one of data, tags, scopes")
    args: dict[str, Any] = {}
    if data is not None:
        args["data"] = well_formed(data)
    if tags is not None:
        args["tags"] = normalize_tags(tags)
    if scopes is not None:
        args["scopes"] = normalize_scopes(scopes) or []
    return args


def _content_of(value: Any) -> Content:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise FatalStoreError(f"unparseable content in a row: {exc}") from exc
    if not isinstance(value, Mapping):
        raise FatalStoreError(f"a row's content is not an object: {str(value)[:200]}")
    return Content.from_json(value)


def _rows_of(payload: Any, what: str) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping):
        payload = payload.get("rows", [])
    if not isinstance(payload, list) or not all(isinstance(r, Mapping) for r in payload):
        raise FatalStoreError(f"unparseable {what} output: expected a list of rows")
    return list(payload)


def parse_entry(payload: Any) -> KnowledgeEntry:
    if not isinstance(payload, Mapping) or "name" not in payload:
        raise FatalStoreError("unparseable knowledge-get output: no name")
    return KnowledgeEntry(
        name=str(payload["name"]),
        content=_content_of(payload.get("content") or {}),
        created_at=str(payload.get("created_at") or ""),
    )


def parse_query_rows(payload: Any) -> list[QueryRow]:
    rows: list[QueryRow] = []
    for row in _rows_of(payload, "query"):
        if "name" in row:
            rows.append(parse_entry(row))
            continue
        head = row.get("head", row.get("subject"))
        relation = row.get("relation", row.get("predicate"))
        tail = row.get("tail", row.get("object"))
        if head is None or relation is None or tail is None:
            raise FatalStoreError("unparseable query output: a row is not knowledge or statement")
        rows.append(
            StatementRow(
                head=str(head),
                relation=str(relation),
                tail=str(tail),
                content=_content_of(row.get("content") or {}),
                created_at=str(row.get("created_at") or ""),
            )
        )
    return rows


def _catalog(value: Any, default: Catalog) -> Catalog:
    if value == "statement":
        return "statement"
    if value == "knowledge":
        return "knowledge"
    return default


def parse_search_rows(payload: Any) -> list[SearchRow]:
    return [
        SearchRow(
            id=int(row.get("id") or 0),
            catalog=_catalog(row.get("catalog"), "knowledge"),
            key=str(row.get("key", "")),
            content=_content_of(row.get("content") or {}),
            rank=float(row.get("rank") or 0.0),
        )
        for row in _rows_of(payload, "search")
    ]


def parse_similar_rows(payload: Any, target: Target) -> list[SimilarRow]:
    rows = []
    for row in _rows_of(payload, "similar"):
        default: Catalog = "statement" if target == "statement" or "triple" in row else "knowledge"
        key = row.get("name", row.get("triple", row.get("key", "")))
        rows.append(
            SimilarRow(
                catalog=_catalog(row.get("catalog"), default),
                key=str(key),
                content=_content_of(row.get("content") or {}),
                distance=float(row.get("distance") or 0.0),
            )
        )
    return rows


def classify_error(text: str, *, context: str) -> StoreError:
    """Map a Hypatia error text to the store error class (one line, context first)."""
    first = text.strip()[:500]
    message = f"{context}: {first}" if first else context
    if _DUPLICATE.search(first):
        return DuplicateError(message)
    if _MODEL_UNAVAILABLE.search(first):
        return ModelUnavailableError(message)
    if _TRANSIENT.search(first):
        return TransientStoreError(message)
    if _NOT_FOUND.search(first):
        return NotFoundError(message)
    return FatalStoreError(message)


def jse_text(jse: Any) -> str:
    return jse if isinstance(jse, str) else json.dumps(jse, ensure_ascii=False)


def filter_excluded(rows: list[SimilarRow], exclude_tags: Sequence[str]) -> list[SimilarRow]:
    excluded = set(exclude_tags)
    return [r for r in rows if not excluded.intersection(r.content.tags)]


def payload_value(payload: Any, key: str, default: Any) -> Any:
    """``payload[key]`` when the payload is an object, else ``default``."""
    return payload.get(key, default) if isinstance(payload, Mapping) else default


def triple_args(head: str, relation: str, tail: str) -> dict[str, Any]:
    """A statement's key as tool arguments (text made well-formed)."""
    return {"head": well_formed(head), "relation": well_formed(relation), "tail": well_formed(tail)}


def _properties(tools: Mapping[str, Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    props = tools.get(name, {}).get("properties")
    return props if isinstance(props, Mapping) else {}


def features_from_tools(tools: Mapping[str, Mapping[str, Any]]) -> Features:
    """What a server supports, from its tools' input schemas (``name → schema``)."""
    return Features(
        no_embed="embed" in _properties(tools, "knowledge_create")
        and "embed" in _properties(tools, "statement_create"),
        similar_filters="exclude_tags" in _properties(tools, "similar"),
        delete="knowledge_delete" in tools and "statement_delete" in tools,
        update="knowledge_update" in tools,
    )
