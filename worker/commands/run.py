"""``memory-worker run`` — embedded mode: watcher + in-process runner, SQLite state, hypatia-lite.

Follows the DSH home until stopped (Ctrl-C / SIGTERM). ``--once`` processes what is on disk,
treating every session as idle (every tail is flushed), shows a progress bar and exits;
``--once --jobs N`` does it in N processes first (:mod:`worker.once_parallel`).
"""

from __future__ import annotations

import logging
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy.exc import SQLAlchemyError

from memory.store.base import StoreError
from worker.cli import app
from worker.commands.config import ConfigOption
from worker.jobs.reconsolidate import backfill_consolidation, queued_sessions
from worker.jobs.retract import resume_repairs
from worker.observability import JsonFormatter, PrintableFormatter
from worker.observability import serve_metrics as start_metrics_server
from worker.once_children import OnceChildren
from worker.once_parallel import run_once
from worker.pipeline import (
    JOB_CONSOLIDATE,
    Runtime,
    build_runtime,
    default_owner,
    owe_consolidation,
    reconcile_with_store,
)
from worker.runner import InProcessRunner
from worker.settings import Settings, SettingsError, load_settings
from worker.state.database import StateDB
from worker.state.db import StateURLError
from worker.watch import ScanReport, Watcher

DshHomeOption = Annotated[
    Path | None,
    typer.Option("--dsh-home", help="DSH home to follow (default: $DSH_HOME or ~/.dsh)."),
]
ShelfOption = Annotated[
    str | None,
    typer.Option("--shelf", help="Store shelf to use (default: setting `store_shelf`, `default`)."),
]
MetricsPortOption = Annotated[
    int | None,
    typer.Option("--metrics-port", help="Serve Prometheus metrics on this port "
                 "(default: setting `metrics_port`, off)."),
]

err = Console(stderr=True)


def load_or_exit(config: Path | None, **overrides: Any) -> Settings:
    """Settings with command-line overrides; one line and exit 2 when invalid."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return load_settings(config, **given)
    except SettingsError as exc:
        err.print(f"memory-worker: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


def setup_logging(settings: Settings) -> None:
    """One line per event on stderr at the configured level (Rich on a terminal, plain text
    with a timestamp otherwise, so service logs stay greppable)."""
    root = logging.getLogger("memory_worker")
    if not root.handlers:
        handler: logging.Handler
        if settings.log_json:  # one JSON object per line (log shippers)
            handler = logging.StreamHandler()
            handler.setFormatter(JsonFormatter())
        elif err.is_terminal:
            handler = RichHandler(console=err, show_path=False, markup=False)
            handler.setFormatter(PrintableFormatter("%(message)s"))
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(message)s"))
        root.addHandler(handler)
    root.setLevel(settings.log_level)
    root.propagate = False


def serve_metrics(settings: Settings, state: StateDB | None = None) -> None:
    """Expose the Prometheus metrics on ``metrics_port`` when one is configured, with the
    gauges read from the state database (``state``, or one opened on the configured URL)."""
    if settings.metrics_port is None:
        return
    try:
        if state is None:
            state = StateDB(settings.effective_state_url)
        start_metrics_server(settings.metrics_port, state, settings.store_shelf)
    except OSError as exc:
        err.print(f"memory-worker: metrics port {settings.metrics_port} unavailable: "
                  f"{escape(str(exc.strerror or exc))}; continuing without metrics", soft_wrap=True)


def db_error_line(exc: BaseException) -> str:
    """One line of a state-database error, without SQLAlchemy's "Background on this error" link."""
    text = re.sub(r"\s*\(Background on this error at: [^)]*\)", "", str(exc))
    return " ".join(text.split())[:300]


def open_runtime_or_exit(settings: Settings, kind: str, *, force_idle: bool = False) -> Runtime:
    """The runtime (state migrated to head); an unusable state database is one line, exit 2."""
    try:
        return build_runtime(settings, owner=default_owner(kind), force_idle=force_idle)
    except (StateURLError, SQLAlchemyError, OSError) as exc:
        line = db_error_line(exc)
        err.print(f"memory-worker: cannot open the state database: {escape(line)}", soft_wrap=True)
        raise typer.Exit(2) from None


def check_store_binary_or_exit(settings: Settings) -> None:
    """A `cli` / `mcp` store binary that is not installed is one line, exit 2 (it would
    otherwise fail every job, retried, forever)."""
    if settings.store_transport != "lite" and shutil.which(settings.store_binary) is None:
        err.print(f"memory-worker: cannot open the store: the {settings.store_transport} "
                  f"transport's binary {settings.store_binary!r} was not found (set "
                  "store_binary / MEMORY_WORKER_STORE_BINARY)", soft_wrap=True, markup=False)
        raise typer.Exit(2)


def check_store_or_exit(runtime: Runtime, shelf: str) -> None:
    """Open the store once up front; an unusable one is one line, exit 2."""
    check_store_binary_or_exit(runtime.settings)
    try:
        runtime.store(shelf)
    except (StoreError, OSError) as exc:  # OSError: e.g. a hypatia-lite home it cannot create
        err.print(f"memory-worker: cannot open the store: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


def stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return stop


@app.command()
def run(
    once: Annotated[
        bool, typer.Option("--once", help="Process what is on disk (all sessions idle), exit.")
    ] = False,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="With --once: process the sessions in N "
                          "processes, then finish in this one (default 1).")
    ] = 1,
    dsh_home: DshHomeOption = None,
    shelf: ShelfOption = None,
    metrics_port: MetricsPortOption = None,
    config: ConfigOption = None,
) -> None:
    """Embedded mode: follow the DSH home and write memory in this process."""
    if jobs < 1:
        err.print(f"memory-worker: --jobs must be 1 or more (got {jobs})", soft_wrap=True)
        raise typer.Exit(2)
    if jobs > 1 and not once:
        err.print("memory-worker: --jobs needs --once (following a DSH home runs in one "
                  "process)", soft_wrap=True)
        raise typer.Exit(2)
    settings = load_or_exit(config, dsh_home=dsh_home, store_shelf=shelf,
                            metrics_port=metrics_port)
    setup_logging(settings)
    # Forked now, before this process opens the state database or the store (OnceChildren).
    children = OnceChildren(settings, settings.store_shelf, jobs) if jobs > 1 else None
    try:
        _run(settings, once, children)
    finally:
        if children is not None:
            children.stop()


def _run(settings: Settings, once: bool, children: OnceChildren | None) -> None:
    runtime = open_runtime_or_exit(settings, "run", force_idle=once)
    target = settings.store_shelf
    check_store_or_exit(runtime, target)
    if settings.reconcile_on_startup:
        reconcile_with_store(runtime, target)
    resume_repairs(runtime, target)  # finish repairs a crash interrupted
    backfill_consolidation(runtime, target)
    try:
        if once:
            _run_once(runtime, target, children)
        else:
            _follow(runtime, target)
    except SQLAlchemyError as exc:
        line = db_error_line(exc)
        err.print(f"memory-worker: the state database failed: {escape(line)}", soft_wrap=True)
        raise typer.Exit(2) from None
    finally:
        runtime.close()


def _run_once(runtime: Runtime, shelf: str, children: OnceChildren | None) -> None:
    # The progress bar and the summary tell the story; per-job lines only when asked (DEBUG).
    quiet = logging.getLogger("memory_worker")
    if quiet.level < logging.WARNING and runtime.settings.log_level != "DEBUG":
        quiet.setLevel(logging.WARNING)
    if not runtime.settings.sessions_root.is_dir():
        err.print(
            f"memory-worker: DSH home {runtime.settings.dsh_home} has no sessions directory "
            f"({runtime.settings.sessions_root}); nothing to do (check --dsh-home / $DSH_HOME)",
            soft_wrap=True,
        )
        raise typer.Exit(1)
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        first = "reading logs" if children is None else f"reading logs ({children.count} processes)"
        bar = progress.add_task(first, total=None)

        def _show(description: str | None, completed: int, total: int | None) -> None:
            progress.update(bar, description=description, completed=completed, total=total)

        def _say(line: str) -> None:
            err.print(line, soft_wrap=True, markup=False)

        totals = run_once(runtime, shelf, children=children, progress=_show, say=_say)
    err.print(totals.summary(), soft_wrap=True, markup=False)
    if totals.failed or totals.unscanned:
        raise typer.Exit(1)


_REQUEST_POLL_S = 5.0


def _submit_reconsolidations(runtime: Runtime, runner: InProcessRunner, shelf: str) -> None:
    """Hint ``consolidate`` for every session with a queued reconsolidation request (recorded by
    ``memory-worker reconsolidate`` or the startup backfill)."""
    for session_id in queued_sessions(runtime, shelf):
        runner.submit(JOB_CONSOLIDATE, session_id, shelf)


def _follow(runtime: Runtime, shelf: str) -> None:
    serve_metrics(runtime.settings, runtime.state)
    stop = stop_on_signals()
    runner = InProcessRunner(runtime)
    owe_consolidation(runtime, runner.submit)
    watcher = Watcher(runtime, runner.submit, shelf=shelf,
                      after_session=lambda _sid: runner.run_ready())
    err.print(
        f"following {runtime.settings.sessions_root} → shelf {shelf!r} (Ctrl-C to stop)",
        soft_wrap=True,
    )
    next_requests = 0.0

    def _work(_report: ScanReport) -> None:
        nonlocal next_requests
        if time.monotonic() >= next_requests:  # reconsolidation requests from the CLI
            next_requests = time.monotonic() + _REQUEST_POLL_S
            _submit_reconsolidations(runtime, runner, shelf)
        runner.run_ready()

    watcher.run(stop, after_poll=_work)
    err.print(f"stopped; {runner.stats.written} entries written, "
              f"{runner.stats.retracted} retracted", soft_wrap=True)
