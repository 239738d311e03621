"""``hypatia mcp`` over the official MCP SDK, with the CLI as a fallback.

One long-lived server process per adapter. The store protocol is synchronous, so the async MCP
client runs on a background event-loop thread owned by the adapter; calls are submitted to it
and serialised by a lock. Lifecycle (``hypatia-protocol.md`` §3.6): handshake within a deadline,
features from the tool schemas, a per-call deadline that kills the server, a new process after a
crash or a ``… is not connected`` shelf error, and an idle close. A binary without ``mcp`` (exit
2, ``unrecognized subcommand``), one that rejects the handshake, or one missing a required tool
switches this adapter to the CLI for the rest of its life with one warning; a spawn failure only
fails that call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar, cast

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, Implementation, TextContent

from memory.store.base import (
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
    TransientStoreError,
)
from memory.store.cli import CliStore
from memory.store.replies import (
    classify_error,
    features_from_tools,
    filter_excluded,
    jse_text,
    normalize_scopes,
    normalize_tags,
    parse_entry,
    parse_query_rows,
    parse_search_rows,
    parse_similar_rows,
    payload_value,
    triple_args,
    well_formed,
)

log = logging.getLogger(__name__)

REQUIRED_TOOLS = (
    "knowledge_get",
    "knowledge_create",
    "statement_create",
    "search",
    "similar",
    "query",
)
_ALREADY_EXISTS = re.compile(r"^knowledge '.*' already exists;", re.DOTALL)
_CLIENT_INFO = Implementation(name="dsh-memory-worker", version="0")
T = TypeVar("T")


class _McpUnavailable(Exception):
    """The binary cannot serve MCP at all: use the CLI for the rest of the run."""


@dataclass
class _Connection:
    """One server process and its session; touched only on the adapter's loop thread."""

    stderr: TextIO
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    session: ClientSession | None = None
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    holder: asyncio.Task[None] | None = None
    busy: bool = False
    closed: bool = False
    last_used: float = field(default_factory=time.monotonic)
    final_stderr: str | None = None

    def alive(self) -> bool:
        dispatcher = getattr(self.session, "_dispatcher", None)
        return (
            not self.closed
            and self.session is not None
            and not getattr(dispatcher, "_closed", False)
        )

    def stderr_tail(self) -> str:
        if self.final_stderr is not None:
            return self.final_stderr
        with contextlib.suppress(OSError, ValueError):
            self.stderr.flush()
            self.stderr.seek(0)
            return " ".join(self.stderr.read()[-2000:].split())[-500:]
        return ""


class McpStore:
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
    ) -> None:
        self.shelf = shelf
        self.binary = binary
        self.timeout_s = timeout_s
        self.handshake_timeout_s = handshake_timeout_s
        self.idle_close_s = idle_close_s
        self.max_data_bytes: int | None = None
        self._env = {**os.environ, **(env or {})}
        self._cwd = cwd or Path.home()
        self._fallback = fallback or CliStore(
            shelf, binary, timeout_s=timeout_s, env=env, cwd=self._cwd
        )
        self._use_cli = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: _Connection | None = None
        self._features: Features | None = None
        self._dying: set[asyncio.Task[None]] = set()  # servers being stopped in the background

    @property
    def transport(self) -> str:
        """``mcp``, or ``cli`` once this adapter has fallen back."""
        return "cli" if self._use_cli else "mcp"

    # ------------------------------------------------------------------------- loop thread

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="hypatia-mcp", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        backstop = self.timeout_s + 2 * self.handshake_timeout_s + 15.0
        try:
            return future.result(timeout=backstop)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TransientStoreError(f"hypatia mcp: no answer within {backstop:g} s") from None

    # ------------------------------------------------------------------------- connection

    async def _hold(self, conn: _Connection, ready: asyncio.Future[None]) -> None:
        """Own the server process: handshake, then stay open until stopped, idle or dead."""
        params = StdioServerParameters(
            command=self.binary, args=["mcp"], env=self._env, cwd=self._cwd
        )
        try:
            async with (
                stdio_client(params, errlog=conn.stderr) as (read, write),
                ClientSession(read, write, client_info=_CLIENT_INFO) as session,
            ):
                with anyio.fail_after(self.handshake_timeout_s):
                    await session.initialize()
                with anyio.fail_after(self.handshake_timeout_s):
                    listing = await session.list_tools()
                conn.session = session
                conn.tools = {tool.name: tool.input_schema for tool in listing.tools}
                ready.set_result(None)
                await self._wait_until_done(conn)
        except BaseException as exc:  # reported to the opener; the holder never raises
            if not ready.done():
                ready.set_exception(_leaf(exc))
            elif not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            conn.closed = True
            conn.session = None
            conn.final_stderr = conn.stderr_tail()
            conn.stderr.close()

    async def _wait_until_done(self, conn: _Connection) -> None:
        while not conn.stop.is_set():
            with anyio.move_on_after(min(1.0, self.idle_close_s)):
                await conn.stop.wait()
            idle = time.monotonic() - conn.last_used >= self.idle_close_s
            if not conn.busy and (idle or not conn.alive()):
                return

    async def _open(self) -> _Connection:
        # Closed by the holder when the process is gone (it keeps the tail for error texts).
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        conn = _Connection(stderr=cast(TextIO, stderr))
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.holder = asyncio.get_running_loop().create_task(self._hold(conn, ready))
        try:
            await ready
        except TimeoutError:  # before OSError, of which it is a subclass
            await self._shutdown(conn)
            raise TransientStoreError(
                f"hypatia mcp handshake timed out after {self.handshake_timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise FatalStoreError(f"cannot start {self.binary} mcp: {exc}") from exc
        except MCPError as exc:
            await self._shutdown(conn)
            tail = conn.stderr_tail()
            if exc.code != CONNECTION_CLOSED or "unrecognized subcommand" in tail:
                raise _McpUnavailable(tail or exc.message) from exc
            raise TransientStoreError(f"hypatia mcp exited during the handshake: {tail}") from exc
        except Exception as exc:  # e.g. an unsupported protocol version or a malformed reply
            await self._shutdown(conn)
            raise _McpUnavailable(f"handshake failed: {type(exc).__name__}: {exc}") from exc
        missing = [name for name in REQUIRED_TOOLS if name not in conn.tools]
        if missing:
            await self._shutdown(conn)
            raise _McpUnavailable(f"hypatia mcp lacks {', '.join(missing)}")
        return conn

    async def _shutdown(self, conn: _Connection) -> None:
        conn.stop.set()
        if conn.holder is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(conn.holder), timeout=15.0)
        if self._conn is conn:
            self._conn = None

    def _abandon(self, conn: _Connection) -> None:
        """Stop a broken server in the background (stdin EOF, terminate, kill: bounded by the
        SDK) so the failing call returns now; ``close()`` still waits for it."""
        conn.stop.set()
        conn.closed = True
        if self._conn is conn:
            self._conn = None
        if conn.holder is not None and not conn.holder.done():
            self._dying.add(conn.holder)
            conn.holder.add_done_callback(self._dying.discard)

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and conn.alive():
            return conn
        if conn is not None:
            await self._shutdown(conn)
        self._conn = await self._open()
        if self._features is None:
            self._features = features_from_tools(self._conn.tools)
        return self._conn

    async def _call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        conn = await self._connection()
        session = conn.session
        assert session is not None
        conn.busy = True
        try:
            with anyio.fail_after(self.timeout_s):
                return await session.call_tool(tool, arguments)
        except TimeoutError:
            self._abandon(conn)
            raise TransientStoreError(
                f"hypatia {tool}: no answer within {self.timeout_s:g} s; server killed"
            ) from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                detail = conn.stderr_tail() or exc.message
                self._abandon(conn)
                raise TransientStoreError(f"hypatia mcp exited during {tool}: {detail}") from exc
            raise FatalStoreError(f"hypatia {tool}: MCP error {exc.code}: {exc.message}") from exc
        except Exception as exc:  # a reply the SDK could not validate
            raise FatalStoreError(f"hypatia {tool}: {type(exc).__name__}: {exc}") from exc
        finally:
            conn.busy = False
            conn.last_used = time.monotonic()

    async def _close_async(self) -> None:
        if self._conn is not None:
            await self._shutdown(self._conn)
        if self._dying:
            await asyncio.wait(set(self._dying), timeout=15.0)

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
            try:
                result = self._submit(self._call(tool, args))
                if result.is_error and "is not connected" in _text(result):
                    # The server reads the shelf registry at start: retry once on a new process.
                    self._submit(self._close_async())
                    result = self._submit(self._call(tool, args))
            except _McpUnavailable as exc:
                self._switch_to_cli(str(exc))
                return fallback()
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
                except _McpUnavailable as exc:
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
        args: dict[str, Any] = {"name": well_formed(name)}
        if data:
            args["data"] = well_formed(data)
        if tag_list := normalize_tags(tags):
            args["tags"] = tag_list
        if scope_list := normalize_scopes(scopes):
            args["scopes"] = scope_list
        if not embed and self.features().no_embed:
            args["embed"] = False
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
        if data is None and tags is None and scopes is None:
            raise FatalStoreError("knowledge_update needs at least one of data, tags, scopes")
        args: dict[str, Any] = {"name": well_formed(name)}
        if data is not None:
            args["data"] = well_formed(data)
        if tags is not None:
            args["tags"] = normalize_tags(tags)
        if scopes is not None:
            args["scopes"] = normalize_scopes(scopes) or []
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
        args: dict[str, Any] = triple_args(head, relation, tail)
        if data:
            args["data"] = well_formed(data)
        if scope_list := normalize_scopes(scopes):
            args["scopes"] = scope_list
        if not embed and self.features().no_embed:
            args["embed"] = False
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


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups raised by anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


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
