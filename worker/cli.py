"""The ``memory-worker`` command line (Typer + Rich).

Each command lives in its own module under ``worker/commands/`` (a plain function; the
command modules do not import this one) and is registered here. Start-up
time: this module and the command modules' top level import only Typer, Rich and the standard
library; a command imports the runtime when it runs (see
:mod:`dsh_memory_worker.worker.commands.options`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dsh_memory_worker import __version__
from dsh_memory_worker.worker.commands.options import command_group

#: The exit-status table (``--help``'s epilog; docs/cli.md has it per command). ``\b`` keeps
#: Click from re-flowing it.
EXIT_STATUS = """\b
Exit status:
  0  done; a read-only command on a fresh home says "nothing recorded yet"
  1  it ran, but not everything succeeded: a session failed (run --once,
     retract, forget, reconsolidate, relog), a leak (verify-forgetting), an
     unknown session (status --session), no readable log (inspect), the
     service not running or not loaded (service)
  2  nothing was done: a usage error, an invalid configuration, an unusable
     state database or store, a missing extra
Details per command: docs/cli.md"""

#: ``-h`` as well as ``--help``, on every command (Click's sub-contexts inherit it).
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = command_group(
    "memory-worker",
    "Turn DSH session logs into Hypatia memory.",
    epilog=EXIT_STATUS,
    context_settings=CONTEXT,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"memory-worker {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Turn DSH session logs into Hypatia memory."""


#: Command name → (its module under ``worker/commands/``, the function that implements it). The
#: command modules do not know :data:`app`; :func:`_register` adds their functions to it.
COMMANDS = {
    "config": ("config", "config"),
    "console": ("console", "console"),
    "daemon": ("daemon", "daemon"),
    "demo-home": ("demo_home", "demo_home"),
    "forget": ("forget", "forget"),
    "inspect": ("inspect", "inspect"),
    "migrate": ("migrate", "migrate"),
    "reconsolidate": ("reconsolidate", "reconsolidate"),
    "relog": ("relog", "relog"),
    "retract": ("retract", "retract"),
    "run": ("run", "run"),
    "segments": ("segments", "segments_app"),
    "service": ("service", "service_app"),
    "status": ("status", "status"),
    "verify-forgetting": ("verify_forgetting", "verify_forgetting"),
    "worker": ("worker_cmd", "worker_command"),
}


def _register(only: str | None = None) -> None:
    """Register the commands on :data:`app`: all of them, or ``only`` that one. Start-up time:
    a command's module is imported only here, when it is registered. A command already on
    :data:`app` is not added again (a process that calls this more than once, as a test run
    does, would otherwise have Typer build every duplicate on each invocation)."""
    import importlib

    present = {info.name for info in app.registered_commands} | {
        info.name for info in app.registered_groups
    }
    for name, (module, function) in COMMANDS.items():
        if (only is None or name == only) and name not in present:
            implementation = getattr(
                importlib.import_module(f"dsh_memory_worker.worker.commands.{module}"), function
            )
            if isinstance(implementation, typer.Typer):  # a group: `segments prune`
                app.add_typer(implementation, name=name)
            else:
                app.command(name)(implementation)


#: The bare forms a cron job or a hook repeats, answered on a home at rest before Typer builds
#: the command (its option adapters import pydantic): argv → the command module.
_AT_REST_FORMS = {("run", "--once"): "run", ("status",): "status", ("status", "--json"): "status"}


def _answered_at_rest(argv: list[str]) -> bool:
    """True when ``argv`` is one of :data:`_AT_REST_FORMS` and the home is at rest (the answer
    printed: :mod:`dsh_memory_worker.worker.at_rest`). With any other argument Typer parses as
    usual, and the
    command still answers at rest after parsing."""
    form = _AT_REST_FORMS.get(tuple(argv))
    if form is None:
        return False
    from dsh_memory_worker.worker.at_rest import inputs_key

    if form == "run":
        from dsh_memory_worker.worker.commands.run import answer_at_rest as run_answer

        return run_answer(inputs_key(None, {}))
    from dsh_memory_worker.worker.commands.status import answer_at_rest as status_answer

    return status_answer(inputs_key(None, {}), json_="--json" in argv, wide=False)


def main() -> None:
    import sys

    if _answered_at_rest(sys.argv[1:]):
        return
    # Start-up time: Typer builds (and validates with pydantic) every registered command's
    # options, so `memory-worker CMD …` registers CMD alone; `--help`, a mistyped command and
    # shell completion get them all (Click's completion passes the words in the environment,
    # not as arguments, so a completing process has no command argument).
    given = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    _register(given if given in COMMANDS else None)
    app(prog_name="memory-worker")


if __name__ == "__main__":  # python -m dsh_memory_worker.worker.cli
    main()
