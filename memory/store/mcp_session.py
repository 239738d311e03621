"""The connection half of the MCP adapter: one ``<binary> mcp`` server process and its client
session, held by a task on a background event-loop thread (``hypatia-protocol.md`` §3.6).

:class:`McpSession` opens the server with a handshake deadline and checks the required tools,
keeps it open until it is idle or dead, kills it when a call runs past its deadline (stopping it
in the background so the failing call returns at once) and reports a binary that cannot serve MCP
as :class:`McpUnavailable` (the adapter then switches to the CLI).
:class:`memory.store.mcp.McpStore` builds on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar, cast

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, Implementation

from dsh_memory_worker.memory.store.base import FatalStoreError, Features, TransientStoreError
from dsh_memory_worker.memory.store.breaker import StoreTimeout
from dsh_memory_worker.memory.store.replies import features_from_tools

REQUIRED_TOOLS = (
    "knowledge_get",
    "knowledge_create",
    "statement_create",
    "search",
    "similar",
    "query",
)
CLIENT_INFO = Implementation(name="dsh-memory-worker", version="0")
T = TypeVar("T")


class McpUnavailable(Exception):
    """The binary cannot serve MCP at all: use the CLI for the rest of the run."""


@dataclass
class Connection:
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


class McpSession:
    """The server process and its session on a background event-loop thread: the connection
    half of :class:`memory.store.mcp.McpStore` (which sets every attribute declared here)."""

    binary: str
    timeout_s: float
    handshake_timeout_s: float
    idle_close_s: float
    _env: dict[str, str]
    _cwd: Path
    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None
    _conn: Connection | None
    _features: Features | None
    _dying: set[asyncio.Task[None]]

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
            raise StoreTimeout(f"hypatia mcp: no answer within {backstop:g} s") from None

    # ------------------------------------------------------------------------- connection

    async def _hold(self, conn: Connection, ready: asyncio.Future[None]) -> None:
        """Own the server process: handshake, then stay open until stopped, idle or dead."""
        params = StdioServerParameters(
            command=self.binary, args=["mcp"], env=self._env, cwd=self._cwd
        )
        try:
            async with (
                stdio_client(params, errlog=conn.stderr) as (read, write),
                ClientSession(read, write, client_info=CLIENT_INFO) as session,
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

    async def _wait_until_done(self, conn: Connection) -> None:
        while not conn.stop.is_set():
            with anyio.move_on_after(min(1.0, self.idle_close_s)):
                await conn.stop.wait()
            idle = time.monotonic() - conn.last_used >= self.idle_close_s
            if not conn.busy and (idle or not conn.alive()):
                return

    async def _open(self) -> Connection:
        # Closed by the holder when the process is gone (it keeps the tail for error texts).
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        conn = Connection(stderr=cast(TextIO, stderr))
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.holder = asyncio.get_running_loop().create_task(self._hold(conn, ready))
        try:
            await ready
        except TimeoutError:  # before OSError, of which it is a subclass
            await self._shutdown(conn)
            raise StoreTimeout(
                f"hypatia mcp handshake timed out after {self.handshake_timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise FatalStoreError(f"cannot start {self.binary} mcp: {exc}") from exc
        except MCPError as exc:
            await self._shutdown(conn)
            tail = conn.stderr_tail()
            if exc.code != CONNECTION_CLOSED or "unrecognized subcommand" in tail:
                raise McpUnavailable(tail or exc.message) from exc
            raise TransientStoreError(f"hypatia mcp exited during the handshake: {tail}") from exc
        except Exception as exc:  # e.g. an unsupported protocol version or a malformed reply
            await self._shutdown(conn)
            raise McpUnavailable(f"handshake failed: {type(exc).__name__}: {exc}") from exc
        missing = [name for name in REQUIRED_TOOLS if name not in conn.tools]
        if missing:
            await self._shutdown(conn)
            raise McpUnavailable(f"hypatia mcp lacks {', '.join(missing)}")
        return conn

    async def _shutdown(self, conn: Connection) -> None:
        conn.stop.set()
        if conn.holder is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(conn.holder), timeout=15.0)
        if self._conn is conn:
            self._conn = None

    def _abandon(self, conn: Connection) -> None:
        """Stop a broken server in the background (stdin EOF, terminate, kill: bounded by the
        SDK) so the failing call returns now; ``close()`` still waits for it."""
        conn.stop.set()
        conn.closed = True
        if self._conn is conn:
            self._conn = None
        if conn.holder is not None and not conn.holder.done():
            self._dying.add(conn.holder)
            conn.holder.add_done_callback(self._dying.discard)

    async def _connection(self) -> Connection:
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
            raise StoreTimeout(
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


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups raised by anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


__all__ = ["CLIENT_INFO", "REQUIRED_TOOLS", "Connection", "McpSession", "McpUnavailable"]
