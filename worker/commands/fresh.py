"""Read-only commands on a fresh home create nothing: no state database, no shelf, no directory.

A SQLite state database that does not exist yet means nothing was recorded: ``status`` computes its
figures on an empty, migrated copy in a temporary directory (so the sessions on disk still show,
as not recorded) and ``verify-forgetting`` / ``segments prune`` say so and stop; each says
"nothing recorded yet" in one line on stderr and exits 0. A PostgreSQL state database is opened as
before (a server's database is not the user's home)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dsh_memory_worker.worker.commands.options import err, shown
from dsh_memory_worker.worker.settings import Settings


def missing_state_file(settings: Settings) -> Path | None:
    """The SQLite state database file when it does not exist yet; ``None`` otherwise (also for
    PostgreSQL and any SQLite URL that is not a plain file: :attr:`Settings.state_file`, the
    one rule for it, which needs no SQLAlchemy)."""
    path = settings.state_file
    return None if path is None or path.exists() else path


def say_nothing_recorded(command: str, path: Path, then: str = "") -> None:
    err.print(
        f"memory-worker {command}: nothing recorded yet (no state database at "
        f"{shown(path)}; `memory-worker run` makes one){then}",
        soft_wrap=True,
    )


@contextmanager
def empty_state(settings: Settings) -> Iterator[Settings]:
    """``settings`` with a new, empty state database in a temporary directory, removed after."""
    with tempfile.TemporaryDirectory(prefix="memory-worker-empty-") as directory:
        yield settings.model_copy(update={"state_url": f"sqlite:///{directory}/state.db"})
