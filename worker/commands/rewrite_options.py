"""The options ``reconsolidate --replace`` and ``relog`` share, the :class:`Selection` and the
:class:`RewriteOptions` they make (once, at the command's edge, then passed down whole);
start-up light (Typer and the standard library only), unlike :mod:`worker.commands.rewriting`,
which runs them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from dsh_memory_worker.worker.names import DEFAULT_QUEUE

SessionsArg = Annotated[list[str] | None, typer.Argument(help="Session ids.", show_default=False)]
AllOption = Annotated[bool, typer.Option("--all", help="Every session the watcher knows.")]
ProjectOption = Annotated[
    str | None, typer.Option("--project", help="Only sessions of this project (scope name).")
]
SinceOption = Annotated[
    dt.datetime | None,
    typer.Option(
        "--since",
        formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"],
        help="Only sessions active on or after this date (UTC).",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="List what would be rewritten, with the model calls "
        "and input tokens expected; change nothing.",
    ),
]
MaxCallsOption = Annotated[
    int | None,
    typer.Option(
        "--max-calls",
        min=0,
        help="With --wait: stop cleanly before the "
        "model call that would exceed N (rerun to continue).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
WorkersOption = Annotated[
    bool,
    typer.Option(
        "--workers",
        help="Run as jobs on the Celery workers (distributed mode); with --wait, follow them.",
    ),
]
QueueOption = Annotated[
    str, typer.Option("--queue", help="With --workers: the Celery queue the workers consume.")
]
TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=1,
        help="With --workers --wait: seconds to follow the "
        "jobs before giving up (they keep running).",
    ),
]


@dataclass(frozen=True, slots=True)
class Selection:
    ids: list[str]
    all_: bool = False
    project: str | None = None
    since: dt.datetime | None = None
    stale: bool = False

    @property
    def empty(self) -> bool:
        return not (self.ids or self.all_ or self.project or self.since or self.stale)


@dataclass(frozen=True, slots=True)
class RewriteOptions:
    """One ``reconsolidate --replace`` or ``relog`` invocation: what to rewrite (``mode``,
    ``chosen``), where the work runs (``dry_run``, ``wait``, ``workers``, ``queue``,
    ``timeout_s``), its budget (``max_calls``), the output form (``json_``) and the settings it
    loads (``shelf``, ``config``, ``dsh_home``)."""

    mode: str
    chosen: Selection
    force: bool = False
    dry_run: bool = False
    max_calls: int | None = None
    json_: bool = False
    wait: bool = False
    workers: bool = False
    timeout_s: float = 3600.0
    queue: str = DEFAULT_QUEUE
    shelf: str | None = None
    config: Path | None = None
    dsh_home: Path | None = None

    @property
    def command(self) -> str:
        """The command's name, as the lines it prints say it."""
        return "reconsolidate" if self.mode == "replace" else self.mode

    @property
    def runs_here(self) -> bool:
        """``--wait`` without ``--workers``: this process runs the jobs."""
        return self.wait and not self.workers
