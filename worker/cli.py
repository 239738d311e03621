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
    # Plain Click help: Typer's Rich help formatter imports rich.markdown, markdown_it and
    # rich.traceback (about half of `--help`'s start-up time here) for panels we do not need.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
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


#: Command name → its module under ``worker/commands/``.
COMMANDS = {
    "config": "config", "daemon": "daemon", "demo-home": "demo_home", "forget": "forget",
    "inspect": "inspect", "migrate": "migrate", "reconsolidate": "reconsolidate",
    "relog": "relog", "retract": "retract", "run": "run", "status": "status",
    "verify-forgetting": "verify_forgetting", "worker": "worker_cmd",
}


def _register(only: str | None = None) -> None:
    """Import the command modules (each registers its command on :data:`app`): all of them, or
    ``only`` that one."""
    import importlib

    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"worker.commands.{module}")


def main() -> None:
    import sys

    # Start-up time: Typer builds (and validates with pydantic) every registered command's
    # options, so `memory-worker CMD …` registers CMD alone; `--help`, a mistyped command and
    # shell completion get them all (Click's completion passes the words in the environment,
    # not as arguments, so a completing process has no command argument).
    given = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    _register(given if given in COMMANDS else None)
    app()
