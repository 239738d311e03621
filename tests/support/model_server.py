"""A local OpenAI-compatible chat-completions server with scripted replies, for tests.

Stdlib only (``http.server`` on a thread), bound to ``127.0.0.1`` on a free port. It serves
``POST /v1/chat/completions`` and ``POST /chat/completions``, both non-streaming and
``"stream": true`` (server-sent events, ending with ``data: [DONE]``; a final usage chunk is
sent when the request asks ``stream_options.include_usage``).

What each request gets back, in this order:

1. the next :class:`Reply` queued with :meth:`ModelServer.push` (first in, first out);
2. otherwise the ``responder`` callable, ``responder(request_json) -> Reply``;
3. otherwise, with ``echo=True``, :func:`echo_reply` — a JSON reply whose ``summary`` is every
   transcript line of the request (the text between ``<transcript>`` and ``</transcript>`` in the
   last user message, or that whole message when there are no tags), ``workUnits: []``,
   ``title: "echo"``, ``verdict: "unrelated"``, ``target: ""`` — so a canary can check exactly
   what the model was shown;
4. otherwise HTTP 500 ``no scripted reply left`` (a test that calls more often than it scripted
   fails loudly).

A :class:`Reply` carries ``content``, ``finish_reason`` (``stop``, ``length``, …), ``usage``
(``prompt_tokens``, ``completion_tokens``, ``reasoning_tokens``), an HTTP ``status`` with an
``error`` message (an OpenAI-style error body), an optional ``delay_s`` before answering,
``chunks`` (how many SSE pieces the content is split into when streaming) and ``chunk_delay_s``
(a pause before each streamed piece, for slow-stream tests); ``raw`` bytes replace the whole
200 body (broken-server tests).

Every request is recorded as a :class:`Recorded` (path, headers, raw body bytes, parsed JSON) in
:attr:`ModelServer.requests`, so tests can assert on the bytes the server really received.

Use the ``model_server`` pytest fixture (import ``model_server_fixture`` into a test module):
it starts a server, yields it, and stops it afterwards::

    from model_server import ModelServer, Reply, model_server_fixture  # noqa: F401

    def test_x(model_server):
        model_server.push(Reply(content='{"summary": "- x", "workUnits": []}'))
        route = ModelRoute(model_server.base_url, "deepseek-chat", "TEST_KEY")
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    import pytest
except ImportError:  # run as a script from an install without the dev extra (see main)
    pytest = None  # type: ignore[assignment]

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class Reply:
    """One scripted answer."""

    content: str = ""
    finish_reason: str | None = "stop"
    usage: dict[str, int] | None = None  # prompt_tokens, completion_tokens, reasoning_tokens
    status: int = 200
    error: str = "scripted failure"  # the error message when status != 200
    error_type: str = "scripted"  # the error's ``type`` (the worker keeps this, not the message)
    delay_s: float = 0.0
    chunks: int = 3
    chunk_delay_s: float = 0.0  # pause before each streamed piece
    raw: bytes | None = None  # sent verbatim as the 200 body instead of a well-formed reply


@dataclass
class Recorded:
    """One request as received."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    json: Any

    @property
    def user_text(self) -> str:
        """All ``user`` message contents of the request, joined with newlines."""
        messages = self.json.get("messages", []) if isinstance(self.json, dict) else []
        return "\n".join(
            str(m.get("content", ""))
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
        )


_TRANSCRIPT = re.compile(r"<transcript>\n?(.*?)\n?</transcript>", re.S)


def transcript_lines(request_json: Any) -> list[str]:
    """The transcript lines of a request (see the module docstring)."""
    messages = request_json.get("messages", []) if isinstance(request_json, dict) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    text = str(users[-1].get("content", "")) if users else ""
    found = _TRANSCRIPT.search(text)
    body = found.group(1) if found else text
    return [line for line in body.split("\n") if line.strip()]


def echo_reply(request_json: Any) -> Reply:
    """A reply that repeats every transcript line in ``summary`` (valid for every purpose)."""
    payload = {
        "summary": "\n".join(transcript_lines(request_json)) or "(empty)",
        "workUnits": [],
        "title": "echo",
        "verdict": "unrelated",
        "target": "",
    }
    return Reply(content=json.dumps(payload, ensure_ascii=False))


def prompt_quoting_error(request_json: Any, status: int = 400) -> Reply:
    """An error that quotes the request, as content-filter and invalid-request errors of real
    providers often do: HTTP ``status`` whose message repeats every transcript line of the
    request (or the whole last user message when it has no transcript)."""
    quoted = " | ".join(transcript_lines(request_json))
    return Reply(status=status, error=f"Content Exists Risk: the request contains {quoted}")


class ModelServer:
    """The server; see the module docstring. Start with :meth:`start`, stop with :meth:`stop`."""

    def __init__(
        self, responder: Callable[[Any], Reply] | None = None, *, echo: bool = False
    ) -> None:
        self.responder = responder
        self.echo = echo
        self.requests: list[Recorded] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- control --------------------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[bytes]:
        return [r.body for r in self.requests]

    def start(self) -> ModelServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # ---- dispatch -------------------------------------------------------------------------

    def _next_reply(self, request_json: Any) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request_json)
        if self.echo:
            return echo_reply(request_json)
        return Reply(
            status=500, error="no scripted reply left", error_type="no_scripted_reply_left"
        )


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        try:
            parsed: Any = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            parsed = None
        with self.owner._lock:
            self.owner.requests.append(
                Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body, parsed)
            )
        if path not in PATHS:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        if not isinstance(parsed, dict):
            self._json(400, {"error": {"message": "body is not a JSON object", "type": "invalid"}})
            return
        reply = self.owner._next_reply(parsed)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            self._json(reply.status, {"error": {"message": reply.error, "type": reply.error_type}})
            return
        if reply.raw is not None:
            stream = bool(parsed.get("stream"))
            self._raw(reply.raw, "text/event-stream" if stream else "application/json")
            return
        model = str(parsed.get("model", ""))
        if parsed.get("stream"):
            include_usage = bool((parsed.get("stream_options") or {}).get("include_usage"))
            self._sse(_stream_events(reply, model, include_usage))
        else:
            self._json(200, _whole(reply, model))

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _raw(self, data: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in events:
                text = event if isinstance(event, str) else json.dumps(event)
                self.wfile.write(f"data: {text}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _usage(reply: Reply) -> dict[str, Any] | None:
    if reply.usage is None:
        return None
    prompt = int(reply.usage.get("prompt_tokens", 0))
    completion = int(reply.usage.get("completion_tokens", 0))
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if "reasoning_tokens" in reply.usage:
        out["completion_tokens_details"] = {
            "reasoning_tokens": int(reply.usage["reasoning_tokens"])
        }
    return out


def _whole(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": _usage(reply),
    }


def _stream_events(reply: Reply, model: str, include_usage: bool) -> Iterator[Any]:
    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""}, None)
    text = reply.content
    pieces = max(1, reply.chunks)
    size = max(1, math.ceil(len(text) / pieces))
    for start in range(0, len(text), size):
        if reply.chunk_delay_s:
            time.sleep(reply.chunk_delay_s)
        yield chunk({"content": text[start : start + size]}, None)
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": _usage(reply),
        }
    yield "[DONE]"


def _serve() -> Iterator[ModelServer]:
    """A started :class:`ModelServer` (queue + optional responder/echo set by the test)."""
    server = ModelServer().start()
    try:
        yield server
    finally:
        server.stop()


if pytest is not None:
    model_server_fixture = pytest.fixture(name="model_server")(_serve)
    #: The same, one server for a whole module (for a module-scoped fixture that calls it).
    module_model_server_fixture = pytest.fixture(name="model_server", scope="module")(_serve)


def main() -> None:
    """``python model_server.py PORT_FILE``: an echo server (stdlib only, so any Python runs
    it) that writes its base URL to PORT_FILE and serves until it is terminated."""
    import signal
    import sys
    from pathlib import Path

    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # before the threads start: they inherit it
    server = ModelServer(echo=True).start()
    Path(sys.argv[1]).write_text(server.base_url + "\n", encoding="utf-8")
    signal.sigwait(stop)
    server.stop()


if __name__ == "__main__":
    main()


__all__ = [
    "ModelServer",
    "Recorded",
    "Reply",
    "echo_reply",
    "model_server_fixture",
    "module_model_server_fixture",
    "prompt_quoting_error",
    "transcript_lines",
]
