"""``memory-worker migrate [upgrade|downgrade|current] [REV]`` — the state database schema.

``upgrade`` (the default) goes to REV or the newest revision; ``downgrade`` needs REV
(``base`` removes every table); ``current`` prints the revision the database is at.
The runtime also upgrades at start, so this is only needed to migrate ahead of time
(the docker-compose ``migrate`` service) or to go back.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from dsh_memory_worker.worker.commands.options import ConfigOption


class Action(StrEnum):
    upgrade = "upgrade"
    downgrade = "downgrade"
    current = "current"


def migrate(
    action: Annotated[Action, typer.Argument(help="upgrade, downgrade or current.")] = (
        Action.upgrade
    ),
    revision: Annotated[
        str | None, typer.Argument(help="Target revision (upgrade: default head).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Migrate the state database (Alembic) up or down."""
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

    from dsh_memory_worker.worker.commands.common import load_or_exit
    from dsh_memory_worker.worker.settings import mask_url
    from dsh_memory_worker.worker.state.db import StateURLError
    from dsh_memory_worker.worker.state.migrate import (
        current_revision,
        downgrade,
        head_revision,
        upgrade,
    )
    from dsh_memory_worker.worker.state.revision_files import MigrationsNotFound

    settings = load_or_exit(config)
    url = settings.effective_state_url
    shown = mask_url(url)
    err = Console(stderr=True)
    migrations_dir: Path | None = settings.migrations_dir
    try:
        if action is Action.current:
            now = current_revision(url)
            head = head_revision(migrations_dir)
            typer.echo(f"{shown}: at {now or 'base (empty)'}; newest is {head}")
            return
        if action is Action.downgrade:
            if not revision:
                err.print("memory-worker: downgrade needs a target revision (e.g. `base`)")
                raise typer.Exit(2)
            downgrade(url, revision, migrations_dir)
        elif upgrade(url, revision or "head", migrations_dir):
            # A revision renamed stored rows (0004): the old text leaves the files here, since
            # the workers will find the database at head and not purge it themselves.
            from dsh_memory_worker.worker.state.database import StateDB

            db = StateDB(url)
            db.after_rewrite()
            db.dispose()  # tries once more when another connection kept it from finishing
        typer.echo(f"{shown}: now at {current_revision(url) or 'base (empty)'}")
    except (MigrationsNotFound, StateURLError) as exc:
        err.print(f"memory-worker: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    except SQLAlchemyError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        err.print(f"memory-worker: migrating {shown} failed: {escape(first)}", soft_wrap=True)
        # Unreachable or unusable (2) versus a revision that failed on a working database (1).
        raise typer.Exit(2 if isinstance(exc, OperationalError | InterfaceError) else 1) from None
    except Exception as exc:
        # Alembic reports an unknown revision with its own CommandError / util errors.
        if type(exc).__module__.startswith("alembic"):
            err.print(f"memory-worker: {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(2) from None
        raise
