"""``memory-worker forget SESSION… [--dry-run] [--json]`` — remove everything a session put in
memory (messages, session node, summaries, its share of archives and work units) and mark it so
the daemon never ingests it again; audited. Exit status 1 when a session could not be forgotten.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    ShelfOption,
    WideOption,
    err,
    refuse_session_ids_or_exit,
    shown,
)
from dsh_memory_worker.worker.commands.tables import print_table

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.forget import ForgetResult


def forget(
    sessions: Annotated[list[str], typer.Argument(help="Session ids to forget.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would be removed; change nothing.")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    wide: WideOption = False,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Remove everything a session put in memory and never ingest it again."""
    refuse_session_ids_or_exit("forget", sessions)
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import check_store_or_exit, command_runtime
    from dsh_memory_worker.worker.jobs.forget import ACTION_FORGET, forget_sessions

    settings, runtime = command_runtime(ACTION_FORGET, config, shelf=shelf, dsh_home=dsh_home)
    results: list[ForgetResult] = []
    failed: dict[str, str] = {}
    try:
        check_store_or_exit(runtime, settings.store_shelf)
        with runtime.state.transaction() as repos:
            unseen = {sid for sid in sessions if repos.sessions.get(sid) is None}
        results, failed = forget_sessions(runtime, settings.store_shelf, sessions, dry_run=dry_run)
    finally:
        runtime.close()
    if json_:
        payload: dict[str, Any] = {
            "shelf": settings.store_shelf,
            "dry_run": dry_run,
            "sessions": [
                {
                    "session_id": r.session_id,
                    "plan": [asdict(item) for item in r.items],
                    "removed": r.removed,
                    "regenerated": r.repair.regenerated,
                    "owed": r.repair.owed,
                    "unlinked": r.repair.unlinked,
                }
                for r in results
            ],
            "failed": failed,
        }
        typer.echo(json.dumps(payload, indent=2))
    else:
        table = Table(title="forget" + (" (dry run: nothing changed)" if dry_run else ""))
        for column in ("session", "entry", "action", "why"):
            table.add_column(column)
        for r in results:
            for item in r.items:
                table.add_row(shown(r.session_id), shown(item.entry), item.action, shown(item.why))
        print_table(table, wide=wide)
        for r in results:
            if r.session_id in unseen and not r.items:
                err.print(
                    f"memory-worker forget: {shown(r.session_id)}: not seen by the watcher "
                    "and nothing of it in memory"
                    + ("" if dry_run else "; marked forgotten, so it is never ingested"),
                    soft_wrap=True,
                )
        for sid, why in failed.items():
            err.print(f"memory-worker forget: {shown(sid)}: {shown(why)}", soft_wrap=True)
        if not dry_run:
            err.print(
                f"forgot {len(results) - len([r for r in results if r.repair.failed])} "
                f"session(s); removed {sum(len(r.removed) for r in results)} entries"
            )
    raise typer.Exit(1 if failed else 0)
