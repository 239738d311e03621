"""Build a ``MemoryStore`` from a transport name: ``lite`` in-process, ``cli`` or ``mcp``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from dsh_memory_worker.memory.store.base import FatalStoreError, MemoryStore, StoreConfigError
from dsh_memory_worker.memory.store.breaker import Breaker

Transport = Literal["lite", "cli", "mcp"]
TRANSPORTS: tuple[Transport, ...] = ("lite", "cli", "mcp")
LITE_HOME_ENV = "HYPATIA_LITE_HOME"
#: A PostgreSQL server refusing the login itself (libpq's texts): no retry gets past it.
_LOGIN_REFUSED = re.compile(
    r"password authentication failed|authentication failed|role \"[^\"]*\" does not exist"
    r"|database \"[^\"]*\" does not exist|no pg_hba\.conf entry|permission denied"
)


@dataclass(frozen=True)
class StoreConfig:
    """Which store to open. ``binary`` is used by ``cli`` and ``mcp`` (``hypatia`` or
    ``hypatia-lite``); ``lite_home`` is hypatia-lite's home (in-process, or passed to a
    ``hypatia-lite`` subprocess as ``HYPATIA_LITE_HOME``). ``shelf_url``: a PostgreSQL URL that
    ``shelf`` is (registered in ``lite_home`` on open, as ``hypatia-lite connect <url> -n
    <shelf>`` would), for hypatia-lite in process or as the ``cli`` / ``mcp`` binary."""

    transport: Transport = "lite"
    binary: str = "hypatia"
    shelf: str = "default"
    timeout_s: float = 30.0
    idle_close_s: float = 60.0
    lite_home: Path | None = None
    shelf_url: str | None = None
    breaker: Breaker | None = None
    """Counts the ``cli`` / ``mcp`` store's consecutive timeouts (:mod:`memory.store.breaker`);
    the caller keeps it across reopenings. ``None``: a new one per store."""


def _register(config: StoreConfig) -> None:
    from hypatia_lite import shelves

    url = config.shelf_url or ""
    if not shelves.is_url(url):
        raise StoreConfigError(f"invalid shelf URL {url!r}: it must start with postgresql://")
    try:
        shelves.ensure(shelves.lite_home(config.lite_home), config.shelf, url)
    except shelves.ShelfError as err:  # a registration refused stays refused
        raise StoreConfigError(str(err)) from err


def open_store(config: StoreConfig) -> MemoryStore:
    """Open the configured store; a bad transport or shelf is a one-line ``FatalStoreError``,
    and a ``StoreConfigError`` when only a change of configuration can heal it (a shelf name or
    URL, a refused registration, a login the PostgreSQL shelf's server refuses)."""
    if not config.shelf or any(ch.isspace() for ch in config.shelf):
        raise StoreConfigError(f"invalid shelf name {config.shelf!r}: it must be one word")
    if config.timeout_s <= 0:
        raise StoreConfigError(f"invalid store timeout {config.timeout_s!r}: it must be positive")
    if config.shelf_url is not None:
        _register(config)
    env = {LITE_HOME_ENV: str(config.lite_home)} if config.lite_home is not None else None
    if config.transport == "lite":
        # hypatia-lite in process: the store's own class is the adapter (it implements the seam).
        from hypatia_lite.store import LiteStore

        try:
            return cast(MemoryStore, LiteStore(config.shelf, home=config.lite_home))
        except FatalStoreError as err:
            if config.shelf_url is not None and _LOGIN_REFUSED.search(str(err)):
                raise StoreConfigError(str(err)) from err
            raise
    if config.transport == "cli":
        from dsh_memory_worker.memory.store.cli import (
            CliStore,
        )  # start-up time: tenacity, subprocess plumbing

        return CliStore(
            config.shelf, config.binary, timeout_s=config.timeout_s, env=env, breaker=config.breaker
        )
    if config.transport == "mcp":
        # Imported here, not at module level: the MCP client (`mcp`, `anyio`) costs ~27 MB and
        # start-up time that a worker on the lite or cli transport never needs (issue 16, idle RSS).
        from dsh_memory_worker.memory.store.mcp import McpStore

        return McpStore(
            config.shelf,
            config.binary,
            timeout_s=config.timeout_s,
            idle_close_s=config.idle_close_s,
            env=env,
            breaker=config.breaker,
        )
    raise StoreConfigError(
        f"unknown store transport {config.transport!r}: use one of {', '.join(TRANSPORTS)}"
    )
