"""What every command module shares at import time: the common options and the stderr console.

Start-up time: this module, :mod:`worker.cli` and the command modules' top level import only
Typer, Rich and the standard library, so ``memory-worker --help`` and ``memory-worker CMD --help``
never load the runtime (pydantic, SQLAlchemy, Celery, the stores). Each command imports what it
needs when it runs (the helpers in :mod:`worker.commands.common`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from memory.printable import printable

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="TOML config file (default: $MEMORY_WORKER_CONFIG)."),
]
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
QueueOption = Annotated[
    str, typer.Option("--queue", help="Celery queue the hints go to (and workers consume).")
]

err = Console(stderr=True)


def shown(value: object) -> str:
    """Text from disk or from the user on a Rich line or table cell: control characters escaped
    (:func:`memory.printable.printable`), Rich markup literal."""
    return escape(printable(value))
