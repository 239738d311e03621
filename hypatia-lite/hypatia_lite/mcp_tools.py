"""Tool definitions of ``hypatia-lite mcp``: Hypatia's names and JSON input schemas.

Every schema is ``{type: object, properties, required, additionalProperties: false}``; every tool
but ``list_shelves`` takes an optional ``shelf`` (default ``"default"``). ``knowledge_create`` and
``statement_create`` advertise ``embed`` (false = store without a vector) and ``similar``
advertises ``exclude_tags``, which is how clients detect those features.
"""

from __future__ import annotations

from typing import Any

_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_SHELF: dict[str, Any] = {"type": "string", "description": 'Shelf name (default "default")'}
_JSON_ANY: dict[str, Any] = {
    "description": "A JSON value, or its JSON text",
    "type": ["object", "array", "string"],
}


def _schema(required: list[str], props: dict[str, Any], shelf: bool = True) -> dict[str, Any]:
    properties = dict(props)
    if shelf:
        properties["shelf"] = _SHELF
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_CONTENT = {
    "data": {**_STR, "description": "Markdown content"},
    "tags": {**_STRS, "description": "Tags (exact-match labels)"},
    "synonyms": {**_STRS, "description": "Synonyms"},
    "figures": {**_STRS, "description": "Figure URIs (archive://…)"},
    "scopes": {**_STRS, "description": 'Scopes; "" is the global scope'},
}
_EMBED = {"type": "boolean", "description": "false = store without an embedding vector"}
_TRIPLE = {"head": _STR, "relation": _STR, "tail": _STR}
_STATEMENT_SYNONYMS = {
    "type": "object",
    "properties": {"head": _STRS, "relation": _STRS, "tail": _STRS},
    "additionalProperties": False,
}
_LIMIT = {"type": "integer", "minimum": 1, "description": "Maximum rows (default 100)"}
_OFFSET = {"type": "integer", "minimum": 0, "description": "Rows to skip (default 0)"}

# name → (title, description, read_only, destructive, schema)
TOOLS: dict[str, tuple[str, str, bool, bool, dict[str, Any]]] = {
    "list_shelves": (
        "List shelves",
        "List registered shelves.",
        True,
        False,
        _schema([], {}, shelf=False),
    ),
    "query": (
        "Query",
        "Run a JSE (JSON Search Expression) query.",
        True,
        False,
        _schema(["jse"], {"jse": _JSON_ANY}),
    ),
    "search": (
        "Full-text search",
        "BM25 full-text search over knowledge and statements.",
        True,
        False,
        _schema(
            ["query"],
            {
                "query": _STR,
                "catalog": {"type": "string", "enum": ["knowledge", "statement"]},
                "limit": _LIMIT,
                "offset": _OFFSET,
            },
        ),
    ),
    "similar": (
        "Similar",
        "Vector similarity search (cosine distance, lower is closer).",
        True,
        False,
        _schema(
            ["query"],
            {
                "query": _STR,
                "target": {"type": "string", "enum": ["knowledge", "statement", "both"]},
                "limit": _LIMIT,
                "tags": {**_STRS, "description": "Only entries with at least one of these"},
                "exclude_tags": {**_STRS, "description": "Skip entries with any of these"},
                "where": _JSON_ANY,
            },
        ),
    ),
    "knowledge_create": (
        "Create knowledge",
        "Create a knowledge entry (fails if it exists).",
        False,
        False,
        _schema(["name"], {"name": _STR, **_CONTENT, "embed": _EMBED}),
    ),
    "knowledge_get": (
        "Get knowledge",
        "Get a knowledge entry by name.",
        True,
        False,
        _schema(["name"], {"name": _STR}),
    ),
    "knowledge_update": (
        "Update knowledge",
        "Change fields of a knowledge entry (omitted = keep, empty = clear).",
        False,
        False,
        _schema(["name"], {"name": _STR, **_CONTENT}),
    ),
    "knowledge_delete": (
        "Delete knowledge",
        "Delete a knowledge entry (statements are kept).",
        False,
        True,
        _schema(["name"], {"name": _STR}),
    ),
    "statement_create": (
        "Create statement",
        "Create a (head, relation, tail) statement; idempotent.",
        False,
        False,
        _schema(
            ["head", "relation", "tail"],
            {
                **_TRIPLE,
                "data": _STR,
                "synonyms": _STATEMENT_SYNONYMS,
                "scopes": _CONTENT["scopes"],
                "embed": _EMBED,
            },
        ),
    ),
    "statement_delete": (
        "Delete statement",
        "Delete a statement.",
        False,
        True,
        _schema(["head", "relation", "tail"], dict(_TRIPLE)),
    ),
}


class ArgumentError(Exception):
    """Arguments that do not match a tool's schema (reported as ``invalid arguments: …``)."""


def _type_ok(spec: dict[str, Any], value: Any) -> bool:
    kind = spec.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        if k is None:
            return True
        if k == "string" and isinstance(value, str):
            return True
        if k == "boolean" and isinstance(value, bool):
            return True
        if k == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if k == "object" and isinstance(value, dict):
            props = spec.get("properties")
            if props is None:
                return True
            return all(key in props and _type_ok(props[key], v) for key, v in value.items())
        if k == "array" and isinstance(value, list):
            items = spec.get("items")
            return items is None or all(_type_ok(items, v) for v in value)
    return False


def check_arguments(tool: str, arguments: dict[str, Any]) -> None:
    """Reject unknown or missing fields and wrong JSON types, serde-style."""
    schema = TOOLS[tool][4]
    props: dict[str, Any] = schema["properties"]
    for key in arguments:
        if key not in props:
            expected = ", ".join(f"`{p}`" for p in props)
            raise ArgumentError(
                f"invalid arguments: unknown field `{key}`, expected one of {expected}"
            )
    for key in schema["required"]:
        if key not in arguments:
            raise ArgumentError(f"invalid arguments: missing field `{key}`")
    for key, value in arguments.items():
        if value is None and key not in schema["required"]:
            continue
        if not _type_ok(props[key], value):
            raise ArgumentError(
                f"invalid arguments: invalid type for `{key}`: expected {props[key].get('type')}"
            )
        if "enum" in props[key] and value not in props[key]["enum"]:
            options = ", ".join(f"`{o}`" for o in props[key]["enum"])
            raise ArgumentError(
                f"invalid arguments: unknown variant `{value}` for `{key}`, "
                f"expected one of {options}"
            )
