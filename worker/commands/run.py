"""``memory-worker run`` — embedded mode: watcher + in-process runner, SQLite state, hypatia-lite.

Follows the DSH home until stopped (Ctrl-C / SIGTERM). ``--once`` processes what is on disk,
treating every session as idle (every tail is flushed), shows a progress bar and exits;
``--once --jobs N`` does it in N processes first (:mod:`worker.run.once_parallel`).
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from dsh_memory_worker.worker.commands.options import (
    ConfigOption,
    DshHomeOption,
    MetricsPortOption,
    ShelfOption,
    err,
    say,
)

if TYPE_CHECKING:
    from rich.progress import Progress

    from dsh_memory_worker.worker.at_rest import Watch
    from dsh_memory_worker.worker.jobs.pending_repairs import OwedArchives
    from dsh_memory_worker.worker.jobs.runtime import Runtime
    from dsh_memory_worker.worker.run.once_children import OnceChildren, OnceTotals
    from dsh_memory_worker.worker.run.once_parallel import ProgressHook
    from dsh_memory_worker.worker.run.runner import InProcessRunner
    from dsh_memory_worker.worker.settings import Settings
    from dsh_memory_worker.worker.watch.watcher import ScanReport


def run(
    once: Annotated[
        bool, typer.Option("--once", help="Process what is on disk (all sessions idle), exit.")
    ] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            help="With --once: process the sessions in N "
            "processes, then finish in this one (default 1).",
        ),
    ] = 1,
    dsh_home: DshHomeOption = None,
    shelf: ShelfOption = None,
    metrics_port: MetricsPortOption = None,
    config: ConfigOption = None,
) -> None:
    """Embedded mode: follow the DSH home and write memory in this process."""
    if jobs < 1:
        err.print(f"memory-worker: --jobs must be 1 or more (got {jobs})", soft_wrap=True)
        raise typer.Exit(2)
    if jobs > 1 and not once:
        err.print(
            "memory-worker: --jobs needs --once (following a DSH home runs in one process)",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    overrides = {"dsh_home": dsh_home, "store_shelf": shelf, "metrics_port": metrics_port}
    watch = key = None
    if once and jobs == 1:
        from dsh_memory_worker.worker.at_rest import inputs_key

        key = inputs_key(config, overrides)
        if answer_at_rest(key):
            return
    # Imported when the command runs, not at start-up (keeps `memory-worker --help` fast).
    from dsh_memory_worker.worker.commands.common import command_settings

    settings = command_settings(config, **overrides)
    if once and jobs == 1 and _done_on_empty_home(settings):
        return
    if key is not None:
        from dsh_memory_worker.worker.at_rest import Watch

        watch = Watch(key, settings, config)
    from dsh_memory_worker.worker.run.once_children import OnceChildren

    # Forked now, before this process opens the state database or the store (OnceChildren).
    children = OnceChildren(settings, settings.store_shelf, jobs) if jobs > 1 else None
    try:
        _run(settings, once, children, watch)
    finally:
        if children is not None:
            children.stop()


#: The at-rest record's name for the summary line of a ``run --once`` that did nothing.
_AT_REST_ANSWER = "run_once"


def answer_at_rest(key: str) -> bool:
    """On a home at rest (nothing changed since a full ``run --once`` that did nothing; told from
    the environment and file metadata, before settings or the runtime load: :mod:`worker.at_rest`)
    print that run's summary line (a JSON record when that run logged JSON lines) and return
    True; else False (run in full)."""
    from dsh_memory_worker.worker.at_rest import recorded

    answer = recorded(key, _AT_REST_ANSWER)
    if not (isinstance(answer, list) and len(answer) == 2 and isinstance(answer[0], str)):
        return False
    line, as_json = answer
    if as_json:
        from dsh_memory_worker.worker.logs import setup_logging

        setup_logging("INFO", json_lines=True)
    say(line, event="summary")
    return True


def _done_on_empty_home(settings: Settings) -> bool:
    """On a home that holds nothing yet, make what the full run makes (the state database, the
    shelf) without loading the runtime, print the run's progress and summary and return True
    (:mod:`worker.run.empty_home`); else False."""
    from dsh_memory_worker.worker.run import empty_home

    if not empty_home.first_run_on_empty_home(settings):
        return False
    from dsh_memory_worker.worker.run.once_summary import summary_line

    with _progress_bar("reading logs") as (_progress, show):
        show("writing memory", 0, 0)
    say(summary_line(), event="summary")
    return True


def _no_progress(_description: str | None, _completed: int, _total: int | None) -> None:
    return None


@contextmanager
def _progress_bar(first: str) -> Iterator[tuple[Progress | None, ProgressHook]]:
    """The run's progress bar on standard error, and the hook that moves it; none in JSON log
    mode (the log stream is JSON lines only)."""
    from dsh_memory_worker.worker.logs import json_mode

    if json_mode():
        yield None, _no_progress
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        bar = progress.add_task(first, total=None)

        def _show(description: str | None, completed: int, total: int | None) -> None:
            progress.update(bar, description=description, completed=completed, total=total)

        yield progress, _show


def _run(
    settings: Settings, once: bool, children: OnceChildren | None, watch: Watch | None = None
) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from dsh_memory_worker.worker.commands.common import (
        check_store_or_exit,
        db_error_line,
        open_runtime_or_exit,
    )
    from dsh_memory_worker.worker.jobs.housekeeping import reconcile_with_store
    from dsh_memory_worker.worker.jobs.pending_repairs import sessions_with_pending_repairs
    from dsh_memory_worker.worker.jobs.reconsolidate import backfill_consolidation
    from dsh_memory_worker.worker.jobs.seed_pending import unchecked_children
    from dsh_memory_worker.worker.watch.owed import owed_by_clock

    runtime = open_runtime_or_exit(settings, "run", force_idle=once)
    target = settings.store_shelf
    started: list[object] = []
    totals = None
    try:
        check_store_or_exit(runtime, target)
        if settings.reconcile_on_startup:
            started += reconcile_with_store(runtime, target)
        if unchecked_children(runtime, target):  # fork children an older worker stored
            from dsh_memory_worker.worker.jobs.seed_repair import check_seeded_sessions

            started += check_seeded_sessions(runtime, target)
        if sessions_with_pending_repairs(runtime):  # the repair machinery loads only then
            from dsh_memory_worker.worker.jobs.retract import resume_repairs

            started += resume_repairs(runtime, target)  # finish repairs a crash interrupted
        started += backfill_consolidation(runtime, target)
        owed = _regenerate_owed_archives(runtime, target)
        started += owed.regenerated
        if once:
            totals = _run_once(runtime, target, children)
            if watch is not None and _did_nothing(totals) and owed_by_clock(runtime, target):
                watch = None  # work waits for a back-off to pass: time alone will change that
            if owed.owed:  # the summary is printed; this run did not finish what forget owed
                raise typer.Exit(1)
        else:
            _follow(runtime, target)
    except SQLAlchemyError as exc:
        line = db_error_line(exc)
        say(f"memory-worker: the state database failed: {line}", level=logging.ERROR)
        raise typer.Exit(2) from None
    finally:
        runtime.close()
    if watch is not None and totals is not None and not started and _did_nothing(totals):
        watch.keep(_AT_REST_ANSWER, [totals.summary(), settings.log_json])


def _regenerate_owed_archives(runtime: Runtime, shelf: str) -> OwedArchives:
    """Regenerate the archives ``forget`` dropped without a model; one line when some stay
    owed (the model still does not answer)."""
    from dsh_memory_worker.worker.jobs.pending_repairs import OwedArchives

    with runtime.state.read() as repos:
        if not repos.audit.owed_archives():  # usually: the repair machinery loads only if not
            return OwedArchives()
    from dsh_memory_worker.worker.jobs.retract import regenerate_owed_archives

    owed = regenerate_owed_archives(runtime, shelf)
    if owed.owed:
        say(
            f"memory-worker: {len(owed.owed)} archive(s) dropped by forget are owed a "
            f"regeneration ({owed.why}); the next run with a model answering does it",
            level=logging.WARNING,
        )
    return owed


class _Stopped(BaseException):  # like KeyboardInterrupt: no `except Exception` stops it
    """SIGTERM arrived during ``run --once`` (SIGINT arrives as ``KeyboardInterrupt``)."""


def _sigterm_stops(_signum: int, _frame: FrameType | None) -> None:
    raise _Stopped


def _did_nothing(totals: OnceTotals) -> bool:
    """A pass that read no new event, ran no job and changed nothing in the store."""
    from dataclasses import asdict

    return (
        totals.new_events == 0
        and totals.finished == 0
        and not totals.unscanned
        and not totals.unfinished
        and not any(asdict(totals.counts()).values())
    )


def _run_once(runtime: Runtime, shelf: str, children: OnceChildren | None) -> OnceTotals:
    from sqlalchemy.exc import SQLAlchemyError

    from dsh_memory_worker.worker.commands.common import db_error_line
    from dsh_memory_worker.worker.logs import quiet_job_lines
    from dsh_memory_worker.worker.run.once_children import OnceTotals
    from dsh_memory_worker.worker.run.once_parallel import run_once
    from dsh_memory_worker.worker.run.stop_signals import set_signal

    # The progress bar and the summary tell the story; per-job lines only when asked (DEBUG).
    quiet_job_lines(runtime.settings.log_level)
    root = runtime.settings.sessions_root
    if not root.is_dir():
        from dsh_memory_worker.memory.dsh.locate import not_a_directory

        why = not_a_directory(root)
        say(
            f"memory-worker: DSH home {runtime.settings.dsh_home} has no sessions directory "
            f"({root}{' ' + why if why else ''}); nothing to do (check --dsh-home / $DSH_HOME)",
            level=logging.ERROR,
        )
        raise typer.Exit(1)
    first = "reading logs" if children is None else f"reading logs ({children.count} processes)"
    with _progress_bar(first) as (progress, _show):

        def _problem(line: str) -> None:
            say(line, level=logging.WARNING)

        totals = OnceTotals()
        # SIGTERM stops the run like Ctrl-C: the store call in flight is killed with its whole
        # group (memory.store.cli), and the summary says what was done and what was not.
        previous = set_signal(signal.SIGTERM, _sigterm_stops)  # None off the main thread
        try:
            run_once(runtime, shelf, children=children, progress=_show, say=_problem, totals=totals)
        except (KeyboardInterrupt, _Stopped) as exc:
            name = "SIGINT" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
            if progress is not None:
                progress.stop()
            say(f"stopped by {name}: {totals.summary()}", event="summary")
            raise typer.Exit(1) from None
        except SQLAlchemyError as exc:
            # A state outage mid-run: one line for it, then the summary naming every session
            # not finished (the fault guarantee), exit 1.
            if progress is not None:
                progress.stop()
            say(
                f"memory-worker: the state database failed: {db_error_line(exc)}; stopping",
                level=logging.ERROR,
            )
            say(totals.summary(), event="summary")
            raise typer.Exit(1) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    from dsh_memory_worker.worker.run.waiting import note_waiting

    for line in note_waiting(runtime, totals):  # owed work a back-off holds: named, exit 1
        say(line, level=logging.WARNING)
    say(totals.summary(), event="summary")
    if totals.failed or totals.unscanned or totals.unfinished:
        raise typer.Exit(1)
    return totals


_REQUEST_POLL_S = 5.0
_OWED_POLL_S = 60.0


def _submit_reconsolidations(runtime: Runtime, runner: InProcessRunner, shelf: str) -> None:
    """Hint ``consolidate`` for every session with a queued reconsolidation request (recorded by
    ``memory-worker reconsolidate`` or the startup backfill)."""
    from dsh_memory_worker.worker.jobs.reconsolidate import queued_sessions
    from dsh_memory_worker.worker.names import JOB_CONSOLIDATE

    for session_id in queued_sessions(runtime, shelf):
        runner.submit(JOB_CONSOLIDATE, session_id, shelf)


def _follow(runtime: Runtime, shelf: str) -> None:
    from dsh_memory_worker.worker.commands.common import serve_metrics, stop_on_signals
    from dsh_memory_worker.worker.jobs.runtime import owe_consolidation
    from dsh_memory_worker.worker.run.runner import InProcessRunner
    from dsh_memory_worker.worker.watch.watcher import Watcher

    serve_metrics(runtime.settings, runtime.state)
    stop = stop_on_signals()
    runner = InProcessRunner(runtime)
    owe_consolidation(runtime, runner.submit)
    watcher = Watcher(
        runtime, runner.submit, shelf=shelf, after_session=lambda _sid: runner.run_ready()
    )
    say(f"following {runtime.settings.sessions_root} → shelf {shelf!r} (Ctrl-C to stop)")
    next_requests = 0.0
    next_owed = time.monotonic() + _OWED_POLL_S  # the start of ``run`` tried them already

    def _work(_report: ScanReport) -> None:
        nonlocal next_requests, next_owed
        if time.monotonic() >= next_requests:  # reconsolidation requests from the CLI
            next_requests = time.monotonic() + _REQUEST_POLL_S
            _submit_reconsolidations(runtime, runner, shelf)
        if time.monotonic() >= next_owed:  # archives a model-less forget dropped
            next_owed = time.monotonic() + _OWED_POLL_S
            _regenerate_owed_archives(runtime, shelf)
        runner.run_ready()

    watcher.run(stop, after_poll=_work)
    say(
        f"stopped; {runner.stats.written} entries written, {runner.stats.retracted} retracted",
        event="summary",
    )
