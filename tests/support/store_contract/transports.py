"""Open a ``MemoryStore`` per transport over a throwaway home.

hypatia-lite runs in-process, as a ``hypatia-lite`` subprocess per call (CLI adapter) and as
``hypatia-lite mcp`` (MCP adapter), each over a SQLite shelf and (the ``-pg`` transports) over a
PostgreSQL shelf in a throwaway database of the local server; a real ``hypatia`` on PATH is
driven the same two ways with ``HOME`` pointed at a temp dir and a throwaway shelf made by
``hypatia connect``.

The adapters run hypatia-lite as configured by :func:`lite_command`: by default a launcher that
has the pre-imported fork server of :mod:`cli_fork` fork the command (a real process on the
adapter's pipes, with its argv, environment and exit status), so a call costs no interpreter
start-up; ``fresh=True`` configures the installed ``hypatia-lite`` console script itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_fork import launcher
from state_db_support import throwaway_pg_database

from dsh_memory_worker.memory.store.base import MemoryStore
from dsh_memory_worker.memory.store.cli import CliStore
from dsh_memory_worker.memory.store.factory import StoreConfig, open_store
from dsh_memory_worker.memory.store.mcp import McpStore
from hypatia_lite import shelves

PG_SHELF = "pg"
LITE_TRANSPORTS = ("lite", "cli-lite", "mcp-lite", "lite-pg", "cli-lite-pg", "mcp-lite-pg")
REAL_TRANSPORTS = ("cli-hypatia", "mcp-hypatia")
ALL_TRANSPORTS = LITE_TRANSPORTS + REAL_TRANSPORTS


def lite_binary() -> str:
    """The ``hypatia-lite`` console script of the running virtualenv (or on PATH)."""
    beside = Path(sys.executable).parent / "hypatia-lite"
    if beside.exists():
        return str(beside)
    found = shutil.which("hypatia-lite")
    if found is None:
        raise RuntimeError("hypatia-lite is not installed in this environment")
    return found


def lite_command(*, fresh: bool = False) -> str:
    """What an adapter under test runs as ``hypatia-lite``: the fork server's launcher, or with
    ``fresh`` the installed console script (a fresh interpreter per call)."""
    return lite_binary() if fresh else launcher("hypatia-lite")


def real_hypatia() -> str | None:
    return shutil.which("hypatia")


def require_real_hypatia() -> str:
    binary = real_hypatia()
    if binary is None:
        pytest.skip("no real `hypatia` binary on PATH (these tests need one)")
    return binary


@dataclass
class Harness:
    """A store under test plus what the assertions need to know about its transport."""

    transport: str
    store: MemoryStore
    semantic: bool  # True when `similar` has an embedder (hypatia-lite's hashing embedder)
    max_data_bytes: int | None  # the CLI's --data cap; None when content is stored whole
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Close the store, then drop what the transport made (a PostgreSQL database)."""
        self.store.close()
        for cleanup in reversed(self.cleanups):
            cleanup()


@contextmanager
def pg_shelf(home: Path, name: str = PG_SHELF) -> Iterator[str]:
    """Connect shelf ``name`` of ``home`` to a throwaway PostgreSQL database; dropped after."""
    with throwaway_pg_database() as url:
        shelves.connect(home, url, name)
        yield name


def _lite_env(home: Path) -> dict[str, str]:
    return {"HYPATIA_LITE_HOME": str(home), "HYPATIA_LITE_EMBEDDER": "hash"}


def real_shelf(binary: str, home: Path) -> tuple[str, dict[str, str]]:
    """Connect a throwaway shelf under ``home`` (used as ``HOME``); return its name and env."""
    env = {"HOME": str(home)}
    name = f"contract-{uuid.uuid4().hex[:8]}"
    shelf_dir = home / "shelves" / name
    shelf_dir.mkdir(parents=True)
    subprocess.run(
        [binary, "connect", str(shelf_dir), "-n", name],
        env={**os.environ, **env},
        cwd=home,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return name, env


def open_harness(
    transport: str, home: Path, *, shelf: str = "default", fresh: bool = False
) -> Harness:
    """A store over ``home`` for one transport (the same home gives the same shelf contents);
    a ``-pg`` transport first connects ``home``'s shelf ``pg`` to a new PostgreSQL database.
    ``fresh``: the adapters run the installed console script (:func:`lite_command`)."""
    if transport.endswith("-pg"):
        stack = ExitStack()
        name = stack.enter_context(pg_shelf(home))
        try:
            opened = open_harness(transport[: -len("-pg")], home, shelf=name, fresh=fresh)
        except BaseException:
            stack.close()
            raise
        opened.transport = transport
        opened.cleanups.append(stack.close)
        return opened
    if transport == "lite":
        store = open_store(StoreConfig(transport="lite", shelf=shelf, lite_home=home))
        return Harness(transport, store, semantic=True, max_data_bytes=None)
    if transport in ("cli-lite", "mcp-lite"):
        env, command = _lite_env(home), lite_command(fresh=fresh)
        if transport == "cli-lite":
            cli = CliStore(shelf, command, env=env, cwd=home, timeout_s=60)
            return Harness(transport, cli, semantic=True, max_data_bytes=cli.max_data_bytes)
        mcp = McpStore(shelf, command, env=env, cwd=home, timeout_s=60)
        return Harness(transport, mcp, semantic=True, max_data_bytes=None)
    binary = require_real_hypatia()
    name, env = real_shelf(binary, home)
    if transport == "cli-hypatia":
        cli = CliStore(name, binary, env=env, cwd=home, timeout_s=60)
        return Harness(transport, cli, semantic=False, max_data_bytes=cli.max_data_bytes)
    mcp = McpStore(name, binary, env=env, cwd=home, timeout_s=60)
    return Harness(transport, mcp, semantic=False, max_data_bytes=None)


def open_pair(
    family: str, home: Path, shelf: str = "default", *, fresh: bool = False
) -> tuple[CliStore, McpStore]:
    """A CLI adapter and an MCP adapter over the same shelf (``lite`` or ``hypatia``);
    ``fresh``: hypatia-lite's installed console script (:func:`lite_command`)."""
    if family == "lite":
        env, binary = _lite_env(home), lite_command(fresh=fresh)
    else:
        binary = require_real_hypatia()
        shelf, env = real_shelf(binary, home)
    return (
        CliStore(shelf, binary, env=env, cwd=home, timeout_s=60),
        McpStore(shelf, binary, env=env, cwd=home, timeout_s=60),
    )
