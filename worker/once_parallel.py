"""``memory-worker run --once [--jobs N]``: one pass over a DSH home, in one or N processes.

:func:`once_pass` is the single-process pass: scan every session and run its jobs right after
its scan, reconcile, hint the queued reconsolidation requests, drain.

With ``--jobs N`` (N > 1) :func:`run_once` first splits the sessions into N groups balanced by
log size (largest first, each to the least-loaded group) and hands one group to each of N child
processes (:class:`OnceChildren`, forked before this process opened anything). A child opens
its own runtime (state engine, store) and does what :func:`once_pass` does, for its sessions
only; it reports every finished job over its pipe and hands cross-session work (a project's
``cascade``) back to this process. Then
:func:`once_pass` runs here and finishes whatever is left: it scans the sessions of a child that
did not finish (the other logs were scanned and their scans recorded; scanning them again would
decode each log once more to count its messages), reconciles the whole shelf (every job still
owed by any session, from the recorded log facts and the watermarks), runs the handed-back
cascades and the queued reconsolidations. Watermarks advance only after the store writes, so a
child killed at any point loses nothing; its leases are released once it is gone, so the final
pass does not wait for them to expire.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from worker.jobs.cascade import JOB_CASCADE
from worker.jobs.reconsolidate import queued_sessions
from worker.jobs.runtime import Runtime, build_runtime, default_owner, owe_consolidation
from worker.names import archive_lease_key, session_lease_key
from worker.pipeline import JOB_CONSOLIDATE, JobResult
from worker.runner import InProcessRunner, JobKey
from worker.settings import Settings
from worker.watch import Watcher

log = logging.getLogger("memory_worker")

#: ``(description or None = unchanged, completed, total or None = unchanged)``.
ProgressHook = Callable[[str | None, int, int | None], None]
#: Jobs a child hands back to the final pass: they work on a whole project, not one session.
_FINAL_PASS_JOBS = frozenset({JOB_CASCADE})
_WAIT_S = 1.0


@dataclass
class OnceTotals:
    """What a once-pass did, summed over the child processes and the final pass."""

    sessions: int = 0
    new_events: int = 0
    done: int = 0
    failed: int = 0
    written: int = 0
    retracted: int = 0
    edges: int = 0
    #: Seconds from the discovery to the last child's exit, and in this process's pass.
    children_seconds: float = 0.0
    final_seconds: float = 0.0

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def summary(self) -> str:
        """The one line ``run --once`` ends with."""
        return (
            f"{self.sessions} sessions, {self.new_events} new events; "
            f"{self.written} entries written, {self.retracted} retracted, {self.edges} edges; "
            f"{self.done} jobs done, {self.failed} failed"
        )


# ------------------------------------------------------------------------------- entry point


def run_once(
    runtime: Runtime,
    shelf: str,
    *,
    children: OnceChildren | None = None,
    progress: ProgressHook | None = None,
    say: Callable[[str], None] | None = None,
) -> OnceTotals:
    """Process what is on disk: in this process alone, or with ``children`` (created before
    ``runtime`` was opened) first in those processes and then in a final pass here.

    ``say`` gets the one line about a child that failed or was killed (default: a warning)."""
    totals = OnceTotals()
    hints: list[JobKey] = []
    rescan: set[str] | None = None  # None: scan every session
    with _each_warning_once() if children is not None else contextlib.nullcontext():
        if children is not None:
            started = time.perf_counter()
            try:
                hints, rescan = _children_phase(runtime, shelf, children, totals, progress,
                                                say or _warn)
            except _Terminated:
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
            finished = base + runner.stats.done + runner.stats.failed
            progress(description, finished, None if total is None else base + total)

    def _done(_result: JobResult) -> None:  # called per attempt: count finished jobs only
        _show(None)

    runner = InProcessRunner(runtime, on_result=_done)
    owe_consolidation(runtime, runner.submit)
    for job, session_id, hint_shelf in hints:
        runner.submit(job, session_id, hint_shelf)
    # Each session's jobs run right after its scan, on the scan's decode of the log.
    watcher = Watcher(runtime, runner.submit, shelf=shelf, only_sessions=only_sessions,
                      after_session=lambda _sid: runner.run_ready())
    report = watcher.poll_once()
    watcher.reconcile()
    for session_id in queued_sessions(runtime, shelf):  # recorded by `reconsolidate`
        runner.submit(JOB_CONSOLIDATE, session_id, shelf)
    _show("writing memory", runner.stats.done + runner.stats.failed + runner.pending())
    runner.drain()
    _show("writing memory", runner.stats.done + runner.stats.failed)
    s = runner.stats
    if only_sessions is None:
        totals.sessions = report.sessions
    totals.new_events += report.new_events
    totals.done += s.done
    totals.failed += s.failed
    totals.written += s.written
    totals.retracted += s.retracted
    totals.edges += s.edges


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


# ---------------------------------------------------------------------------------- children


@dataclass
class _Child:
    number: int
    process: BaseProcess
    conn: Connection
    sessions: list[str] = field(default_factory=list)
    owner: str | None = None
    ended: bool = False
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
        context: ForkContext | SpawnContext
        if threading.active_count() == 1:
            context = multiprocessing.get_context("fork")
        else:
            context = multiprocessing.get_context("spawn")
        self.children: list[_Child] = []
        # The children inherit "ignore SIGINT": a Ctrl-C reaches the whole process group, and
        # stopping the children is this process's job (they would print tracebacks).
        previous = _set_signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for number in range(1, jobs + 1):
                ours, theirs = context.Pipe()
                # A child closes the ends it inherits, so each pipe reads EOF once its two
                # processes are gone.
                parent_ends = [child.conn for child in self.children] + [ours]
                process = context.Process(
                    target=_child_main, args=(theirs, parent_ends, settings, shelf),
                    daemon=True, name=f"memory-worker run --once process {number}/{jobs}",
                )
                process.start()
                theirs.close()
                self.children.append(_Child(number, process, ours))
        except BaseException:
            self.stop()
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

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
    ) -> list[_Child]:
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
    def _handle(child: _Child, message: tuple[Any, ...], totals: OnceTotals,
                hints: list[JobKey]) -> None:
        kind = message[0]
        if kind == "jobs":
            done, failed, written, retracted, edges = message[1:]
            totals.done += done
            totals.failed += failed
            totals.written += written
            totals.retracted += retracted
            totals.edges += edges
        elif kind == "scanned":
            totals.new_events += message[1]
        elif kind == "hint":
            hints.append((message[1], message[2], message[3]))
        elif kind == "log":
            log.log(message[1], "%s", message[2])
        elif kind == "owner":
            child.owner = message[1]
        elif kind == "error":
            child.error = message[1]
        elif kind == "end":
            child.ended = True


def _children_phase(
    runtime: Runtime,
    shelf: str,
    children: OnceChildren,
    totals: OnceTotals,
    progress: ProgressHook | None,
    say: Callable[[str], None],
) -> tuple[list[JobKey], set[str]]:
    """Discover, split, let the children work; returns the hints they handed back and the
    sessions of the children that did not finish."""
    locations = Watcher(runtime, _no_hint, shelf=shelf).discover()
    totals.sessions = len(locations)
    sizes = [(location.session_id, _size(location.path)) for location in locations]
    children.assign(plan_groups(sizes, children.count))
    hints: list[JobKey] = []

    def _progress() -> None:
        if progress is not None:
            progress(None, totals.finished, None)

    with _sigterm_raises():
        lost = children.collect(totals, _progress, hints)
    for child in lost:
        say(_lost_line(child, children.count))
        _release_leases(runtime, child)
    return hints, {sid for child in lost for sid in child.sessions}


def _lost_line(child: _Child, count: int) -> str:
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
    return (f"memory-worker: process {child.number}/{count} (pid {child.process.pid}) {why}; "
            f"the final pass takes over its {len(child.sessions)} session(s)")


def _release_leases(runtime: Runtime, child: _Child) -> None:
    """Release the session and archive leases a dead child still held (its fencing tokens are
    dead with it), so the final pass need not wait ``lease_ttl_s`` for them to expire."""
    if child.owner is None:
        return  # it died before it could take any
    with runtime.state.transaction() as repos:
        projects = {state.project for sid in child.sessions
                    if (state := repos.sessions.get(sid)) is not None}
        keys = [session_lease_key(sid) for sid in child.sessions]
        keys += [archive_lease_key(project) for project in sorted(projects)]
        for key in keys:
            held = repos.leases.holder(key)
            if held is not None and held.owner == child.owner:
                repos.leases.release(held)


# --------------------------------------------------------------------------- in the child


class _ParentGone(Exception):
    """The parent's end of the pipe is closed: stop working."""


def _child_main(conn: Connection, parent_ends: list[Connection], settings: Settings,
                shelf: str) -> None:
    """A child process: wait for its sessions, then scan them and run their jobs."""
    for end in parent_ends:
        end.close()
    try:
        sessions: list[str] = conn.recv()
    except (EOFError, OSError):
        return  # the parent stopped before handing out work
    if not sessions:
        return

    def send(message: tuple[Any, ...]) -> None:
        try:
            conn.send(message)
        except OSError:
            raise _ParentGone from None

    _forward_logs(settings, send)
    try:
        _child_pass(settings, shelf, frozenset(sessions), send)
        send(("end",))
    except _ParentGone:
        raise SystemExit(1) from None
    except Exception as exc:  # reported as one line by the parent; the final pass takes over
        with contextlib.suppress(_ParentGone):
            send(("error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"))
        raise SystemExit(1) from None


def _child_pass(settings: Settings, shelf: str, mine: frozenset[str],
                send: Callable[[tuple[Any, ...]], None]) -> None:
    # The parent migrated the state database before it handed out the sessions.
    runtime = build_runtime(settings, owner=default_owner("run"), force_idle=True,
                            migrate=False)
    try:
        send(("owner", runtime.owner))  # before any lease is taken
        last = (0, 0, 0, 0, 0)

        def _done(_result: JobResult) -> None:
            nonlocal last
            s = runner.stats
            now = (s.done, s.failed, s.written, s.retracted, s.edges)
            send(("jobs", *(a - b for a, b in zip(now, last, strict=True))))
            last = now

        runner = InProcessRunner(runtime, on_result=_done)

        def submit(job: str, session_id: str, hint_shelf: str) -> None:
            if job in _FINAL_PASS_JOBS:
                send(("hint", job, session_id, hint_shelf))
            elif session_id in mine:  # idle-closes and reconcile hint every session
                runner.submit(job, session_id, hint_shelf)

        owe_consolidation(runtime, submit)
        watcher = Watcher(runtime, submit, shelf=shelf, only_sessions=mine,
                          after_session=lambda _sid: runner.run_ready())
        report = watcher.poll_once()
        send(("scanned", report.new_events))
        watcher.reconcile()
        runner.drain()
    finally:
        runtime.close()


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
    for name in ("memory_worker", None):
        logger = logging.getLogger(name)
        logger.handlers[:] = [_ForwardLogs(send)]
        logger.setLevel(level)
    logging.getLogger("memory_worker").propagate = False


# ---------------------------------------------------------------------------------- helpers


class _Terminated(Exception):
    """SIGTERM arrived while the children were working."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the children work, SIGTERM stops them first and then ends this process the way it
    would have ended it without children (killed by SIGTERM)."""

    def _raise(_signum: int, _frame: FrameType | None) -> None:
        raise _Terminated

    previous = _set_signal(signal.SIGTERM, _raise)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise
    finally:
        if previous is not None and signal.getsignal(signal.SIGTERM) is _raise:
            signal.signal(signal.SIGTERM, previous)


def _set_signal(signum: signal.Signals, handler: Any) -> Any:
    """Install ``handler``; returns the previous one (None off the main thread: no change)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signum, handler)


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
