"""Content objects and result rows exactly as Hypatia prints them (shared by CLI and MCP).

Strings are made well-formed before they are stored: a lone UTF-16 surrogate (Python strings
can carry one, e.g. from ``surrogateescape`` argv or ``"\\ud800"`` in JSON) becomes U+FFFD, and
a surrogate *pair* becomes the character it encodes, the same way in-process, over the CLI and
over MCP (this matches JavaScript's ``toWellFormed()``, which the reference plugin applies).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypatia_lite.protocol import Content, KnowledgeEntry, StatementRow

_SURROGATE = re.compile("[\ud800-\udfff]")
#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, without building an
#: encoder per call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: The Content field that marks a write without an embedding (present only then, as ``false``).
NO_EMBED = "embed"
_FIELDS = ("format", "data", "tags", "synonyms", "figures", "scopes")


def well_formed(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (pairs joined)."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_list(values: Iterable[str] | None) -> list[str] | None:
    return None if values is None else [well_formed(str(v)) for v in values]


def make_content(
    data: str = "",
    *,
    tags: Sequence[str] = (),
    synonyms: Any = None,
    figures: Sequence[str] | None = None,
    scopes: Sequence[str] | None = None,
    format: str = "markdown",
    embed: bool = True,
) -> dict[str, Any]:
    """A six-field Content object in Hypatia's struct order; empty scopes become ``null``.

    A write that asked for no embedding (``--no-embed``, MCP ``embed: false``) carries a seventh
    field, ``"embed": false``, as the newest Hypatia shows it; an embedded write has none."""
    if isinstance(synonyms, Mapping):
        syn: Any = {str(k): clean_list(v) for k, v in synonyms.items()}
    else:
        syn = clean_list(synonyms)
    content = {
        "format": format,
        "data": well_formed(data),
        "tags": clean_list(tags) or [],
        "synonyms": syn,
        "figures": clean_list(figures),
        "scopes": clean_list(scopes) or None,
    }
    if not embed:
        content[NO_EMBED] = False
    return content


def content_text(content: Mapping[str, Any]) -> str:
    """Compact JSON text of a Content object (how it is stored and how ``search`` shows it)."""
    ordered = {k: content.get(k) for k in _FIELDS}
    if content.get(NO_EMBED) is False:
        ordered[NO_EMBED] = False
    return _COMPACT.encode(ordered)


class ContentShape:
    """What the Content objects of a batch's rows share: everything but ``data`` (tags, scopes;
    no synonyms or figures, format ``markdown``), cleaned and printed once. ``make(data)``
    returns what ``make_content(data, tags=tags, scopes=scopes)`` and its :func:`content_text`
    return, without rebuilding the shared fields for every row (the ``tags`` and ``scopes``
    lists are shared: treat them as read-only)."""

    __slots__ = ("_tail", "embed", "scopes", "tags")

    def __init__(
        self, tags: Sequence[str] = (), scopes: Sequence[str] | None = None, embed: bool = True
    ) -> None:
        self.tags: list[str] = clean_list(tags) or []
        self.scopes: list[str] | None = clean_list(scopes) or None
        self.embed = embed
        self._tail = (
            ',"tags":'
            + _COMPACT.encode(self.tags)
            + ',"synonyms":null,"figures":null,"scopes":'
            + _COMPACT.encode(self.scopes)
            + ("" if embed else ',"embed":false')
            + "}"
        )

    def make(self, data: str) -> tuple[dict[str, Any], str]:
        """The Content object with ``data`` and its compact JSON text."""
        data = well_formed(data)
        content: dict[str, Any] = {
            "format": "markdown",
            "data": data,
            "tags": self.tags,
            "synonyms": None,
            "figures": None,
            "scopes": self.scopes,
        }
        if not self.embed:
            content[NO_EMBED] = False
        return content, '{"format":"markdown","data":' + _COMPACT.encode(data) + self._tail


def knowledge_row(name: str, content: Mapping[str, Any], created_at: str) -> dict[str, Any]:
    return {"name": name, "content": dict(content), "created_at": created_at}


def statement_row(
    triple: str, head: str, relation: str, tail: str, content: Mapping[str, Any], created_at: str
) -> dict[str, Any]:
    return {
        "triple": triple,
        "head": head,
        "relation": relation,
        "tail": tail,
        "content": dict(content),
        "created_at": created_at,
    }


def to_entry(row: Mapping[str, Any]) -> KnowledgeEntry | StatementRow:
    """A printed row as the protocol's typed row."""
    content = Content.from_json(row["content"])
    if "name" in row:
        return KnowledgeEntry(row["name"], content, row["created_at"])
    return StatementRow(row["head"], row["relation"], row["tail"], content, row["created_at"])


def to_json_text(value: Any) -> str:
    """Pretty JSON as Hypatia prints it: 2-space indent, keys sorted, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
