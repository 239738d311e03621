"""``memory-worker reconsolidate SESSION… | --all [--from-seq N] [--wait]`` — summarise on demand;
``… --replace`` rewrites existing summaries (see :mod:`worker.commands.rewriting`).

Queues each session's owed span (``[last consolidated, last logged)``, or from ``--from-seq``)
with the turn and token thresholds waived, and reports per session ``queued``, ``empty`` (nothing
owed) or ``busy`` (a queued request already covers it) — or an error: ``disabled``,
``unavailable`` (no model route), ``unknown-session``. The request is recorded in the state
database; ``--wait`` runs it — and an already queued one (``busy``) — here with a progress bar
(and the cascade it owes), otherwise a ``consolidate`` hint goes to the Celery broker and the
embedded ``memory-worker run`` picks queued requests up within seconds as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    ShelfOption,
    err,
    refuse_session_ids_or_exit,
    shown,
)
from dsh_memory_worker.worker.commands.rewrite_options import (
    DryRunOption,
    JsonOption,
    MaxCallsOption,
    ProjectOption,
    QueueOption,
    RewriteOptions,
    Selection,
    SinceOption,
    TimeoutOption,
    WorkersOption,
)
from dsh_memory_worker.worker.names import DEFAULT_QUEUE

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.context import JobResult
    from dsh_memory_worker.worker.jobs.reconsolidate import ReconsolidateResult
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.settings import Settings


def _line(result: ReconsolidateResult) -> str:
    span = f"[{result.from_seq}, {result.to_seq})"
    if result.queued:
        return f"{result.session_id}: queued {span}"
    if result.reason == "empty":
        return f"{result.session_id}: empty — nothing owed {span}"
    if result.reason == "busy":
        return f"{result.session_id}: busy — a queued request already covers {span}"
    hints = {
        "disabled": "consolidation_enabled is false",
        "unavailable": "no model route is configured (set MEMORY_WORKER_MODEL_ROUTES)",
        "unknown-session": "the watcher has not seen this session (or it was forgotten)",
    }
    return f"{result.session_id}: {result.reason} — {hints.get(result.reason, '')}"


# Over 80 lines with its option declarations (the docstring is the command's help text).
def reconsolidate(
    sessions: Annotated[
        list[str] | None, typer.Argument(help="Session ids to re-summarise.", show_default=False)
    ] = None,
    all_sessions: Annotated[
        bool, typer.Option("--all", help="Every session the watcher knows.")
    ] = False,
    from_seq: Annotated[
        int | None,
        typer.Option(
            "--from-seq",
            min=0,
            help="Re-summarise from this seq (default: what is not consolidated yet).",
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Run the queued work here and wait for it.")
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Rewrite the summaries that exist (same names) with "
            "the current route and prompts, their work units and archives.",
        ),
    ] = False,
    stale: Annotated[
        bool,
        typer.Option(
            "--stale",
            help="With --replace (implied): every session holding a "
            "summary, archive or work unit another route/model/prompt wrote.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="With --replace: also rewrite what the current writer already wrote."
        ),
    ] = False,
    project: ProjectOption = None,
    since: SinceOption = None,
    dry_run: DryRunOption = False,
    max_calls: MaxCallsOption = None,
    json_: JsonOption = False,
    workers: WorkersOption = False,
    timeout: TimeoutOption = 3600.0,
    queue: QueueOption = DEFAULT_QUEUE,
    shelf: ShelfOption = None,
    dsh_home: DshHomeOption = None,
    config: ConfigOption = None,
) -> None:
    """Queue a consolidation of SESSION… (or --all), thresholds waived; --replace rewrites."""
    chosen = Selection(list(sessions or []), all_sessions, project, since, stale)
    refuse_session_ids_or_exit("reconsolidate", chosen.ids)
    if replace or stale:
        if chosen.empty:
            err.print(
                "memory-worker: name at least one SESSION, or pass --all, --project, "
                "--since or --stale"
            )
            raise typer.Exit(2)
        if from_seq is not None:
            err.print(
                "memory-worker: --from-seq does not go with --replace (existing summaries "
                "keep their spans)"
            )
            raise typer.Exit(2)
        # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
        from dsh_memory_worker.worker.commands.rewriting import rewrite_command

        rewrite_command(
            RewriteOptions(
                "replace",
                chosen,
                force=force,
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
        return
    if force or dry_run or max_calls is not None or json_ or workers or project or since:
        err.print(
            "memory-worker: --force, --dry-run, --max-calls, --json, --workers, --project "
            "and --since go with --replace"
        )
        raise typer.Exit(2)
    if not sessions and not all_sessions:
        err.print("memory-worker: name at least one SESSION, or pass --all")
        raise typer.Exit(2)
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import check_store_or_exit, command_runtime
    from dsh_memory_worker.worker.jobs.reconsolidate import request_reconsolidation

    settings, runtime = command_runtime("reconsolidate", config, shelf=shelf, dsh_home=dsh_home)
    target = settings.store_shelf
    try:
        if wait:  # the work runs here: an unusable store is one line before anything is queued
            check_store_or_exit(runtime, target)
        ids = list(dict.fromkeys(sessions or []))
        if all_sessions:
            with runtime.state.transaction() as repos:
                ids += [s.session_id for s in repos.sessions.list() if s.session_id not in ids]
            if not ids:
                err.print(
                    "no sessions seen yet (run `memory-worker run` or `daemon`)", markup=False
                )
        results = [request_reconsolidation(runtime, sid, target, from_seq=from_seq) for sid in ids]
        for result in results:
            err.print(shown(_line(result)), soft_wrap=True)
        queued = [r.session_id for r in results if r.queued]
        failed = 0
        if wait:
            # A `busy` session already has a queued request: --wait runs that one here too.
            owed = [r.session_id for r in results if r.queued or r.reason == "busy"]
            if owed:
                failed = _run_here(runtime, owed, target)
        elif queued:
            _send_hints(settings, queued, target)
    finally:
        runtime.close()
    if failed or not all(r.ok for r in results):
        raise typer.Exit(1)


def _run_here(runtime: Runtime, queued: list[str], shelf: str) -> int:
    """Run the queued consolidations (and the cascades they owe) in this process."""
    from dsh_memory_worker.worker.jobs.runtime import owe_consolidation
    from dsh_memory_worker.worker.logs import quiet_job_lines
    from dsh_memory_worker.worker.names import JOB_CONSOLIDATE
    from dsh_memory_worker.worker.run.runner import InProcessRunner

    # The progress bar and the per-session lines tell the story; job lines only when asked.
    quiet_job_lines(runtime.settings.log_level)
    failed = 0
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    outcomes: list[JobResult] = []
    with Progress(*columns, console=err, transient=False) as progress:
        bar = progress.add_task("consolidating", total=len(queued))

        def _done(result: JobResult) -> None:
            if result.job == JOB_CONSOLIDATE and result.status not in ("retry", "busy"):
                outcomes.append(result)
                progress.advance(bar)

        runner = InProcessRunner(runtime, on_result=_done)
        owe_consolidation(runtime, runner.submit)
        for session_id in queued:
            runner.submit(JOB_CONSOLIDATE, session_id, shelf)
        runner.drain()
    for result in outcomes:
        err.print(shown(f"{result.session_id}: {result.status} — {result.detail}"), soft_wrap=True)
        if result.status not in ("done", "skipped"):
            failed += 1
    finished = {result.session_id for result in outcomes}
    for session_id in queued:
        if session_id not in finished:  # a retryable failure: the runner deferred its retry
            err.print(
                shown(
                    f"{session_id}: not finished — the consolidation failed (see the "
                    "warning above); the request stays recorded"
                ),
                soft_wrap=True,
            )
    return failed + (len(queued) - len(outcomes))


def _send_hints(settings: Settings, queued: list[str], shelf: str) -> None:
    import importlib.util

    from dsh_memory_worker.worker.names import JOB_CONSOLIDATE

    if importlib.util.find_spec("celery") is None:  # embedded install: no broker to hint
        err.print(
            "memory-worker: the request stays queued: `memory-worker run` picks it up "
            "(or rerun with --wait)",
            soft_wrap=True,
            markup=False,
        )
        return
    from dsh_memory_worker.worker.run import tasks

    tasks.configure(settings)
    try:
        for session_id in queued:
            tasks.enqueue(JOB_CONSOLIDATE, session_id, shelf)
    except Exception as exc:  # kombu raises several types for an unreachable broker
        line = " ".join(str(exc).split())[:200]
        err.print(
            f"memory-worker: could not send the hint to the broker ({shown(line)}); the request "
            "stays queued: `memory-worker run` or the daemon picks it up, or rerun with --wait",
            soft_wrap=True,
        )
