"""``memory-worker relog SESSION… | --all | --project P | --since DATE [--dry-run] [--wait]`` —
re-render stored message entries and session nodes under the current content policy.

After a content-policy change (a redaction pattern added with ``redact_extra_patterns``, other
caps or date rules) the entries already written keep their old text. ``relog`` renders each
session's ``msg-*`` entries and ``session-<id>`` node again, rewrites the ones that differ in
place, and regenerates the summaries with a ``summary`` edge to a rewritten message and the
archives above them (so a secret that slipped through is gone from all of them). Where it runs,
the output and the exit status are ``reconsolidate --replace``'s
(:mod:`worker.commands.rewriting`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    ShelfOption,
    refuse_session_ids_or_exit,
)
from dsh_memory_worker.worker.commands.rewrite_options import (
    AllOption,
    DryRunOption,
    JsonOption,
    MaxCallsOption,
    ProjectOption,
    QueueOption,
    RewriteOptions,
    Selection,
    SessionsArg,
    SinceOption,
    TimeoutOption,
    WorkersOption,
)
from dsh_memory_worker.worker.names import DEFAULT_QUEUE


def relog(
    sessions: SessionsArg = None,
    all_sessions: AllOption = False,
    project: ProjectOption = None,
    since: SinceOption = None,
    dry_run: DryRunOption = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Run it here (or, with --workers, follow the jobs).")
    ] = False,
    max_calls: MaxCallsOption = None,
    json_: JsonOption = False,
    workers: WorkersOption = False,
    timeout: TimeoutOption = 3600.0,
    queue: QueueOption = DEFAULT_QUEUE,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Re-render stored messages and session nodes under the current content policy."""
    chosen = Selection(list(sessions or []), all_sessions, project, since)
    if chosen.empty:
        err_line = "memory-worker: name at least one SESSION, or pass --all, --project or --since"
        typer.echo(err_line, err=True)
        raise typer.Exit(2)
    refuse_session_ids_or_exit("relog", chosen.ids)
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.rewriting import rewrite_command

    rewrite_command(
        RewriteOptions(
            "relog",
            chosen,
            dry_run=dry_run,
            max_calls=max_calls,
            json_=json_,
            wait=wait,
            workers=workers,
            timeout_s=timeout,
            queue=queue,
            shelf=shelf,
            config=config,
            dsh_home=dsh_home,
        )
    )
