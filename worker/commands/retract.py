"""``memory-worker retract [SESSION… | --all] [--dry-run] [--json] [--kind K …]`` — an operator
retraction run.

Re-scans each session's whole log for whitelisted withdrawal markers (also ones the watermark
passed long ago, and kinds added with ``--kind`` for this run only), compares with what the store
holds, prints the plan (session, entry, action, why) and, unless ``--dry-run``, carries it out
under each session's lease — safe while the daemon runs. Exit status: 0 when nothing is left
undone, 1 when something could not be done, 2 on bad usage.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
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
    from dsh_memory_worker.worker.jobs.retract import SessionPlan
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.jobs.withdrawals import SessionLog

SessionsArg = Annotated[list[str] | None, typer.Argument(help="Session ids (or use --all).")]


def _targets(runtime: Runtime, sessions: list[str], all_: bool) -> list[str]:
    if all_:
        with runtime.state.transaction() as repos:
            return [s.session_id for s in repos.sessions.list() if s.path]
    return sessions


def retract(
    sessions: SessionsArg = None,
    all_: Annotated[bool, typer.Option("--all", help="Every session the worker knows.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="Also treat this marker source kind as a withdrawal (this run only; repeatable).",
        ),
    ] = None,
    wide: WideOption = False,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Find what memory still holds that the user took back, and remove it."""
    chosen = sessions or []
    if bool(chosen) == all_:
        err.print("memory-worker retract: give session ids or --all (not both)")
        raise typer.Exit(2)
    refuse_session_ids_or_exit("retract", chosen)
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import check_store_or_exit, command_runtime

    settings, runtime = command_runtime("retract", config, shelf=shelf, dsh_home=dsh_home)
    try:
        check_store_or_exit(runtime, settings.store_shelf)
        code = _run(
            runtime,
            settings.store_shelf,
            _targets(runtime, chosen, all_),
            [k.strip() for k in kind or [] if k.strip()],
            dry_run,
            json_,
            wide=wide,
        )
    finally:
        runtime.close()
    raise typer.Exit(code)


def _run(
    runtime: Runtime,
    shelf: str,
    targets: list[str],
    extra: list[str],
    dry_run: bool,
    json_: bool,
    *,
    wide: bool = False,
) -> int:
    from dsh_memory_worker.worker.jobs.retract_run import audit_run, execute_one, plan_run, undone

    kinds, runs = plan_run(runtime, shelf, targets, extra)
    planned = [(p.session_id, p.log, p.plan, p.error) for p in runs]
    if not json_:
        _print_plan(planned, dry_run, wide)
    results: dict[str, dict[str, Any]] = {}
    if not dry_run:
        work = [
            (sid, log_)
            for sid, log_, plan, _ in planned
            if log_ is not None and plan is not None and not plan.empty
        ]
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=err, transient=json_, disable=not work) as progress:
            bar = progress.add_task("retracting", total=len(work))
            for sid, log_ in work:
                results[sid] = execute_one(runtime, shelf, sid, log_)
                progress.advance(bar)
        audit_run(runtime, shelf, targets, kinds, results)
    left = undone(runs, results)
    if json_:
        typer.echo(
            json.dumps(
                {
                    "shelf": shelf,
                    "dry_run": dry_run,
                    "kinds": kinds,
                    "sessions": [
                        {
                            "session_id": sid,
                            "error": error or None,
                            "plan": [asdict(item) for item in plan.items] if plan else [],
                            "result": results.get(sid),
                        }
                        for sid, _, plan, error in planned
                    ],
                    "undone": left,
                },
                indent=2,
            )
        )
    elif not dry_run:
        done = sum(len(r["retracted"]) + len(r["repaired"]) for r in results.values())
        err.print(
            f"{done} entries retracted or repaired in {len(results)} session(s)"
            + (f"; left undone: {shown(', '.join(left))}" if left else ""),
            soft_wrap=True,
        )
    return 1 if left else 0


def _print_plan(
    planned: list[tuple[str, SessionLog | None, SessionPlan | None, str]], dry_run: bool, wide: bool
) -> None:
    table = Table(title="retraction plan" + (" (dry run: nothing changed)" if dry_run else ""))
    for column in ("session", "entry", "action", "why"):
        table.add_column(column)
    rows = 0
    for sid, _, plan, error in planned:
        if error:
            table.add_row(shown(sid), "-", "error", shown(error))
            rows += 1
            continue
        assert plan is not None
        for item in plan.items:
            table.add_row(shown(sid), shown(item.entry), item.action, shown(item.why))
            rows += 1
    if rows:
        print_table(table, wide=wide)
    else:
        typer.echo("nothing to retract: the store holds nothing the logs withdraw")
