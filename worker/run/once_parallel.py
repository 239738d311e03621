"""``memory-worker run --once [--jobs N]``: one pass over a DSH home, in one or N processes.

:func:`once_pass` is the single-process pass: scan every session and run its jobs right after
its scan, reconcile, hint the queued reconsolidation requests, drain.

With ``--jobs N`` (N > 1) :func:`run_once` first splits the sessions into N groups balanced by
log size (largest first, each to the least-loaded group) and hands one group to each of N child
processes (:mod:`worker.run.once_children`, forked before this process opened anything). A child
opens its own runtime (state engine, store) and does what :func:`once_pass` does, for its
sessions only; it reports every finished job over its pipe and hands cross-session work (a
project's ``cascade``) back to this process. Then :func:`once_pass` runs here and finishes
whatever is left: it scans the sessions of a child that
did not finish (the other logs were scanned and their scans recorded; scanning them again would
decode each log once more to count its messages), reconciles the whole shelf (every job still
owed by any session, from the recorded log facts and the watermarks), runs the handed-back
cascades and the queued reconsolidations. Watermarks advance only after the store writes, so a
child killed at any point loses nothing; its leases are released once it is gone, so the final
pass does not wait for them to expire.

Stopped (SIGTERM, SIGINT) while the children work, this process stops them all, gathers what
each did not finish (:meth:`OnceChildren.interrupt`) and lets the stop go on to its caller, as
one process would: ``run --once`` prints ``stopped by SIG…:`` and the summary naming every
session not finished, and exits 1.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import signal
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from dsh_memory_worker.worker.jobs.reconsolidate import queued_sessions
from dsh_memory_worker.worker.jobs.runtime import Runtime, owe_consolidation
from dsh_memory_worker.worker.names import JOB_CONSOLIDATE, archive_lease_key, session_lease_key
from dsh_memory_worker.worker.run.once_children import (
    ChildProcess,
    OnceChildren,
    OnceTotals,
    stopped_outcomes,
)
from dsh_memory_worker.worker.run.runner import InProcessRunner, JobKey
from dsh_memory_worker.worker.run.stop_signals import set_signal
from dsh_memory_worker.worker.watch.watcher import ScanReport, Watcher

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.context import JobResult

log = logging.getLogger(__name__)

#: ``(description or None = unchanged, completed, total or None = unchanged)``.
ProgressHook = Callable[[str | None, int, int | None], None]


# ------------------------------------------------------------------------------- entry point


def run_once(
    runtime: Runtime,
    shelf: str,
    *,
    children: OnceChildren | None = None,
    progress: ProgressHook | None = None,
    say: Callable[[str], None] | None = None,
    totals: OnceTotals | None = None,
) -> OnceTotals:
    """Process what is on disk: in this process alone, or with ``children`` (created before
    ``runtime`` was opened) first in those processes and then in a final pass here.

    ``say`` gets the one line about a child that failed or was killed, and the one that says
    why fewer processes than ``--jobs`` asked for are used (default: a warning). ``totals``
    (default: new) is filled as the run goes, so a caller stopped by a signal still has what
    was done and what was not."""
    totals = OnceTotals() if totals is None else totals
    hints: list[JobKey] = []
    rescan: set[str] | None = None  # None: scan every session
    with _each_warning_once() if children is not None else contextlib.nullcontext():
        if children is not None:
            started = time.perf_counter()
            try:
                with _sigterm_default_stops():
                    rescan = _children_phase(
                        runtime, shelf, children, totals, hints, progress, say or _warn
                    )
            except BaseException as exc:
                # Stopped like one process: every child stops and names what it did not finish.
                children.interrupt(totals, hints)
                if not any(child.sessions for child in children.children):
                    _name_all_unscanned(runtime, shelf, totals)  # stopped before the split
                if isinstance(exc, _Terminated):
                    children.stop()
                    os.kill(os.getpid(), signal.SIGTERM)  # SIG_DFL again: ends this process
                raise
            finally:
                children.stop()
            totals.children_seconds = time.perf_counter() - started
            if progress is not None:
                progress("finishing in one process", totals.finished, None)
        started = time.perf_counter()
        once_pass(runtime, shelf, totals, progress=progress, hints=hints, only_sessions=rescan)
        totals.final_seconds = time.perf_counter() - started
    return totals


def once_pass(
    runtime: Runtime,
    shelf: str,
    totals: OnceTotals,
    *,
    progress: ProgressHook | None = None,
    hints: Iterable[JobKey] = (),
    only_sessions: Collection[str] | None = None,
) -> None:
    """The single-process pass over the whole home (the scan limited to ``only_sessions`` when
    given); adds what it did to ``totals``."""
    base = totals.finished

    def _show(description: str | None, total: int | None = None) -> None:
        if progress is not None:
            finished = base + runner.stats.finished
            progress(description, finished, None if total is None else base + total)

    def _done(_result: JobResult) -> None:  # called per attempt: count finished jobs only
        _show(None)

    runner = InProcessRunner(runtime, on_result=_done, single_pass=True)
    # Each session's jobs run right after its scan, on the scan's decode of the log.
    watcher = Watcher(
        runtime,
        runner.submit,
        shelf=shelf,
        only_sessions=only_sessions,
        after_session=lambda _sid: runner.run_ready(),
    )
    scans: list[ScanReport] = []
    try:
        _pass(runtime, shelf, runner, watcher, _show, hints, scans)
    except BaseException:
        # Stopped (SIGINT, SIGTERM) or the state database failed: count what is done and name
        # the rest, so the caller's summary says which sessions are not finished.
        _count_stopped(totals, runner, watcher, scans, only_sessions)
        raise
    _count_scan(totals, scans[0], only_sessions)
    totals.add_tally(runner.stats.tally())
    totals.outcomes(runner.stats.unfinished, runner.stats.settled)


def _count_stopped(
    totals: OnceTotals,
    runner: InProcessRunner,
    watcher: Watcher,
    scans: list[ScanReport],
    only_sessions: Collection[str] | None,
) -> None:
    """What a pass that did not end did: its jobs, and as not finished every job left and every
    session of the home with no finished job (the scan itself may not have reached them)."""
    found: list[str] | None = None
    if scans:
        _count_scan(totals, scans[0], only_sessions)
    else:
        try:
            found = [location.session_id for location in watcher.discover()]
        except Exception:  # a listing that fails names nothing more
            found = []
        if only_sessions is None:
            totals.sessions = len(found)
    totals.add_tally(runner.stats.tally())
    totals.outcomes(stopped_outcomes(runner, found), runner.stats.settled)


def _name_all_unscanned(runtime: Runtime, shelf: str, totals: OnceTotals) -> None:
    """Stopped before any child had its sessions: name every session of the home, as a pass
    stopped before its scan does (:func:`_count_stopped`)."""
    try:
        found = [
            location.session_id for location in Watcher(runtime, _no_hint, shelf=shelf).discover()
        ]
    except Exception:  # a listing that fails names nothing more
        return
    totals.sessions = len(found)
    for session_id in found:
        totals.unfinished.setdefault(("scan", session_id), "not scanned")


def _pass(
    runtime: Runtime,
    shelf: str,
    runner: InProcessRunner,
    watcher: Watcher,
    _show: Callable[..., None],
    hints: Iterable[JobKey],
    scans: list[ScanReport],
) -> None:
    owe_consolidation(runtime, runner.submit)
    for job, session_id, hint_shelf in hints:
        runner.submit(job, session_id, hint_shelf)
    report = watcher.poll_once()
    scans.append(report)
    watcher.reconcile()
    for session_id in queued_sessions(runtime, shelf):  # recorded by `reconsolidate`
        runner.submit(JOB_CONSOLIDATE, session_id, shelf)
    _show("writing memory", runner.stats.finished + runner.pending())
    runner.drain()
    _show("writing memory", runner.stats.finished)


def _count_scan(
    totals: OnceTotals, report: ScanReport, only_sessions: Collection[str] | None
) -> None:
    if only_sessions is None:
        totals.sessions = report.sessions
    totals.new_events += report.new_events
    totals.unscanned.extend(report.unscanned)


def plan_groups(sizes: Sequence[tuple[str, int]], count: int) -> list[list[str]]:
    """Session ids split into at most ``count`` non-empty groups balanced by ``(id, size)``:
    largest first, each to the group with the least bytes so far."""
    groups: list[list[str]] = [[] for _ in range(max(1, count))]
    loads = [(0, index) for index in range(len(groups))]
    for session_id, size in sorted(sizes, key=lambda item: (-item[1], item[0])):
        load, index = heapq.heappop(loads)
        groups[index].append(session_id)
        heapq.heappush(loads, (load + size, index))
    return [group for group in groups if group]


def _children_phase(
    runtime: Runtime,
    shelf: str,
    children: OnceChildren,
    totals: OnceTotals,
    hints: list[JobKey],
    progress: ProgressHook | None,
    say: Callable[[str], None],
) -> set[str] | None:
    """Discover, split, let the children work, adding the hints they hand back to ``hints``;
    returns the sessions of the children that did not finish (``None``: the final pass scans
    every session, because the machine or the home was too small for the children and they
    were sent none)."""
    from dsh_memory_worker.worker.run.cpu_budget import (
        CpuProbe,
        ProcessPlan,
        plan_processes,
    )  # psutil: --jobs only

    probe = CpuProbe() if runtime.settings.jobs_adapt else None
    locations = Watcher(runtime, _no_hint, shelf=shelf).discover()
    totals.sessions = len(locations)
    sizes = [(location.session_id, _size(location.path)) for location in locations]
    plan = ProcessPlan(children.count)
    if probe is not None:
        plan = plan_processes(
            children.count,
            free_cores=probe.free_cores(),
            sessions=len(sizes),
            log_bytes=sum(size for _sid, size in sizes),
        )
    totals.processes = plan.count
    if plan.why is not None:
        say(
            f"memory-worker: --jobs {children.count}: {plan.why}; "
            + ("running in one process" if plan.count == 1 else f"using {plan.count} processes")
        )
    if plan.count == 1:
        children.assign([])  # they exit; this process does it all
        return None
    children.assign(plan_groups(sizes, plan.count))

    def _progress() -> None:
        if progress is not None:
            progress(None, totals.finished, None)

    lost = children.collect(totals, _progress, hints)
    for child in lost:
        say(_lost_line(child, children.count))
        _release_leases(runtime, child)
    return {sid for child in lost for sid in child.sessions}


def _lost_line(child: ChildProcess, count: int) -> str:
    code = child.process.exitcode
    if child.error is not None:
        why = f"failed: {child.error}"
    elif code is not None and code < 0:
        try:
            why = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            why = f"was killed by signal {-code}"
    else:
        why = f"exited with status {code}"
    return (
        f"memory-worker: process {child.number}/{count} (pid {child.process.pid}) {why}; "
        f"the final pass takes over its {len(child.sessions)} session(s)"
    )


def _release_leases(runtime: Runtime, child: ChildProcess) -> None:
    """Release the session and archive leases a dead child still held (its fencing tokens are
    dead with it), so the final pass need not wait ``lease_ttl_s`` for them to expire."""
    if child.owner is None:
        return  # it died before it could take any
    with runtime.state.transaction() as repos:
        projects = {
            state.project
            for sid in child.sessions
            if (state := repos.sessions.get(sid)) is not None
        }
        keys = [session_lease_key(sid) for sid in child.sessions]
        keys += [archive_lease_key(project) for project in sorted(projects)]
        for key in keys:
            held = repos.leases.holder(key)
            if held is not None and held.owner == child.owner:
                repos.leases.release(held)


# --------------------------------------------------------------------------- in the child


# ---------------------------------------------------------------------------------- helpers


class _Terminated(BaseException):
    """SIGTERM arrived while the children were working, in a caller that left it at its
    default."""


@contextlib.contextmanager
def _sigterm_default_stops() -> Iterator[None]:
    """For a caller that left SIGTERM at its default (the process ends at once, its children
    left working): while the children work, SIGTERM stops them first and then ends this process
    the way the default would have. A caller's own handler (``run --once``'s: stop, summary,
    exit 1) is left alone."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def _raise(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise _Terminated

    previous = set_signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        if previous is not None and signal.getsignal(signal.SIGTERM) is _raise:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _each_warning_once() -> Iterator[None]:
    """With children, a broken log or a duplicate session id is seen by the parent's discovery,
    a child and the final pass: say it once."""
    seen: set[str] = set()

    def _first(record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        line = record.getMessage()
        if line in seen:
            return False
        seen.add(line)
        return True

    log.addFilter(_first)
    try:
        yield
    finally:
        log.removeFilter(_first)


def _warn(line: str) -> None:
    log.warning("%s", line)


def _no_hint(_job: str, _session_id: str, _shelf: str) -> None:
    """Discovery only: the parent sends no hints."""


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
