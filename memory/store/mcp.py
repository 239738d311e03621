"""``hypatia mcp`` over the official MCP SDK, with the CLI as a fallback.

One long-lived server process per adapter. The store protocol is synchronous, so the async MCP
client runs on a background event-loop thread owned by the adapter; calls are submitted to it
and serialised by a lock. Lifecycle (``hypatia-protocol.md`` §3.6): handshake within a deadline,
features from the tool schemas, a per-call deadline that kills the server, a new process after a
crash or a ``… is not connected`` shelf error, and an idle close. A binary without ``mcp`` (exit
2, ``unrecognized subcommand``), one that rejects the handshake, or one missing a required tool
switches this adapter to the CLI for the rest of its life with one warning; a spawn failure only
fails that call. The server process and its session are :mod:`memory.store.mcp_session`'s; the
reply parsing is :mod:`memory.store.replies`' (shared with the CLI adapter).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mcp_types import CallToolResult, TextContent

from dsh_memory_worker.memory.store.base import (
    Catalog,
    DuplicateError,
    FatalStoreError,
    Features,
    KnowledgeEntry,
    NotFoundError,
    QueryRow,
    SearchRow,
    SimilarRow,
    StoreError,
    Target,
)
from dsh_memory_worker.memory.store.breaker import Breaker, StoreTimeout
from dsh_memory_worker.memory.store.cli import CliStore
from dsh_memory_worker.memory.store.mcp_session import (
    REQUIRED_TOOLS,
    Connection,
    McpSession,
    McpUnavailable,
)
from dsh_memory_worker.memory.store.replies import (
    classify_error,
    create_args,
    filter_excluded,
    jse_text,
    normalize_tags,
    parse_entry,
    parse_query_rows,
    parse_search_rows,
    parse_similar_rows,
    payload_value,
    triple_args,
    update_args,
    well_formed,
)

log = logging.getLogger(__name__)

_ALREADY_EXISTS = re.compile(r"^knowledge '.*' already exists;", re.DOTALL)
T = TypeVar("T")


class McpStore(McpSession):
    """A ``MemoryStore`` over one long-lived ``<binary> mcp`` process."""

    def __init__(
        self,
        shelf: str = "default",
        binary: str = "hypatia",
        *,
        timeout_s: float = 30.0,
        handshake_timeout_s: float = 10.0,
        idle_close_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        fallback: CliStore | None = None,
        breaker: Breaker | None = None,
    ) -> None:
        self.shelf = shelf
        self.binary = binary
        self.timeout_s = timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self.idle_close_s = idle_close_s
        self.max_data_bytes: int | None = None
        self._env = {**os.environ, **(env or {})}
        self._cwd = cwd or Path.home()
        #: Shared with the CLI fallback: one store, one count of timeouts (:mod:`.breaker`).
        self.breaker = breaker or Breaker()
        self._fallback = fallback or CliStore(
            shelf, binary, timeout_s=timeout_s, env=env, cwd=self._cwd, breaker=self.breaker
        )
        self._use_cli = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: Connection | None = None
        self._features: Features | None = None
        self._dying: set[asyncio.Task[None]] = set()  # servers being stopped in the background

    @property
    def transport(self) -> str:
        """``mcp``, or ``cli`` once this adapter has fallen back."""
        return "cli" if self._use_cli else "mcp"

    # ------------------------------------------------------------------------- dispatch

    def _switch_to_cli(self, reason: str) -> None:
        self._use_cli = True
        log.warning(
            "hypatia mcp unavailable: %s; using the hypatia CLI for the rest of the run", reason
        )

    def _tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        fallback: Callable[[], T],
        parse: Callable[[Any], T],
    ) -> T:
        """Call ``tool`` (or the CLI fallback); parse a success, raise a classified error."""
        with self._lock:
            if self._use_cli:
                return fallback()
            args = {"shelf": self.shelf, **arguments}
            self.breaker.before_call(f"hypatia {tool}")
            try:
                result = self._submit(self._call(tool, args))
                if result.is_error and "is not connected" in _text(result):
                    # The server reads the shelf registry at start: retry once on a new process.
                    self._submit(self._close_async())
                    result = self._submit(self._call(tool, args))
            except McpUnavailable as exc:
                self._switch_to_cli(str(exc))
                return fallback()
            except StoreTimeout as exc:
                self.breaker.timed_out(str(exc))
                raise
            self.breaker.answered()
        if result.is_error:
            text = _text(result)
            if _ALREADY_EXISTS.match(text):
                raise DuplicateError(f"hypatia {tool}: {text[:500]}")
            raise classify_error(text, context=f"hypatia {tool}")
        return parse(_payload(result, tool))

    # ------------------------------------------------------------------------- MemoryStore

    def features(self) -> Features:
        with self._lock:
            if not self._use_cli and self._features is None:
                try:
                    self._submit(self._connection())
                except McpUnavailable as exc:
                    self._switch_to_cli(str(exc))
            if self._use_cli:
                return self._fallback.features()
            return self._features or Features()

    def knowledge_get(self, name: str) -> KnowledgeEntry | None:
        try:
            return self._tool(
                "knowledge_get",
                {"name": well_formed(name)},
                lambda: self._fallback.knowledge_get(name),
                parse_entry,
            )
        except NotFoundError:
            return None

    def knowledge_create(
        self,
        name: str,
        data: str,
        *,
        tags: Sequence[str] = (),
        scopes: Sequence[str] | None = None,
        embed: bool = True,
    ) -> bool:
        args = {
            "name": well_formed(name),
            **create_args(data, tags=tags, scopes=scopes, embed=embed, features=self.features),
        }
        try:
            return self._tool(
                "knowledge_create",
                args,
                lambda: self._fallback.knowledge_create(
                    name, data, tags=tags, scopes=scopes, embed=embed
                ),
                lambda payload: True,
            )
        except DuplicateError:
            return False

    def knowledge_update(
        self,
        name: str,
        *,
        data: str | None = None,
        tags: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> bool:
        args = {"name": well_formed(name), **update_args(data, tags, scopes)}
        return self._tool(
            "knowledge_update",
            args,
            lambda: self._fallback.knowledge_update(name, data=data, tags=tags, scopes=scopes),
            lambda payload: bool(payload_value(payload, "changed", True)),
        )

    def knowledge_delete(self, name: str) -> bool:
        try:
            return self._tool(
                "knowledge_delete",
                {"name": well_formed(name)},
                lambda: self._fallback.knowledge_delete(name),
                lambda payload: True,
            )
        except NotFoundError:
            return False

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
        args = {
            **triple_args(head, relation, tail),
            **create_args(data, scopes=scopes, embed=embed, features=self.features),
        }
        try:
            return self._tool(
                "statement_create",
                args,
                lambda: self._fallback.statement_create(
                    head, relation, tail, data=data, scopes=scopes, embed=embed
                ),
                lambda payload: payload_value(payload, "created", True) is not False,
            )
        except DuplicateError:
            return False

    def statement_delete(self, head: str, relation: str, tail: str) -> bool:
        try:
            return self._tool(
                "statement_delete",
                triple_args(head, relation, tail),
                lambda: self._fallback.statement_delete(head, relation, tail),
                lambda payload: True,
            )
        except NotFoundError:
            return False

    def search(
        self, query: str, *, catalog: Catalog | None = None, limit: int = 100
    ) -> list[SearchRow]:
        args: dict[str, Any] = {"query": well_formed(query), "limit": limit}
        if catalog is not None:
            args["catalog"] = catalog
        return self._tool(
            "search",
            args,
            lambda: self._fallback.search(query, catalog=catalog, limit=limit),
            parse_search_rows,
        )

    def similar(
        self,
        query: str,
        *,
        target: Target = "knowledge",
        limit: int = 10,
        exclude_tags: Sequence[str] = (),
    ) -> list[SimilarRow]:
        args: dict[str, Any] = {"query": well_formed(query), "target": target, "limit": limit}
        excluded = normalize_tags(exclude_tags)
        server_side = bool(excluded) and self.features().similar_filters
        if server_side:
            args["exclude_tags"] = excluded
        rows = self._tool(
            "similar",
            args,
            lambda: self._fallback.similar(
                query, target=target, limit=limit, exclude_tags=exclude_tags
            ),
            lambda payload: parse_similar_rows(payload, target),
        )
        return rows if server_side else filter_excluded(rows, excluded)

    def query(self, jse: Any) -> list[QueryRow]:
        return self._tool(
            "query",
            {"jse": well_formed(jse_text(jse))},
            lambda: self._fallback.query(jse),
            parse_query_rows,
        )

    def close(self) -> None:
        """Close the server (stdin EOF, then the SDK's terminate/kill) and the loop thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            if loop is not None:
                with contextlib.suppress(StoreError, RuntimeError):
                    self._submit(self._close_async())
                loop.call_soon_threadsafe(loop.stop)
                if thread is not None:
                    thread.join(timeout=5.0)
                if not loop.is_running():
                    loop.close()
            self._loop = self._thread = None
            self._fallback.close()


# ------------------------------------------------------------------------------------ helpers


def _text(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent)).strip()


def _payload(result: CallToolResult, tool: str) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    text = _text(result)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FatalStoreError(f"unparseable hypatia {tool} result: {text[:200]}") from exc


__all__ = ["REQUIRED_TOOLS", "McpStore"]
