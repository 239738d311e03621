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
import zoneinfo
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from worker.commands.options import (
    ConfigOption,
    ShelfOption,
    err,
    refuse_session_ids_or_exit,
    shown,
)

if TYPE_CHECKING:
    from worker.jobs.retract import SessionPlan
    from worker.jobs.runtime import Runtime
    from worker.jobs.withdrawals import SessionLog

SessionsArg = Annotated[list[str] | None, typer.Argument(help="Session ids (or use --all).")]


def _targets(runtime: Runtime, sessions: list[str], all_: bool) -> list[str]:
    if all_:
        with runtime.state.transaction() as repos:
            return [s.session_id for s in repos.sessions.list() if s.path]
    return sessions


def _plan(runtime: Runtime, shelf: str, sid: str, kinds: list[str],
          model: bool) -> tuple[SessionLog | None, SessionPlan | None, str]:
    """The session's log and plan, or an error line."""
    from memory.store.base import StoreError
    from worker.jobs.logread import PermanentJobError, TransientJobError
    from worker.jobs.retract import plan_session
    from worker.jobs.withdrawals import read_session_log

    with runtime.state.transaction() as repos:
        state = repos.sessions.get(sid)
        pending = repos.audit.pending_repairs(sid)
    if state is None or not state.path:
        return None, None, "unknown session (not seen by the watcher)"
    if state.forgotten:
        return None, None, "session is forgotten"
    try:
        log_ = read_session_log(state, kinds, runtime.hand_off, segments=runtime.segments)
        tz = zoneinfo.ZoneInfo(runtime.settings.timezone) if runtime.settings.timezone else None
        plan = plan_session(runtime.store(shelf), log_, pending, model=model, tz=tz)
        return log_, plan, ""
    except (PermanentJobError, TransientJobError, StoreError, OSError) as exc:
        return None, None, " ".join(str(exc).split())


def retract(
    sessions: SessionsArg = None,
    all_: Annotated[bool, typer.Option("--all", help="Every session the worker knows.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="Also treat this marker source kind as a withdrawal "
                     "(this run only; repeatable)."),
    ] = None,
    shelf: ShelfOption = None,
    config: ConfigOption = None,
) -> None:
    """Find what memory still holds that the user took back, and remove it."""
    chosen = sessions or []
    if bool(chosen) == all_:
        err.print("memory-worker retract: give session ids or --all (not both)")
        raise typer.Exit(2)
    refuse_session_ids_or_exit("retract", chosen)
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from worker.commands.common import (
        check_store_or_exit,
        load_or_exit,
        open_runtime_or_exit,
        setup_logging,
    )

    settings = load_or_exit(config, store_shelf=shelf)
    setup_logging(settings)
    runtime = open_runtime_or_exit(settings, "retract")
    try:
        check_store_or_exit(runtime, settings.store_shelf)
        code = _run(runtime, settings.store_shelf, _targets(runtime, chosen, all_),
                    [k.strip() for k in kind or [] if k.strip()], dry_run, json_)
    finally:
        runtime.close()
    raise typer.Exit(code)


def _run(runtime: Runtime, shelf: str, targets: list[str], extra: list[str], dry_run: bool,
         json_: bool) -> int:
    from worker.jobs.repair_plan import model_client
    from worker.jobs.retract import kinds_for

    kinds = kinds_for(runtime, extra)
    model = model_client(runtime) is not None
    planned: list[tuple[str, SessionLog | None, SessionPlan | None, str]] = []
    for sid in targets:
        log_, plan, error = _plan(runtime, shelf, sid, kinds, model)
        planned.append((sid, log_, plan, error))
    if not json_:
        _print_plan(planned, dry_run)
    results: dict[str, dict[str, Any]] = {}
    if not dry_run:
        work = [(sid, log_) for sid, log_, plan, _ in planned
                if log_ is not None and plan is not None and not plan.empty]
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=err, transient=json_, disable=not work) as progress:
            bar = progress.add_task("retracting", total=len(work))
            for sid, log_ in work:
                results[sid] = _execute(runtime, shelf, sid, log_)
                progress.advance(bar)
        _audit_run(runtime, shelf, targets, kinds, results)
    undone = [sid for sid, _, _, error in planned if error] + [
        sid for sid, r in results.items() if r["error"] or r["failed"]]
    if json_:
        typer.echo(json.dumps({
            "shelf": shelf, "dry_run": dry_run, "kinds": kinds,
            "sessions": [
                {"session_id": sid, "error": error or None,
                 "plan": [asdict(item) for item in plan.items] if plan else [],
                 "result": results.get(sid)}
                for sid, _, plan, error in planned
            ],
            "undone": undone,
        }, indent=2))
    elif not dry_run:
        done = sum(len(r["retracted"]) + len(r["repaired"]) for r in results.values())
        err.print(f"{done} entries retracted or repaired in {len(results)} session(s)"
                  + (f"; left undone: {shown(', '.join(undone))}" if undone else ""),
                  soft_wrap=True)
    return 1 if undone else 0


def _execute(runtime: Runtime, shelf: str, sid: str, log_: SessionLog) -> dict[str, Any]:
    from memory.store.base import StoreError
    from worker.jobs.logread import TransientJobError
    from worker.jobs.retract import execute_plan, with_session_lease
    from worker.names import JOB_RETRACT

    try:
        result = with_session_lease(runtime, sid, shelf, JOB_RETRACT,
                                    lambda ctx: execute_plan(ctx, log_))
    except (TransientJobError, StoreError, OSError) as exc:
        return {"retracted": [], "repaired": [], "failed": [],
                "error": " ".join(str(exc).split())}
    repair = result.repair
    return {
        "retracted": result.retracted + repair.retracted,
        "repaired": repair.regenerated + repair.unlinked,
        "written": repair.written,
        "failed": result.failed,
        "error": None,
    }


def _audit_run(runtime: Runtime, shelf: str, targets: list[str], kinds: list[str],
               results: dict[str, dict[str, Any]]) -> None:
    with runtime.state.transaction() as repos:
        for sid in targets:
            found = results.get(sid)
            if found is None:
                continue
            outcome = "failed" if found["error"] or found["failed"] else "done"
            repos.audit.record(
                "retract-run", outcome, shelf=shelf, session_id=sid,
                detail=(f"kinds {', '.join(kinds)}; retracted {len(found['retracted'])}, "
                        f"repaired {len(found['repaired'])}"
                        + (f"; {found['error']}" if found["error"] else "")),
            )


def _print_plan(planned: list[tuple[str, SessionLog | None, SessionPlan | None, str]],
                dry_run: bool) -> None:
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
    console = Console(width=200)
    if rows:
        console.print(table)
    else:
        console.print("nothing to retract: the store holds nothing the logs withdraw")
