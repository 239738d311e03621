"""Serve the console with uvicorn on a socket bound here (so ``--port 0`` can print the port the
system chose), until SIGINT / SIGTERM."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

from dsh_memory_worker.worker.console.app import build_app
from dsh_memory_worker.worker.console.base import Console
from dsh_memory_worker.worker.console.security import Access
from dsh_memory_worker.worker.jobs.runtime import Runtime

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``OSError`` when taken or not an address here)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(
    runtime: Runtime,
    shelf: str,
    sock: socket.socket,
    host: str,
    *,
    exposed: bool,
    announce: Callable[[str], None],
) -> None:
    """Run the console on ``sock`` until stopped; ``announce(url)`` is called once listening."""
    port = int(sock.getsockname()[1])
    access = Access.local(host, port, exposed=exposed)
    console = Console(runtime, shelf, access)
    config = uvicorn.Config(
        build_app(console),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    announce(f"http://{url_host(host)}:{port}/?token={access.token}")
    try:
        server.run(sockets=[sock])
    finally:
        console.close()
