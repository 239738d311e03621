"""The helpers the commands share when they run: settings, logging, the state database, the
store and metrics, each failing as one line and an exit status.

Only command bodies import this module; see :mod:`worker.commands.options`. Its top level loads
settings and logging only: the runtime (SQLAlchemy, the stores, metrics) is imported by the helper
that uses it, so a command that ends early (``run --once`` on a home at rest) never loads it.
"""

from __future__ import annotations

import logging
import re
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from dsh_memory_worker.worker.commands.options import err, say
from dsh_memory_worker.worker.logs import setup_logging as configure_logging
from dsh_memory_worker.worker.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.state.database import StateDB
    from dsh_memory_worker.worker.stop_flag import SignalStop


def load_or_exit(config: Path | None, **overrides: Any) -> Settings:
    """Settings with command-line overrides; one line and exit 2 when invalid."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return load_settings(config, **given)
    except SettingsError as exc:
        err.print(f"memory-worker: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


def setup_logging(settings: Settings) -> None:
    """Configure the one logging tree (:func:`worker.logs.setup_logging`) for this command."""
    configure_logging(
        settings.log_level, json_lines=settings.log_json, console=err if err.is_terminal else None
    )


def command_settings(config: Path | None, **overrides: Any) -> Settings:
    """A command's settings (:func:`load_or_exit`) with its logging set up
    (:func:`setup_logging`)."""
    settings = load_or_exit(config, **overrides)
    setup_logging(settings)
    return settings


def serve_metrics(settings: Settings, state: StateDB | None = None) -> None:
    """Expose the Prometheus metrics on ``metrics_port`` when one is configured, with the
    gauges read from the state database (``state``, or one opened on the configured URL)."""
    if settings.metrics_port is None:
        return
    from dsh_memory_worker.worker.observability import serve_metrics as start_metrics_server
    from dsh_memory_worker.worker.state.database import StateDB

    try:
        if state is None:
            state = StateDB(settings.effective_state_url)
        start_metrics_server(settings.metrics_port, state, settings.store_shelf)
    except OSError as exc:
        say(
            f"memory-worker: metrics port {settings.metrics_port} unavailable: "
            f"{exc.strerror or exc}; continuing without metrics",
            level=logging.WARNING,
        )


def db_error_line(exc: BaseException) -> str:
    """One line of a state-database error, without SQLAlchemy's "Background on this error" link;
    a full disk is named as such, with where (:mod:`worker.state.disk_full`)."""
    from dsh_memory_worker.worker.state.disk_full import disk_full

    full = disk_full(exc)
    if full is not None:
        return full
    text = re.sub(r"\s*\(Background on this error at: [^)]*\)", "", str(exc))
    return " ".join(text.split())[:300]


def open_runtime_or_exit(settings: Settings, kind: str, *, force_idle: bool = False) -> Runtime:
    """The runtime (state migrated to head); an unusable state database is one line, exit 2."""
    from sqlalchemy.exc import SQLAlchemyError

    from dsh_memory_worker.worker.jobs.runtime import build_runtime, default_owner
    from dsh_memory_worker.worker.state.db import StateURLError
    from dsh_memory_worker.worker.state.revision_files import MigrationsNotFound

    try:
        return build_runtime(settings, owner=default_owner(kind), force_idle=force_idle)
    except MigrationsNotFound as exc:
        say(f"memory-worker: {exc}", level=logging.ERROR)
        raise typer.Exit(2) from None
    except Exception as exc:
        if not isinstance(
            exc, (StateURLError, SQLAlchemyError, OSError)
        ) and not _alembic_command_error(exc):
            raise
        line = db_error_line(exc)
        say(f"memory-worker: cannot open the state database: {line}", level=logging.ERROR)
        raise typer.Exit(2) from None


def command_runtime(
    command: str, config: Path | None, *, shelf: str | None, dsh_home: Path | None
) -> tuple[Settings, Runtime]:
    """A command's settings (``--config``, ``--shelf``, ``--dsh-home``), its logging and its
    runtime, or one line and exit 2 (:func:`load_or_exit`, :func:`open_runtime_or_exit`)."""
    settings = command_settings(config, store_shelf=shelf, dsh_home=dsh_home)
    return settings, open_runtime_or_exit(settings, command)


def _alembic_command_error(exc: BaseException) -> bool:
    """An Alembic ``CommandError`` (e.g. the database is at a revision this install does not
    have). Alembic is imported only by a process that migrates: no Alembic, no such error."""
    errors = sys.modules.get("alembic.util.exc")
    return errors is not None and isinstance(exc, errors.CommandError)


def check_store_binary_or_exit(settings: Settings) -> None:
    """A `cli` / `mcp` store binary that is not installed is one line, exit 2 (it would
    otherwise fail every job, retried, forever)."""
    if settings.store_transport != "lite" and shutil.which(settings.store_binary) is None:
        say(
            f"memory-worker: cannot open the store: the {settings.store_transport} "
            f"transport's binary {settings.store_binary!r} was not found (set "
            "store_binary / MEMORY_WORKER_STORE_BINARY)",
            level=logging.ERROR,
        )
        raise typer.Exit(2)


def check_store_or_exit(runtime: Runtime, shelf: str) -> None:
    """Open the store once up front; an unusable one is one line, exit 2."""
    from dsh_memory_worker.memory.store.base import StoreError

    check_store_binary_or_exit(runtime.settings)
    try:
        runtime.store(shelf)
    except (StoreError, OSError) as exc:  # OSError: e.g. a hypatia-lite home it cannot create
        say(f"memory-worker: cannot open the store: {exc}", level=logging.ERROR)
        raise typer.Exit(2) from None


def stop_on_signals() -> SignalStop:
    """SIGINT and SIGTERM set the returned stop (safely: see :mod:`worker.stop_flag`)."""
    from dsh_memory_worker.worker.stop_flag import stop_on

    return stop_on(signal.SIGINT, signal.SIGTERM)


def missing_distributed() -> list[str]:
    """The Celery distributions the ``distributed`` extra brings that are not installed (empty
    with the extra): looked up without importing them."""
    import importlib.util
    import sys

    missing = []
    for name in ("celery", "kombu"):
        if sys.modules.get(name) is not None:  # imported already (its spec may be unset)
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or half-removed distribution
            found = False
        if not found:
            missing.append(name)
    return missing


def require_distributed(command: str) -> None:
    """The distributed commands need the ``distributed`` extra (Celery, kombu, psycopg); without
    it, one line saying how to install it, exit 2."""
    missing = missing_distributed()
    if missing:
        err.print(
            f"memory-worker {command}: {', '.join(missing)} not installed; install the "
            "distributed extra: pip install 'dsh-memory-worker[distributed]'",
            soft_wrap=True,
            markup=False,
        )
        raise typer.Exit(2)
