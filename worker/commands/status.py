"""``memory-worker status [--json]`` — per session and in total: durable end, logged and
consolidated watermarks, logging and consolidation lag, retractions pending, lease and the last
failure (the operator's view of the pipeline; :mod:`worker.figures` computes the numbers).

``--session ID`` keeps only that session's row (and, with ``--audit``, its audit trail); ``total``
still covers every session of the shelf. An id the state database knows nothing about (no session
row, failure or audit record) is one line on stderr and exit status 1."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from worker.cli import app
from worker.commands.options import ConfigOption, ShelfOption, err

if TYPE_CHECKING:
    from worker.pipeline import Runtime


def session_status(runtime: Runtime, shelf: str) -> list[dict[str, Any]]:
    """One JSON-ready dict per known session (forgotten ones included, flagged)."""
    from worker.figures import figures

    rows: list[dict[str, Any]] = figures(runtime.state, shelf)["sessions"]
    return rows


def audit_trail(runtime: Runtime, session_id: str | None = None) -> list[dict[str, Any]]:
    """Retraction records and audit entries (repairs, forgets, runs), in time order."""
    with runtime.state.transaction() as repos:
        trail = [
            {"at": r.at.isoformat(), "session_id": r.session_id, "action": "retract-message",
             "subject": r.entry, "cause_marker_seq": r.marker_seq, "source_kind": r.source_kind,
             "outcome": r.outcome, "detail": r.detail}
            for r in repos.audit.retractions(session_id=session_id)
        ] + [
            {"at": e.at.isoformat(), "session_id": e.session_id, "action": e.action,
             "subject": e.subject, "cause_marker_seq": e.cause_marker_seq,
             "source_kind": e.source_kind, "outcome": e.outcome, "detail": e.detail}
            for e in repos.audit.entries(session_id=session_id)
        ]
    return sorted(trail, key=lambda row: str(row["at"]))


def _print_audit(trail: list[dict[str, Any]]) -> None:
    table = Table(title="audit trail")
    for column in ("at", "session", "action", "entry", "cause", "outcome", "detail"):
        table.add_column(column)
    for row in trail:
        cause = (f"{row['source_kind']} @ {row['cause_marker_seq']}"
                 if row["cause_marker_seq"] is not None else "-")
        table.add_row(row["at"][:19], escape(row["session_id"] or "-"), row["action"],
                      escape(row["subject"] or "-"), escape(cause), row["outcome"],
                      escape(row["detail"] or ""))
    Console(width=220).print(table)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


@app.command()
def status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    audit: Annotated[
        bool, typer.Option("--audit", help="Also list the audit trail: every retraction, "
                           "repair and forget, oldest first.")
    ] = False,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session: its row and, with "
                                 "--audit, its audit trail (the total still covers all).")
    ] = None,
    shelf: ShelfOption = None,
    config: ConfigOption = None,
) -> None:
    """Per session and in total: durable end, watermarks, lag, pending retractions, failures."""
    # Imported when the command runs, not at start-up (keeps `status --help` fast).
    from worker.commands.common import load_or_exit, open_runtime_or_exit
    from worker.figures import figures

    settings = load_or_exit(config, store_shelf=shelf)
    runtime = open_runtime_or_exit(settings, "status")
    try:
        found = figures(runtime.state, settings.store_shelf)
        trail = audit_trail(runtime, session) if audit or session is not None else None
    finally:
        runtime.close()
    if session is not None:
        found["sessions"] = [row for row in found["sessions"] if row["session_id"] == session]
        if not found["sessions"] and not trail:
            err.print(f"memory-worker status: {escape(session)}: unknown session (not seen by "
                      "the watcher)", soft_wrap=True)
            raise typer.Exit(1)
        if not audit:
            trail = None
    if json_:
        if trail is not None:
            found["audit"] = trail
        typer.echo(json.dumps(found, indent=2))
        return
    if trail is not None:
        _print_audit(trail)
    rows, total = found["sessions"], found["total"]
    table = Table(title=f"memory-worker status (shelf {settings.store_shelf}"
                  + (f", session {escape(session)})" if session is not None else ")"))
    for column in ("session", "project", "durable end", "logged", "lag", "consolidated",
                   "cons. lag", "pending retractions", "node", "lease", "last failure"):
        table.add_column(column)
    for row in rows:
        failure = row["last_failure"]
        table.add_row(
            escape(row["session_id"]) + (" (forgotten)" if row["forgotten"] else ""),
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
            f"total, all sessions ({total['sessions']})" if session is not None
            else f"total ({total['sessions']})", "", str(total["durable_end_seq"]), "",
            str(total["lag"]), "", str(total["consolidation_lag"]),
            str(total["retractions_pending"]), "", "",
            f"{total['failing']} failing" if total["failing"] else "-",
        )
    Console(width=220).print(table)
    if not rows and session is None:
        Console(stderr=True).print("no sessions seen yet (run `memory-worker run` or `daemon`)")
