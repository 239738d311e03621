"""What ``reconsolidate --replace`` and ``relog`` share: choosing sessions, and running, queueing
or following their ``rewrite`` jobs with one honest line per session on stdout.

Where the work runs:

* ``--dry-run`` — plans only (here), prints what would change with the model calls and input
  tokens it expects, writes nothing (no request either);
* ``--wait`` — here, session by session under each session's lease, retried like any job, with
  a progress bar on stderr; ``--max-calls N`` stops before the call that would exceed N;
* ``--workers`` — records one request per session and sends a ``rewrite`` job hint to the Celery
  broker (one session per lease, retried by Celery); with ``--wait`` it follows the requests
  until each is settled. The one form that needs the ``distributed`` extra: without it, one
  line naming it, exit 2;
* neither — records the requests and sends the hints; the Celery workers, or a running
  ``memory-worker run``, pick them up (a lost hint is re-sent by the reconcile loop). Without
  the extra there is no broker: the requests are recorded for ``memory-worker run``.

Celery is imported only to send hints, never at module level: every other form runs from the
base install.

The options and :class:`Selection` live in :mod:`worker.commands.rewrite_options` (imported at
start-up); this module loads the runtime and is imported only when a command runs.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsh_memory_worker.memory.printable import printable
from dsh_memory_worker.memory.store.base import StoreError
from dsh_memory_worker.worker.commands.common import (
    check_store_or_exit,
    command_runtime,
    missing_distributed,
    require_distributed,
)
from dsh_memory_worker.worker.commands.options import err, shown
from dsh_memory_worker.worker.commands.rewrite_options import RewriteOptions, Selection
from dsh_memory_worker.worker.jobs.guard import run_job
from dsh_memory_worker.worker.jobs.logread import PermanentJobError, TransientJobError
from dsh_memory_worker.worker.jobs.reconsolidate import request_rewrite, rewrite_result
from dsh_memory_worker.worker.jobs.rewrite_job import plan_session
from dsh_memory_worker.worker.jobs.rewrite_lines import calls_text, plan_line
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.names import JOB_REWRITE


def select_sessions(runtime: Runtime, chosen: Selection) -> list[str]:
    """Named sessions (unknown ones kept, so they are reported), else every known one; narrowed
    by ``--project`` and ``--since``."""
    with runtime.state.read() as repos:
        known = {s.session_id: s for s in repos.sessions.list() if s.path and not s.forgotten}
    ids = list(dict.fromkeys(chosen.ids)) if chosen.ids else sorted(known)
    since = (
        chosen.since.replace(tzinfo=dt.UTC)
        if chosen.since and not chosen.since.tzinfo
        else chosen.since
    )
    out = []
    for sid in ids:
        state = known.get(sid)
        if state is not None and chosen.project is not None and state.project != chosen.project:
            continue
        if (
            state is not None
            and since is not None
            and (state.last_activity_at is None or state.last_activity_at < since)
        ):
            continue
        out.append(sid)
    return out


def rewrite_command(options: RewriteOptions) -> None:
    """The body of ``reconsolidate --replace`` (mode ``replace``) and ``relog``: settings,
    runtime, selection, then :func:`run_rewrite`; exits with its status."""
    if options.workers:  # Celery jobs: the one option of these commands that needs the extra
        require_distributed(f"{options.command} --workers")
    if options.max_calls is not None and not options.runs_here:
        err.print(
            "memory-worker: --max-calls needs --wait without --workers (this process "
            "keeps the budget)"
        )
        raise typer.Exit(2)
    settings, runtime = command_runtime(
        options.command, options.config, shelf=options.shelf, dsh_home=options.dsh_home
    )
    try:
        check_store_or_exit(runtime, settings.store_shelf)
        ids = select_sessions(runtime, options.chosen)
        if not ids:
            err.print("no sessions match (run `memory-worker run` or `daemon` first)", markup=False)
        code = run_rewrite(runtime, settings.store_shelf, ids, options)
    finally:
        runtime.close()
    raise typer.Exit(code)


@dataclass(slots=True)
class Row:
    """One session's answer: ``status`` is planned / done / failed / error / queued /
    unfinished / not-started."""

    session_id: str
    status: str
    line: str
    counts: dict[str, Any] | None = None
    plan: list[dict[str, str]] | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def run_rewrite(runtime: Runtime, shelf: str, ids: list[str], options: RewriteOptions) -> int:
    """Carry out (or plan, queue, follow) ``mode`` for ``ids``; the exit status."""
    if options.dry_run:
        rederived: set[str] = set()  # archives an earlier session's run makes current
        rows = [_dry_row(runtime, shelf, sid, options, rederived) for sid in ids]
    elif options.runs_here:
        rows = _run_here(runtime, shelf, ids, options)
    else:
        rows = _queue(runtime, shelf, ids, options)
    if options.json_:
        totals = {
            key: sum(int((r.counts or {}).get(key, 0)) for r in rows)
            for key in ("calls", "max_calls", "input_tokens")
        }
        typer.echo(
            json.dumps(
                {
                    "mode": options.mode,
                    "shelf": shelf,
                    "dry_run": options.dry_run,
                    **totals,
                    "sessions": [r.as_json() for r in rows],
                },
                indent=2,
            )
        )
    else:
        for row in rows:
            typer.echo(printable(f"{row.session_id}: {row.line}"))
        if options.dry_run and rows:
            calls, bound, tokens = (
                sum(int((r.counts or {}).get(key, 0)) for r in rows)
                for key in ("calls", "max_calls", "input_tokens")
            )
            typer.echo(
                f"dry run: {calls_text(calls, bound)}, ~{tokens} input tokens in "
                f"{len(rows)} session(s); nothing changed"
            )
    bad = {"failed", "error", "unfinished"}
    return 1 if any(r.status in bad for r in rows) else 0


def _dry_row(
    runtime: Runtime,
    shelf: str,
    sid: str,
    options: RewriteOptions,
    rederived: set[str] | None = None,
) -> Row:
    """``sid``'s plan as a row; ``rederived`` (a dry run of several sessions): the archives the
    sessions before it re-derive, which its run will find current (updated)."""
    try:
        planned = plan_session(
            runtime, runtime.store(shelf), shelf, sid, options.mode, force=options.force
        )
    except (PermanentJobError, TransientJobError, StoreError, OSError) as exc:
        return Row(sid, "error", f"error — {' '.join(str(exc).split())}")
    if planned.plan is None:
        return Row(sid, "error", planned.error)
    plan = planned.plan
    if rederived is not None and not plan.waiting:
        plan = plan.after(rederived)
        rederived.update(plan.archives)
    return Row(
        sid,
        "planned",
        plan_line(plan),
        counts={
            "calls": plan.calls,
            "max_calls": plan.max_calls,
            "input_tokens": plan.input_tokens,
        },
        plan=[asdict(item) for item in plan.items()],
    )


def _progress(json_: bool, total: int, what: str) -> tuple[Progress, Any]:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    bar = Progress(*columns, console=err, transient=json_, disable=total < 2)
    return bar, bar.add_task(what, total=total)


def _run_here(runtime: Runtime, shelf: str, ids: list[str], options: RewriteOptions) -> list[Row]:
    rows: list[Row] = []
    spent = 0
    what = "rewriting" if options.mode == "replace" else "relogging"
    progress, task = _progress(options.json_, len(ids), what)
    max_calls = options.max_calls
    with progress:
        for sid in ids:
            budget = None if max_calls is None else max(0, max_calls - spent)
            rows.append(_run_one(runtime, shelf, sid, options, budget))
            spent += int((rows[-1].counts or {}).get("calls", 0))
            progress.advance(task)
    return rows


def _run_one(
    runtime: Runtime, shelf: str, sid: str, options: RewriteOptions, budget: int | None
) -> Row:
    planned = _dry_row(runtime, shelf, sid, options)
    if planned.status == "error":
        return planned
    with runtime.state.transaction() as repos:
        request = request_rewrite(
            repos, sid, shelf, options.mode, force=options.force, max_calls=budget
        )
    settings = runtime.settings
    # A lease held by a process that died is free once it expires: wait that long for `busy`.
    busy_until = time.monotonic() + 2 * settings.lease_ttl_s + 5
    attempt = 0
    while True:
        result = run_job(runtime, JOB_REWRITE, sid, shelf, attempt=attempt)
        detail = result.detail
        if result.status == "busy" and time.monotonic() < busy_until:
            time.sleep(0.5)
        elif result.status == "retry" and attempt < settings.task_max_retries:
            time.sleep(min(30.0, settings.retry_backoff_s * 2**attempt))
            attempt += 1
        else:
            break
    return _settled(runtime, shelf, sid, request) or Row(
        sid,
        "unfinished",
        f"not finished — {detail}; the request stays queued (rerun, or a "
        "running worker retries it)",
    )


def _settled(runtime: Runtime, shelf: str, sid: str, request: int) -> Row | None:
    with runtime.state.read() as repos:
        found = rewrite_result(repos, sid, shelf, request)
    if found is None:
        return None
    outcome, result = found
    line = str(result.get("line") or outcome)
    return Row(sid, "done" if outcome == "done" else "failed", line, counts=result)


def _queue(runtime: Runtime, shelf: str, ids: list[str], options: RewriteOptions) -> list[Row]:
    requests: dict[str, int] = {}
    rows: dict[str, Row] = {}
    for sid in ids:
        planned = _dry_row(runtime, shelf, sid, options)
        if planned.status == "error":
            rows[sid] = planned
            continue
        with runtime.state.transaction() as repos:
            requests[sid] = request_rewrite(repos, sid, shelf, options.mode, force=options.force)
        rows[sid] = Row(sid, "queued", f"queued — a {options.mode} job was sent to the workers")
    if missing_distributed():  # the base install: no broker, `memory-worker run` takes it up
        return [
            rows[sid]
            if rows[sid].status == "error"
            else Row(
                sid,
                "queued",
                "queued — recorded: `memory-worker run` picks it up (or rerun with --wait)",
            )
            for sid in ids
        ]
    try:
        from dsh_memory_worker.worker.run import tasks  # Celery and kombu: the distributed extra

        tasks.configure(runtime.settings, queue=options.queue)
        for sid in requests:
            tasks.enqueue(JOB_REWRITE, sid, shelf)
    except Exception as exc:  # kombu raises several types for an unreachable broker
        line = " ".join(str(exc).split())[:200]
        err.print(
            f"memory-worker: could not send the hints to the broker ({shown(line)})", soft_wrap=True
        )
        for sid in requests:
            rows[sid] = Row(
                sid,
                "queued",
                "queued — recorded, but the broker is unreachable: "
                "a running `memory-worker run` or the daemon takes it up, or rerun "
                "with --wait",
            )
        return [rows[sid] for sid in ids]
    if options.wait:
        _follow(runtime, shelf, requests, rows, options.json_, options.timeout_s)
    return [rows[sid] for sid in ids]


def _follow(
    runtime: Runtime,
    shelf: str,
    requests: dict[str, int],
    rows: dict[str, Row],
    json_: bool,
    timeout_s: float,
) -> None:
    deadline = time.monotonic() + timeout_s
    open_ = dict(requests)
    progress, task = _progress(json_, len(open_), "waiting for the workers")
    with progress:
        while open_ and time.monotonic() < deadline:
            for sid, request in list(open_.items()):
                row = _settled(runtime, shelf, sid, request)
                if row is not None:
                    rows[sid] = row
                    del open_[sid]
                    progress.advance(task)
            if open_:
                time.sleep(0.5)
    for sid in open_:
        rows[sid] = Row(
            sid,
            "unfinished",
            f"not finished after {timeout_s:g}s — the job is "
            "still queued or running on the workers",
        )
