"""What every command module shares at import time: the common options and the stderr console.

Start-up time: this module, :mod:`worker.cli` and the command modules' top level import only
Typer, Rich and the standard library, so ``memory-worker --help`` and ``memory-worker CMD --help``
never load the runtime (pydantic, SQLAlchemy, Celery, the stores). Each command imports what it
needs when it runs (the helpers in :mod:`worker.commands.common`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from dsh_memory_worker.memory.printable import printable


def command_group(name: str, help: str, **extra: Any) -> typer.Typer:
    """A Typer app (the ``memory-worker`` root, or a group such as ``segments``) that shows its
    help when called bare. Plain Click help: Typer's Rich help formatter imports
    rich.markdown, markdown_it and rich.traceback (about half of ``--help``'s start-up time)
    for panels we do not need."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        **extra,
    )


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="TOML config file (default: $MEMORY_WORKER_CONFIG)."),
]
#: The one ``--dsh-home`` of every command that reads the logs.
DshHomeOption = Annotated[
    Path | None,
    typer.Option("--dsh-home", help="DSH home whose logs to read (default: $DSH_HOME or ~/.dsh)."),
]
WideOption = Annotated[
    bool,
    typer.Option(
        "--wide", help="Print tables at their full width instead of the terminal's (or use --json)."
    ),
]
ShelfOption = Annotated[
    str | None,
    typer.Option("--shelf", help="Store shelf to use (default: setting `store_shelf`, `default`)."),
]
MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        help="Serve Prometheus metrics on this port (default: setting `metrics_port`, off).",
    ),
]
QueueOption = Annotated[
    str, typer.Option("--queue", help="Celery queue the hints go to (and workers consume).")
]

err = Console(stderr=True)


def say(line: str, *, level: int = logging.INFO, event: str | None = None) -> None:
    """One line of a running command on standard error (what it follows, a problem, its
    summary): in JSON log mode (``log_json``) a JSON record of the ``memory-worker`` logger with
    ``event`` when given, so the log stream stays JSON only (:func:`worker.logs.record`)."""
    from dsh_memory_worker.worker.logs import json_mode, record

    if json_mode():
        record(line, level=level, **({"event": event} if event else {}))
    else:
        err.print(line, soft_wrap=True, markup=False, highlight=False)


def shown(value: object) -> str:
    """Text from disk or from the user on a Rich line or table cell: control characters escaped
    (:func:`memory.printable.printable`), Rich markup literal."""
    return escape(printable(value))


def refuse_session_ids_or_exit(command: str, ids: Iterable[str]) -> None:
    """Session ids no state database can hold
    (:func:`worker.watch.scan_problems.session_id_problem`: a NUL, undecodable bytes, too long)
    are refused before anything runs, the same on SQLite and PostgreSQL: one line each, exit 2."""
    # Imported when the command runs (the limit comes from the state model).
    from dsh_memory_worker.worker.watch.scan_problems import session_id_problem

    refused = [
        (sid, why) for sid in dict.fromkeys(ids) if (why := session_id_problem(sid)) is not None
    ]
    for sid, why in refused:
        head = sid if len(sid) <= 80 else sid[:60] + "…"
        err.print(
            f"memory-worker {command}: session id {printable(head)} {why}; no session "
            "has such an id, nothing was done",
            soft_wrap=True,
            markup=False,
        )
    if refused:
        raise typer.Exit(2)
