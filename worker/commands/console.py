"""``memory-worker console [--port N] [--host H --i-know-it-is-exposed]`` — a local web page over
the worker's state database and shelf: sessions, a session as memory sees it, search, the audit
trail, health; forget, retract and verify-forgetting through the same jobs as those commands.

Binds 127.0.0.1 by default and prints a URL with a random token (required on every request). See
``docs/console.md``. Exit status 2 when the configuration, state database, store or address is
unusable.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dsh_memory_worker.worker.commands.options import ConfigOption, ShelfOption, err


def console(
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port).")
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on (default 127.0.0.1; any other address also needs "
            "--i-know-it-is-exposed).",
        ),
    ] = "127.0.0.1",
    exposed: Annotated[
        bool,
        typer.Option(
            "--i-know-it-is-exposed", help="Allow --host to be an address other machines can reach."
        ),
    ] = False,
    shelf: ShelfOption = None,
    config: ConfigOption = None,
) -> None:
    """Serve a local web page to see what memory holds, and make it forget."""
    # Imported when the command runs, not at start-up: the web stack (Starlette, Jinja2,
    # uvicorn) is loaded by this command only.
    from dsh_memory_worker.worker.commands.common import (
        check_store_or_exit,
        command_settings,
        open_runtime_or_exit,
    )
    from dsh_memory_worker.worker.console.serve import LOCAL_HOSTS, bind, serve, url_host

    say = "memory-worker console: "
    if host not in LOCAL_HOSTS and not exposed:
        err.print(
            f"{say}--host {host} would let other machines reach the console; add "
            "--i-know-it-is-exposed to do that",
            soft_wrap=True,
            markup=False,
        )
        raise typer.Exit(2)
    settings = command_settings(config, store_shelf=shelf)
    try:
        sock = bind(host, port)
    except OSError as exc:
        err.print(
            f"{say}cannot listen on {url_host(host)}:{port}: {exc.strerror or exc}",
            soft_wrap=True,
            markup=False,
        )
        raise typer.Exit(2) from None
    runtime = open_runtime_or_exit(settings, "console")
    check_store_or_exit(runtime, settings.store_shelf)
    if host not in LOCAL_HOSTS:
        err.print(
            f"{say}listening on {url_host(host)}:{sock.getsockname()[1]}: anyone who can "
            "reach it and has the token can read every session's messages and memory of "
            f"shelf {settings.store_shelf!r} and forget sessions, over plain HTTP",
            soft_wrap=True,
            markup=False,
        )

    def announce(url: str) -> None:
        typer.echo(f"memory console of shelf {settings.store_shelf!r}: {url}")
        typer.echo("(the token in this URL is required; Ctrl-C stops the console)")

    serve(runtime, settings.store_shelf, sock, host, exposed=exposed, announce=announce)
