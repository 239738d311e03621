"""``memory-worker status [--json]`` — per session: durable end, watermarks, lag, lease and the
last failure (the operator's view of the pipeline)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from worker.cli import app
from worker.commands.config import ConfigOption
from worker.commands.run import ShelfOption, load_or_exit, open_runtime_or_exit
from worker.pipeline import Runtime
from worker.state.leases import session_lease_key


def session_status(runtime: Runtime, shelf: str) -> list[dict[str, Any]]:
    """One JSON-ready dict per known session (forgotten ones included, flagged)."""
    rows: list[dict[str, Any]] = []
    with runtime.state.transaction() as repos:
        progress = {p.session_id: p for p in repos.progress.list(shelf)}
        failures: dict[str, list[Any]] = {}
        for failure in repos.failures.list():
            failures.setdefault(failure.session_id, []).append(failure)
        for state in repos.sessions.list(include_forgotten=True):
            row = progress.get(state.session_id)
            logged = row.last_logged_seq if row is not None else 0
            start = max(logged, state.inherited_cut)
            lease = repos.leases.holder(session_lease_key(state.session_id))
            last = (failures.get(state.session_id) or [None])[0]
            rows.append({
                "session_id": state.session_id,
                "project": state.project,
                "path": state.path,
                "durable_end_seq": state.durable_end_seq,
                "inherited_cut": state.inherited_cut,
                "last_logged_seq": logged,
                "last_consolidated_seq": row.last_consolidated_seq if row else 0,
                "last_belong_to_index": row.last_belong_to_index if row else 0,
                "has_session_node": bool(row and row.has_session_node),
                "lag": max(0, state.durable_end_seq - start),
                "closed": state.closed_at is not None,
                "forgotten": state.forgotten,
                "lease": None if lease is None else {
                    "owner": lease.owner, "token": lease.token,
                    "expires_at": lease.expires_at.isoformat(),
                },
                "last_failure": None if last is None else {
                    "task": last.task, "attempts": last.attempts, "error": last.last_error,
                    "permanent": last.permanent, "at": last.last_at.isoformat(),
                },
            })
        # Sessions the watcher could not record (a corrupt or unsupported log) still show up,
        # with their failure.
        listed = {row["session_id"] for row in rows}
        for session_id, found in sorted(failures.items()):
            if session_id in listed:
                continue
            last = found[0]
            rows.append({
                "session_id": session_id, "project": "", "path": "",
                "durable_end_seq": None, "inherited_cut": None, "last_logged_seq": None,
                "last_consolidated_seq": None, "last_belong_to_index": None,
                "has_session_node": False, "lag": None, "closed": False, "forgotten": False,
                "lease": None,
                "last_failure": {
                    "task": last.task, "attempts": last.attempts, "error": last.last_error,
                    "permanent": last.permanent, "at": last.last_at.isoformat(),
                },
            })
    return rows


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


@app.command()
def status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    shelf: ShelfOption = None,
    config: ConfigOption = None,
) -> None:
    """Per session: durable end, watermarks, lag, lease and last failure."""
    settings = load_or_exit(config, store_shelf=shelf)
    runtime = open_runtime_or_exit(settings, "status")
    try:
        rows = session_status(runtime, settings.store_shelf)
    finally:
        runtime.close()
    if json_:
        typer.echo(json.dumps({"shelf": settings.store_shelf, "sessions": rows}, indent=2))
        return
    table = Table(title=f"memory-worker status (shelf {settings.store_shelf})")
    for column in ("session", "project", "durable end", "logged", "lag", "node", "lease",
                   "last failure"):
        table.add_column(column)
    for row in rows:
        failure = row["last_failure"]
        table.add_row(
            row["session_id"] + (" (forgotten)" if row["forgotten"] else ""),
            escape(row["project"]),
            _cell(row["durable_end_seq"]),
            _cell(row["last_logged_seq"]),
            _cell(row["lag"]),
            "yes" if row["has_session_node"] else "no",
            escape(row["lease"]["owner"]) if row["lease"] else "-",
            escape(f"{failure['task']}: {failure['error']}") if failure else "-",
        )
    Console(width=200).print(table)
    if not rows:
        Console(stderr=True).print("no sessions seen yet (run `memory-worker run` or `daemon`)")
