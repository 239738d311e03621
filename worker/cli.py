"""The ``memory-worker`` command line (Typer + Rich).

Each command lives in its own module under ``worker/commands/`` and is registered here. Start-up
time: this module and the command modules' top level import only Typer, Rich and the standard
library; a command imports the runtime when it runs (see :mod:`worker.commands.options`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from worker import __version__

app = typer.Typer(
    name="memory-worker",
    help="Turn DSH session logs into Hypatia memory.",
    no_args_is_help=True,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"memory-worker {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True,
                           help="Print the version and exit.")
    ] = False,
) -> None:
    """Turn DSH session logs into Hypatia memory."""


def _register() -> None:
    from worker.commands import config as _config  # noqa: F401  (registers `config`)
    from worker.commands import daemon as _daemon  # noqa: F401  (registers `daemon`)
    from worker.commands import demo_home as _demo_home  # noqa: F401  (registers `demo-home`)
    from worker.commands import forget as _forget  # noqa: F401  (registers `forget`)
    from worker.commands import inspect as _inspect  # noqa: F401  (registers `inspect`)
    from worker.commands import migrate as _migrate  # noqa: F401  (registers `migrate`)
    from worker.commands import reconsolidate as _reconsolidate  # noqa: F401  (`reconsolidate`)
    from worker.commands import retract as _retract  # noqa: F401  (registers `retract`)
    from worker.commands import run as _run  # noqa: F401  (registers `run`)
    from worker.commands import status as _status  # noqa: F401  (registers `status`)
    from worker.commands import worker_cmd as _worker_cmd  # noqa: F401  (registers `worker`)


def main() -> None:
    _register()
    app()
