"""``hypatia-lite mcp``: Hypatia's MCP tools on stdio, served with the official ``mcp`` SDK.

The low-level server is used so tool errors carry Hypatia's exact texts (``not found: knowledge
'<name>'``, ``knowledge '<name>' already exists; use knowledge_update to change it``, ``shelf
error: shelf '<s>' is not connected``) as ``isError`` results without a ``structuredContent``.
Rows are built by the same ``LiteStore`` methods the CLI prints, so both transports agree.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from hypatia_lite import shelves
from hypatia_lite.mcp_stdio import line_transport
from hypatia_lite.mcp_tools import TOOLS, ArgumentError, check_arguments
from hypatia_lite.protocol import StoreError, csv_triple
from hypatia_lite.rows import to_json_text, well_formed
from hypatia_lite.store import LiteStore, unique_violation

INSTRUCTIONS = (
    "hypatia-lite: a Hypatia-compatible memory store. Knowledge entries are named markdown "
    "documents with tags and scopes; statements are (head, relation, tail) triples. Use query "
    "(JSE), search (full text) and similar (vectors) to read; knowledge_* and statement_* to "
    "write."
)


class ToolFailure(Exception):
    """A business error answered as an ``isError`` result with exactly this text."""


def _tags(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [t for t in (well_formed(v).strip() for v in values) if t]


def _scopes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    out: list[str] = []
    for scope in (well_formed(v).strip() for v in values):
        if scope not in out:
            out.append(scope)
    return out


def _jse(value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as err:
            raise ToolFailure(f"invalid {what} JSON: {err}") from err
    return value


def _paging(args: dict[str, Any]) -> tuple[int, int]:
    limit = args.get("limit")
    offset = args.get("offset")
    limit = 100 if limit is None else limit
    offset = 0 if offset is None else offset
    if limit < 1:
        raise ToolFailure(f"limit must be at least 1, got {limit}")
    if offset < 0:
        raise ToolFailure(f"offset must not be negative, got {offset}")
    return limit, offset


class LiteTools:
    """Runs one tool call against the shelf stores (opened on first use, kept open)."""

    def __init__(self) -> None:
        self._stores: dict[str, LiteStore] = {}

    def store(self, shelf: str) -> LiteStore:
        if shelf not in self._stores:
            self._stores[shelf] = LiteStore(shelf)
        return self._stores[shelf]

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def embedding(self, store: LiteStore) -> dict[str, Any]:
        pending = store.pending_embeddings()
        blocked = None
        if store.embedder is None:
            blocked = {
                "reason": "provider_unavailable",
                "message": "no embedding provider configured",
            }
        return {
            "pending_knowledge": pending["knowledge"],
            "pending_statement": pending["statement"],
            "passed_over": 0,
            "pending_since": None,
            "blocked": blocked,
            "paused": None,
        }

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        check_arguments(tool, args)
        if tool == "list_shelves":
            home = shelves.lite_home()
            return {
                "shelves": [
                    {"name": n, "path": p, "connected": c} for n, p, c in shelves.listing(home)
                ]
            }
        store = self.store(str(args.get("shelf") or shelves.DEFAULT_SHELF))
        if tool.startswith("knowledge_"):
            return self._knowledge(store, tool, args)
        if tool.startswith("statement_"):
            return self._statement(store, tool, args)
        if tool == "query":
            rows = store.query_rows(_jse(args["jse"], "JSE"))
            return {"rows": rows, "total_count": len(rows)}
        if tool == "search":
            limit, offset = _paging(args)
            rows = store.search_rows(
                args["query"], catalog=args.get("catalog"), limit=limit, offset=offset
            )
            return {"rows": rows, "total_count": len(rows)}
        limit, _ = _paging(args)
        where = args.get("where")
        rows = store.similar_rows(
            args["query"],
            target=args.get("target") or "both",
            limit=limit,
            tags=_tags(args.get("tags")) or (),
            exclude_tags=_tags(args.get("exclude_tags")) or (),
            where=None if where is None else _jse(where, "where"),
        )
        return {"rows": rows, "total_count": len(rows), "embedding": self.embedding(store)}

    def _knowledge(self, store: LiteStore, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        name = well_formed(args["name"])
        if tool == "knowledge_get":
            row = store.knowledge_get_row(name)
            if row is None:
                raise ToolFailure(f"not found: knowledge '{name}'")
            return row
        if tool == "knowledge_delete":
            if not store.knowledge_delete(name):
                raise ToolFailure(f"not found: knowledge '{name}'")
            return {"name": name, "deleted": True}
        if tool == "knowledge_create":
            if store.knowledge_get_row(name) is not None:
                raise ToolFailure(
                    f"knowledge '{name}' already exists; use knowledge_update to change it"
                )
            created = store.knowledge_create(
                name,
                args.get("data") or "",
                tags=_tags(args.get("tags")) or (),
                scopes=_scopes(args.get("scopes")),
                synonyms=_tags(args.get("synonyms")),
                figures=_tags(args.get("figures")),
                embed=args.get("embed") is not False,
            )
            if not created:
                raise ToolFailure(unique_violation())
            return {"name": name, "created": True, "embedding": self.embedding(store)}
        fields = ("data", "tags", "synonyms", "figures", "scopes")
        if all(args.get(f) is None for f in fields):
            raise ToolFailure(
                "nothing to update: pass at least one of data, tags, synonyms, figures, scopes"
            )
        changed = store.knowledge_update(
            name,
            data=args.get("data"),
            tags=_tags(args.get("tags")),
            scopes=_scopes(args.get("scopes")),
            synonyms=_tags(args.get("synonyms")),
            figures=_tags(args.get("figures")),
        )
        return {"name": name, "changed": changed, "embedding": self.embedding(store)}

    def _statement(self, store: LiteStore, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        head, relation, tail = (well_formed(args[k]) for k in ("head", "relation", "tail"))
        if tool == "statement_delete":
            if not store.statement_delete(head, relation, tail):
                raise ToolFailure(f"not found: statement '{csv_triple(head, relation, tail)}'")
            return {"head": head, "relation": relation, "tail": tail, "deleted": True}
        created = store.statement_create(
            head,
            relation,
            tail,
            data=args.get("data") or "",
            scopes=_scopes(args.get("scopes")),
            synonyms=args.get("synonyms"),
            embed=args.get("embed") is not False,
        )
        return {
            "head": head,
            "relation": relation,
            "tail": tail,
            "created": created,
            "embedding": self.embedding(store),
        }


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def build_server(tools: LiteTools) -> Server[Any]:
    """The low-level MCP server answering ``tools/list`` and ``tools/call``."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    title=title,
                    description=description,
                    input_schema=schema,
                    annotations=types.ToolAnnotations(
                        title=title,
                        read_only_hint=read_only,
                        destructive_hint=destructive,
                        idempotent_hint=read_only or name == "statement_create",
                    ),
                )
                for name, (title, description, read_only, destructive, schema) in TOOLS.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOLS:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        try:
            value = tools.call(params.name, dict(params.arguments or {}))
        except (ToolFailure, ArgumentError, StoreError) as err:
            return _error(well_formed(str(err)))
        except Exception as err:  # a bug must not kill the server: report it on this call
            return _error(f"internal error: {type(err).__name__}: {err}")
        return types.CallToolResult(
            content=[types.TextContent(text=to_json_text(value))], structured_content=value
        )

    return Server(
        "hypatia-lite",
        version=_version(),
        title="hypatia-lite",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    from hypatia_lite import __version__

    return __version__


async def _serve() -> None:
    tools = LiteTools()
    server = build_server(tools)
    try:
        async with line_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        tools.close()


def serve() -> int:
    """Run the MCP server on stdin/stdout until stdin reaches EOF; returns the exit code."""
    anyio.run(_serve)
    return 0
