"""The console's guard is a pure ASGI middleware: a streamed response of several megabytes passes
through it chunk for chunk, with the guard's headers and cookies added to its start; a refused
request never reaches the application."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message

from dsh_memory_worker.worker.console.security import HEADERS, Access, Guard

_ACCESS = Access.local("127.0.0.1", 8765, token="t0ken")
_CHUNK = bytes(range(256)) * 4096  # 1 MiB
_CHUNKS = 5
_reached: list[str] = []


async def _stream(request: Request) -> Response:
    _reached.append(request.url.path)

    async def body() -> AsyncIterator[bytes]:
        for index in range(_CHUNKS):
            yield bytes([index]) + _CHUNK

    return StreamingResponse(body(), media_type="application/octet-stream")


_APP = Starlette(
    routes=[Route("/stream", _stream, methods=["GET", "POST"])],
    middleware=[Middleware(Guard, access=_ACCESS)],
)


def _call(method: str, headers: dict[str, str]) -> list[Message]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/stream",
        "raw_path": b"/stream",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    sent: list[Message] = []
    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def run() -> None:
        done = asyncio.Event()

        async def receive() -> Message:
            if requests:
                return requests.pop()
            await done.wait()  # the client stays connected until the response is complete
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await asyncio.wait_for(_APP(scope, receive, send), timeout=30)

    asyncio.run(run())
    return sent


def test_a_streamed_response_passes_intact_with_the_guards_headers() -> None:
    _reached.clear()
    cookies = f"{_ACCESS.cookie}=t0ken; {_ACCESS.csrf_cookie}=c5rf"
    sent = _call("GET", {"host": "127.0.0.1:8765", "cookie": cookies})
    start, *bodies = sent
    assert start["type"] == "http.response.start" and start["status"] == 200
    headers = [(k.decode(), v.decode()) for k, v in start["headers"]]
    for name, value in HEADERS.items():
        assert [v for k, v in headers if k == name.lower()] == [value]
    assert not [v for k, v in headers if k == "set-cookie"]  # the browser has both cookies
    chunks = [m["body"] for m in bodies if m["body"]]
    assert len(chunks) == _CHUNKS  # streamed: one message per chunk, none buffered together
    body = b"".join(chunks)
    expected = b"".join(bytes([i]) + _CHUNK for i in range(_CHUNKS))
    assert len(body) == _CHUNKS * (len(_CHUNK) + 1) == 5_242_885
    assert hashlib.sha256(body).digest() == hashlib.sha256(expected).digest()
    assert bodies[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert _reached == ["/stream"]


def test_a_browser_without_a_csrf_cookie_gets_both_cookies() -> None:
    _reached.clear()
    sent = _call("GET", {"host": "localhost:8765", "cookie": f"{_ACCESS.cookie}=t0ken"})
    cookies = [v.decode() for k, v in sent[0]["headers"] if k == b"set-cookie"]
    assert [c.split("=", 1)[0] for c in cookies] == [_ACCESS.cookie, _ACCESS.csrf_cookie]
    assert cookies[0].startswith(f"{_ACCESS.cookie}=t0ken;")
    assert all("HttpOnly" in c and "SameSite=strict" in c and "Path=/" in c for c in cookies)
    assert _reached == ["/stream"]


def test_refused_requests_never_reach_the_application() -> None:
    _reached.clear()
    good = f"{_ACCESS.cookie}=t0ken"
    for method, headers, status in (
        ("GET", {"host": "evil.example:8765", "cookie": good}, 403),
        ("GET", {"host": "127.0.0.1:8765"}, 401),
        ("POST", {"host": "127.0.0.1:8765", "cookie": good, "origin": "http://evil"}, 403),
    ):
        start, body = _call(method, headers)
        assert start["status"] == status
        assert body["body"].decode().startswith(f"{status} ")
        assert (b"cache-control", b"no-store") in start["headers"]
    assert _reached == []
