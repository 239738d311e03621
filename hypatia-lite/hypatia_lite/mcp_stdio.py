"""Newline-delimited JSON-RPC on stdin/stdout for ``hypatia-lite mcp``, Hypatia-style.

Differences from the SDK's ``stdio_server`` (which silently drops a line it cannot decode):
an unparseable line (or invalid UTF-8) is answered with ``-32700 parse error: …`` and id null, a
batch array with ``-32600 batched requests are not supported``, a non-object with ``-32600 a
message must be a JSON object``; blank lines are ignored; and at stdin EOF the server finishes the
requests it already received before it exits.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

_DRAIN_TIMEOUT_S = 60.0


def _error_line(code: int, message: str, request_id: Any = None) -> str:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _decode(raw: bytes) -> SessionMessage | str | None:
    """A message to forward, an error line to answer directly, or None to ignore."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return _error_line(-32700, f"parse error: invalid UTF-8: {err}")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError as err:
        return _error_line(-32700, f"parse error: {err}")
    if isinstance(value, list):
        return _error_line(-32600, "batched requests are not supported")
    if not isinstance(value, dict):
        return _error_line(-32600, "a message must be a JSON object")
    request_id = value.get("id")
    if "id" in value and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return _error_line(-32600, "a request id must be a string or an integer")
    if "id" in value and "method" not in value and "result" not in value and "error" not in value:
        return _error_line(-32600, "missing method", request_id)
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except Exception as err:
        return _error_line(-32600, f"invalid request: {err}".splitlines()[0], request_id)
    return SessionMessage(message)


@asynccontextmanager
async def line_transport() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` for ``Server.run`` over the process's stdin/stdout."""
    stdin = anyio.wrap_file(sys.stdin.buffer)
    stdout = sys.stdout.buffer
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    pending: set[Any] = set()
    write_lock = anyio.Lock()

    async def emit(line: str) -> None:
        async with write_lock:
            stdout.write(line.encode("utf-8") + b"\n")
            stdout.flush()

    async def reader() -> None:
        async with read_writer:
            async for raw in stdin:
                decoded = _decode(raw.rstrip(b"\r\n"))
                if decoded is None:
                    continue
                if isinstance(decoded, str):
                    await emit(decoded)
                    continue
                if isinstance(decoded.message, types.JSONRPCRequest):
                    pending.add(decoded.message.id)
                await read_writer.send(decoded)
            with anyio.move_on_after(_DRAIN_TIMEOUT_S):
                while pending:
                    await anyio.sleep(0.01)

    async def writer() -> None:
        async with write_reader:
            async for outgoing in write_reader:
                message = outgoing.message
                await emit(message.model_dump_json(by_alias=True, exclude_unset=True))
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    pending.discard(message.id)

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        yield read_stream, write_stream
