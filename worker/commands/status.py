"""``memory-worker status [--json]`` — per session and in total: durable end, logged and
consolidated watermarks, logging and consolidation lag, retractions pending, lease and the last
failure (the operator's view of the pipeline; :mod:`worker.figures` computes the numbers)."""

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
from worker.figures import figures
from worker.pipeline import Runtime


def session_status(runtime: Runtime, shelf: str) -> list[dict[str, Any]]:
    """One JSON-ready dict per known session (forgotten ones included, flagged)."""
    rows: list[dict[str, Any]] = figures(runtime.state, shelf)["sessions"]
    return rows


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


@app.command()
def status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    shelf: ShelfOption = None,
    config: ConfigOption = None,
) -> None:
    """Per session and in total: durable end, watermarks, lag, pending retractions, failures."""
    settings = load_or_exit(config, store_shelf=shelf)
    runtime = open_runtime_or_exit(settings, "status")
    try:
        found = figures(runtime.state, settings.store_shelf)
    finally:
        runtime.close()
    if json_:
        typer.echo(json.dumps(found, indent=2))
        return
    rows, total = found["sessions"], found["total"]
    table = Table(title=f"memory-worker status (shelf {settings.store_shelf})")
    for column in ("session", "project", "durable end", "logged", "lag", "consolidated",
                   "cons. lag", "pending retractions", "node", "lease", "last failure"):
        table.add_column(column)
    for row in rows:
        failure = row["last_failure"]
        table.add_row(
            row["session_id"] + (" (forgotten)" if row["forgotten"] else ""),
            escape(row["project"]),
            _cell(row["durable_end_seq"]),
            _cell(row["last_logged_seq"]),
            _cell(row["lag"]),
            _cell(row["last_consolidated_seq"]),
            _cell(row["consolidation_lag"]),
            _cell(row["retractions_pending"]),
            "yes" if row["has_session_node"] else "no",
            escape(row["lease"]["owner"]) if row["lease"] else "-",
            escape(f"{failure['task']}: {failure['error']}") if failure else "-",
        )
    if rows:
        table.add_section()
        table.add_row(
            f"total ({total['sessions']})", "", str(total["durable_end_seq"]), "",
            str(total["lag"]), "", str(total["consolidation_lag"]),
            str(total["retractions_pending"]), "", "",
            f"{total['failing']} failing" if total["failing"] else "-",
        )
    Console(width=220).print(table)
    if not rows:
        Console(stderr=True).print("no sessions seen yet (run `memory-worker run` or `daemon`)")
