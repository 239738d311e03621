"""``memory-worker verify-forgetting [--json]`` — prove that withdrawals and forgets took effect.

Re-reads the logs to find every withdrawn message and every forgotten session and searches the
store (through its adapter; for hypatia-lite also the shelf's files) and the state database for
their text (:mod:`worker.verify`). Prints each leak, or exactly one line
``0 leaks in N withdrawn messages and M forgotten sessions (K places searched)``. Exit status 0
when nothing leaked, 1 on a leak, 2 when the configuration, state database or store is unusable.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    ShelfOption,
    err,
    shown,
)

if TYPE_CHECKING:
    from dsh_memory_worker.worker.settings import Settings
    from dsh_memory_worker.worker.verify.run import Report


class _Bar:
    """The Rich progress bar on stderr (shown on a terminal only)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, description: str, total: int | None) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, amount: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)


def verify_forgetting(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Prove that withdrawn messages and forgotten sessions left no trace in memory."""
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import command_settings
    from dsh_memory_worker.worker.commands.fresh import (
        empty_state,
        missing_state_file,
        say_nothing_recorded,
    )
    from dsh_memory_worker.worker.verify.run import lite_store_absent

    settings = command_settings(config, store_shelf=shelf, dsh_home=dsh_home)
    missing = missing_state_file(settings)
    if missing is not None and lite_store_absent(settings):
        say_nothing_recorded("verify-forgetting", missing, ": nothing to verify")
        if json_:
            typer.echo(
                json.dumps(
                    {"shelf": settings.store_shelf, "nothing_recorded": True, "leaks": []}, indent=2
                )
            )
        raise typer.Exit(0)
    if missing is not None:  # a store without a state database: search it, create nothing
        with empty_state(settings) as empty:
            _verify_and_exit(empty, json_)
    _verify_and_exit(settings, json_)


def _verify_and_exit(settings: Settings, json_: bool) -> NoReturn:
    from sqlalchemy.exc import SQLAlchemyError

    from dsh_memory_worker.memory.store.base import StoreError
    from dsh_memory_worker.worker.commands.common import (
        check_store_or_exit,
        db_error_line,
        open_runtime_or_exit,
    )
    from dsh_memory_worker.worker.verify.run import verify

    runtime = open_runtime_or_exit(settings, "verify-forgetting")
    try:
        check_store_or_exit(runtime, settings.store_shelf)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(
            *columns, console=err, transient=True, disable=not err.is_terminal
        ) as progress:
            report = verify(runtime, settings.store_shelf, _Bar(progress))
    except (StoreError, OSError) as exc:
        err.print(
            f"memory-worker verify-forgetting: cannot search the store: "
            f"{shown(' '.join(str(exc).split()))}",
            soft_wrap=True,
        )
        raise typer.Exit(2) from None
    except SQLAlchemyError as exc:
        err.print(
            f"memory-worker verify-forgetting: cannot search the state database: "
            f"{shown(db_error_line(exc))}",
            soft_wrap=True,
        )
        raise typer.Exit(2) from None
    finally:
        runtime.close()
    _print(report, json_)
    raise typer.Exit(1 if report.leaks else 0)


def _print(report: Report, json_: bool) -> None:
    if json_:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        for leak in report.leaks:
            typer.echo(printable(leak.line()))
        if not report.leaks:
            typer.echo(printable(report.summary()))
        else:
            err.print(shown(report.summary()), soft_wrap=True)
    say = "memory-worker verify-forgetting: "
    for sid, why in report.sources.unreadable.items():
        err.print(
            f"{say}{shown(sid)}: cannot read its log ({shown(why)}); its withdrawals "
            "were not checked",
            soft_wrap=True,
        )
    for sid in report.sources.forgotten_without_log:
        err.print(
            f"{say}{shown(sid)}: forgotten and its log is gone: only its entry names were checked",
            soft_wrap=True,
        )
    if report.bytes_skipped:
        err.print(f"{say}{shown(report.bytes_skipped)}", soft_wrap=True)
