"""The child processes of ``memory-worker run --once --jobs N``
(see :mod:`worker.run.once_parallel`).

:class:`OnceChildren` forks N processes before the parent opens anything; each waits for its
share of the sessions, opens its own runtime (state engine, store), scans its sessions and runs
their jobs (:func:`_child_pass`), and reports over its pipe: finished jobs, the new events it
scanned, hints for the final pass (a project's ``cascade``), its log lines, its lease owner, and
``end`` once its sessions are done. :class:`OnceTotals` adds the reports up.

Stopping (SIGTERM or SIGINT, to the parent or to the whole process group): a child stops at its
first such signal wherever it is (the store call in flight is killed with its group, as in one
process), reports its jobs and what it did not finish, and exits; the parent, stopped the same
way, stops every child (:meth:`OnceChildren.interrupt`), reads those last reports and names as
not finished every session of a child that could not report. The signals are blocked while the
children are forked (a Ctrl-C then arrives once they exist) and while a child writes a report
(a signal never cuts one in half).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TYPE_CHECKING, Any

from dsh_memory_worker.worker.jobs.runtime import build_runtime, default_owner, owe_consolidation
from dsh_memory_worker.worker.logs import TREES
from dsh_memory_worker.worker.names import JOB_CASCADE
from dsh_memory_worker.worker.run.once_summary import summary_line
from dsh_memory_worker.worker.run.runner import InProcessRunner, JobKey, Tally
from dsh_memory_worker.worker.run.stop_signals import (
    STOP_SIGNALS,
    ignore,
    stop_signals_blocked,
    stop_signals_ignored,
)
from dsh_memory_worker.worker.settings import Settings
from dsh_memory_worker.worker.watch.watcher import Watcher

if TYPE_CHECKING:
    from dsh_memory_worker.worker.jobs.context import JobResult

log = logging.getLogger(__name__)

#: Jobs a child hands back to the final pass: they work on a whole project, not one session.
_FINAL_PASS_JOBS = frozenset({JOB_CASCADE})
_WAIT_S = 1.0
#: How long a stopped parent reads its stopping children's last reports before it kills them.
_STOP_S = 10.0
STOPPED = "stopped before it finished"


@dataclass(kw_only=True)
class OnceTotals(Tally):
    """What a once-pass did, summed over the child processes and the final pass."""

    sessions: int = 0
    new_events: int = 0
    #: Processes the sessions were split over (``--jobs`` may use fewer: ``cpu_budget``).
    processes: int = 1
    #: Sessions whose scan failed (named in the summary; the run fails).
    unscanned: list[str] = field(default_factory=list)
    #: Seconds from the discovery to the last child's exit, and in this process's pass.
    children_seconds: float = 0.0
    final_seconds: float = 0.0
    #: Jobs that ended failed and were not finished later: ``(job, session id)`` -> reason.
    unfinished: dict[tuple[str, str], str] = field(default_factory=dict)

    def outcomes(
        self, unfinished: dict[tuple[str, str], str], settled: Collection[tuple[str, str]]
    ) -> None:
        """Take a pass's failed and finished jobs: a job finished in a later pass (the final
        pass after a child's failure) is no longer unfinished."""
        for key in settled:
            self.unfinished.pop(key, None)
        self.unfinished.update(unfinished)

    @property
    def unfinished_sessions(self) -> list[str]:
        return sorted({session_id for _job, session_id in self.unfinished})

    def summary(self) -> str:
        """The one line ``run --once`` ends with (naming every session it could not finish)."""
        return summary_line(
            sessions=self.sessions,
            new_events=self.new_events,
            written=self.written,
            retracted=self.retracted,
            edges=self.edges,
            done=self.done,
            failed=self.failed,
            unscanned=self.unscanned,
            unfinished_sessions=self.unfinished_sessions,
        )


@dataclass
class ChildProcess:
    number: int
    process: BaseProcess
    conn: Connection
    sessions: list[str] = field(default_factory=list)
    owner: str | None = None
    ended: bool = False
    #: It was stopped by a signal and reported what it did not finish.
    stopped: bool = False
    error: str | None = None


class OnceChildren:
    """``jobs`` child processes, started at once, each waiting for its share of the sessions.

    Create them BEFORE this process opens the state database or a store (``memory-worker run``
    does it first thing): they are forked, and nothing open may cross a fork (an inherited
    SQLite connection corrupts the database when both sides use it). Forking then is safe and
    costs a child a few milliseconds, where a spawned child re-imports the worker: seconds on a
    busy machine, more than the whole work of a small home. Each child opens its own runtime
    (state engine, store) once its sessions arrive. While another thread runs here (it could
    hold a lock a forked child would inherit locked), they are spawned instead."""

    def __init__(self, settings: Settings, shelf: str, jobs: int) -> None:
        # What every child runs, imported once here so each forked child inherits it (a run in
        # one process imports it with its first scan or job: :mod:`worker.run.runner`).
        import dsh_memory_worker.memory.dsh.scanner
        import dsh_memory_worker.worker.jobs.guard
        import dsh_memory_worker.worker.watch.poll_source
        import dsh_memory_worker.worker.watch.scan_digest  # noqa: F401

        context: ForkContext | SpawnContext
        if threading.active_count() == 1:
            context = multiprocessing.get_context("fork")
        else:
            context = multiprocessing.get_context("spawn")
        self.children: list[ChildProcess] = []
        try:
            # Blocked while forking: a child starts with them blocked and installs its own stop
            # before it takes them (_child_main); here one that arrived meanwhile (a Ctrl-C to the
            # process group) is raised as the block ends, with every child started to be stopped.
            with stop_signals_blocked():
                for number in range(1, jobs + 1):
                    ours, theirs = context.Pipe()
                    # A child closes the ends it inherits, so each pipe reads EOF once its two
                    # processes are gone.
                    parent_ends = [child.conn for child in self.children] + [ours]
                    process = context.Process(
                        target=_child_main,
                        args=(theirs, parent_ends, settings, shelf),
                        daemon=True,
                        name=f"memory-worker run --once process {number}/{jobs}",
                    )
                    process.start()
                    theirs.close()
                    self.children.append(ChildProcess(number, process, ours))
        except BaseException:
            self.stop()
            raise

    @property
    def count(self) -> int:
        return len(self.children)

    def assign(self, groups: Sequence[list[str]]) -> None:
        """Send each child its group (a child without one exits)."""
        for index, child in enumerate(self.children):
            child.sessions = list(groups[index]) if index < len(groups) else []
            with contextlib.suppress(OSError):  # a child already gone: collect() says so
                child.conn.send(child.sessions)

    def collect(
        self,
        totals: OnceTotals,
        on_progress: Callable[[], None],
        hints: list[JobKey],
    ) -> list[ChildProcess]:
        """Read every child's reports until all have exited; returns the children that did not
        finish their sessions (crashed, killed, or failed)."""
        reading = {child.conn: child for child in self.children}
        while reading:
            for ready in wait(list(reading), timeout=_WAIT_S):
                assert isinstance(ready, Connection)
                child = reading[ready]
                try:
                    message = ready.recv()
                except (EOFError, OSError):  # the child exited (or died mid-message)
                    del reading[ready]
                    continue
                self._handle(child, message, totals, hints)
                on_progress()
        lost = []
        for child in self.children:
            child.process.join(timeout=10)
            if child.sessions and not child.ended:
                lost.append(child)
        return lost

    def interrupt(self, totals: OnceTotals, hints: list[JobKey]) -> None:
        """This process was stopped (SIGTERM, SIGINT) or failed while the children worked: stop
        every child (SIGTERM) and read, for up to ``_STOP_S``, the last reports of each (its jobs
        and what it did not finish); then name as not finished every session of a child that
        neither ended nor reported, and of every hint the final pass will not run. Further
        SIGINT and SIGTERM are ignored meanwhile (this is already the stop)."""
        with stop_signals_ignored():
            for child in self.children:
                if child.process.is_alive():
                    child.process.terminate()
            reading = {child.conn: child for child in self.children if not child.conn.closed}
            deadline = time.monotonic() + _STOP_S
            while reading and (left := deadline - time.monotonic()) > 0:
                for ready in wait(list(reading), timeout=left):
                    assert isinstance(ready, Connection)
                    try:
                        message = ready.recv()
                    except Exception:  # it exited, or a report was cut when this one stopped
                        del reading[ready]
                        continue
                    self._handle(reading[ready], message, totals, hints)
        for child in self.children:
            if not child.ended and not child.stopped:
                for session_id in child.sessions:
                    totals.unfinished.setdefault(("run", session_id), STOPPED)
        for job, session_id, _shelf in hints:
            totals.unfinished.setdefault((job, session_id), STOPPED)

    def stop(self) -> None:
        """Terminate the children still running and wait for them."""
        for child in self.children:
            if child.process.is_alive():
                child.process.terminate()
        for child in self.children:
            child.process.join(timeout=10)
            if child.process.is_alive():
                child.process.kill()
                child.process.join(timeout=10)
            child.conn.close()

    @staticmethod
    def _handle(
        child: ChildProcess, message: tuple[Any, ...], totals: OnceTotals, hints: list[JobKey]
    ) -> None:
        kind = message[0]
        if kind == "jobs":
            totals.add_tally(message[1])
        elif kind == "scanned":
            totals.new_events += message[1]
            totals.unscanned.extend(message[2])
        elif kind == "hint":
            hints.append((message[1], message[2], message[3]))
        elif kind == "log":
            log.log(message[1], "%s", message[2])
        elif kind == "owner":
            child.owner = message[1]
        elif kind == "error":
            child.error = message[1]
        elif kind == "outcomes":
            totals.outcomes(dict(message[1]), message[2])
        elif kind == "end":
            child.ended = True
        elif kind == "stopped":
            child.stopped = True


class _ParentGone(Exception):
    """The parent's end of the pipe is closed: stop working."""


class _ChildStopped(BaseException):  # like KeyboardInterrupt: no `except Exception` stops it
    """SIGTERM or SIGINT reached a child: it stops where it is."""


def _stop_child(_signum: int, _frame: FrameType | None) -> None:
    # Once: the parent's SIGTERM that follows a group-wide signal must not cut the report.
    for signum in STOP_SIGNALS:
        signal.signal(signum, ignore)
    raise _ChildStopped


def _child_main(
    conn: Connection, parent_ends: list[Connection], settings: Settings, shelf: str
) -> None:
    """A child process: wait for its sessions, then scan them and run their jobs. On its way
    out it no longer stops on SIGTERM / SIGINT: the parent's stop may reach it in its last
    lines or multiprocessing's exit finalizers, where raising would print a traceback."""
    try:
        try:
            _child_work(conn, parent_ends, settings, shelf)
        finally:  # blocked, a stop that comes now is never delivered: the process ends anyway
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    except _ChildStopped:  # it came just before the block (the handler is ``ignore`` since)
        pass


def _child_work(
    conn: Connection, parent_ends: list[Connection], settings: Settings, shelf: str
) -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_child)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked since the fork
        for end in parent_ends:
            end.close()
        sessions: list[str] = conn.recv()
    except (EOFError, OSError, _ChildStopped):
        return  # the parent stopped before handing out work: it names these sessions
    if not sessions:
        return

    def send(message: tuple[Any, ...]) -> None:
        try:
            with stop_signals_blocked():  # a report is never cut in half
                conn.send(message)
        except OSError:
            raise _ParentGone from None

    _forward_logs(settings, send)
    try:
        _child_pass(settings, shelf, frozenset(sessions), send)
        send(("end",))
    except (_ParentGone, _ChildStopped):
        raise SystemExit(1) from None
    except Exception as exc:  # reported as one line by the parent; the final pass takes over
        with contextlib.suppress(_ParentGone):
            send(("error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"))
        raise SystemExit(1) from None


def _child_pass(
    settings: Settings, shelf: str, mine: frozenset[str], send: Callable[[tuple[Any, ...]], None]
) -> None:
    # The parent migrated the state database before it handed out the sessions.
    runtime = build_runtime(settings, owner=default_owner("run"), force_idle=True, migrate=False)
    try:
        send(("owner", runtime.owner))  # before any lease is taken
        last = Tally()

        def _done(_result: JobResult) -> None:
            nonlocal last
            now = runner.stats.tally()
            send(("jobs", now.tally_since(last)))
            last = now

        runner = InProcessRunner(runtime, on_result=_done, single_pass=True)

        def submit(job: str, session_id: str, hint_shelf: str) -> None:
            if job in _FINAL_PASS_JOBS:
                send(("hint", job, session_id, hint_shelf))
            elif session_id in mine:  # idle-closes and reconcile hint every session
                runner.submit(job, session_id, hint_shelf)

        scanned = False
        try:
            owe_consolidation(runtime, submit)
            watcher = Watcher(
                runtime,
                submit,
                shelf=shelf,
                only_sessions=mine,
                after_session=lambda _sid: runner.run_ready(),
            )
            report = watcher.poll_once()
            scanned = True
            send(("scanned", report.new_events, report.unscanned))
            watcher.reconcile()
            runner.drain()
        except _ChildStopped:
            left = stopped_outcomes(runner, None if scanned else mine)
            send(("outcomes", list(left.items()), list(runner.stats.settled)))
            send(("stopped",))
            raise
        send(("outcomes", list(runner.stats.unfinished.items()), list(runner.stats.settled)))
    finally:
        runtime.close()


def stopped_outcomes(
    runner: InProcessRunner, unscanned: Iterable[str] | None
) -> dict[tuple[str, str], str]:
    """What a pass stopped mid-way did not finish: its failed jobs, every job still queued, and,
    when its scan had not ended, every one of ``unscanned`` (the sessions it was to scan) with
    no finished job."""
    unfinished = dict(runner.stats.unfinished)
    for job, session_id, _shelf in runner.left():
        unfinished.setdefault((job, session_id), STOPPED)
    if unscanned is not None:
        done = {session_id for _job, session_id in runner.stats.settled}
        for session_id in unscanned:
            if session_id not in done:
                unfinished.setdefault(("scan", session_id), "not scanned")
    return unfinished


class _ForwardLogs(logging.Handler):
    """Sends each log line to the parent, which prints it (one stream, under its progress bar)."""

    def __init__(self, send: Callable[[tuple[Any, ...]], None]) -> None:
        super().__init__()
        self._send = send
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # never let logging break a job
            self._send(("log", record.levelno, self.format(record)))


def _forward_logs(settings: Settings, send: Callable[[tuple[Any, ...]], None]) -> None:
    # As in the parent's pass: per-job lines only when asked for (DEBUG).
    level = logging.DEBUG if settings.log_level == "DEBUG" else logging.WARNING
    root = logging.getLogger()
    root.handlers[:] = [_ForwardLogs(send)]
    root.setLevel(logging.WARNING)
    for tree in TREES:
        logging.getLogger(tree).setLevel(level)
