"""The daemon loop: discover sessions, read only new bytes, cut spans, enqueue; reconcile lag.

Per session the watcher keeps a scan position (byte offset of the next complete line / zstd frame
and the seq expected there) and a sparse checkpoint index with the message ordinal at each
checkpoint, in the sessions table. Every poll it reads only what was appended since, records the
durable end, the last ``turn/end``, the seq of the latest title and the time of growth, and sends
hints:

* ``log_span`` at a ``turn/end`` (immediately), when a pending ``step/end`` is older than the
  flush window, and when the session went idle (idle-close flushes the tail; these two by the
  clock: :mod:`worker.watch.timed_hints`);
* ``log_span`` at a whitelisted withdrawal marker too (it acts at once, not at the next cut);
* ``session_node`` at a ``session/title`` / ``compaction/summary``.

Hints are cheap and may be lost or duplicated: the periodic :meth:`Watcher.reconcile` re-derives
all owed work from the recorded log facts and the watermarks (:mod:`worker.watch.owed`: log lag,
idle-close, session node, consolidation of idle-closed sessions, queued reconsolidation requests,
interrupted repairs), so lost messages heal themselves.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dsh_memory_worker.memory.dsh.events import Event, Header, Problem
from dsh_memory_worker.memory.dsh.locate import SessionLocation
from dsh_memory_worker.memory.dsh.position import CheckpointIndex, ScanPosition
from dsh_memory_worker.memory.messages import base_ordinal
from dsh_memory_worker.worker.jobs.handoff import SHARED_MAX_EVENTS, file_identity
from dsh_memory_worker.worker.jobs.runtime import Enqueue, Runtime, long_lived_frozen
from dsh_memory_worker.worker.names import ACTION_SEED_CHECK, JOB_LOG_SPAN, JOB_SESSION_NODE
from dsh_memory_worker.worker.state.sessions import Checkpoint, SessionState
from dsh_memory_worker.worker.watch.discovery import SessionFinder, changed_directories
from dsh_memory_worker.worker.watch.notify import Notifier
from dsh_memory_worker.worker.watch.owed import BACKED_OFF_JOBS, owed_work
from dsh_memory_worker.worker.watch.project_scope import project_scope
from dsh_memory_worker.worker.watch.scan_problems import SCAN_TASK, ProblemBook
from dsh_memory_worker.worker.watch.timed_hints import TimedHints

if TYPE_CHECKING:
    from dsh_memory_worker.memory.dsh.reader import Log
    from dsh_memory_worker.worker.stop_flag import SignalStop
    from dsh_memory_worker.worker.watch.scan_digest import ScanDigest

log = logging.getLogger(__name__)

_LOOP = "<watch loop>"
_FATAL = frozenset({"corrupt", "unsupported", "io"})


@dataclass(slots=True)
class ScanReport:
    """What one poll saw."""

    sessions: int = 0
    changed: int = 0
    new_events: int = 0
    enqueued: int = 0
    problems: int = 0
    #: Sessions whose scan failed (the state database refused it, ...): not processed.
    unscanned: list[str] = dataclasses.field(default_factory=list)


class Watcher:
    """Follows a DSH home and sends job hints to ``enqueue``."""

    def __init__(
        self,
        runtime: Runtime,
        enqueue: Enqueue,
        *,
        shelf: str | None = None,
        after_session: Callable[[str], object] | None = None,
        only_sessions: Collection[str] | None = None,
    ) -> None:
        """``after_session`` (embedded mode: the in-process runner's ``run_ready``) is called
        with the session id right after a changed session's scan is recorded and its hints are
        sent. With it, a scan that read a whole log from its start hands its decode to the jobs
        that run then (:meth:`worker.jobs.handoff.LogHandOff.offer`; they re-check the file).

        ``only_sessions`` limits the scans to those session ids (``run --once --jobs N``: each
        process scans its share of the home); hints derived from the state database (idle-closes,
        :meth:`reconcile`) still cover every session."""
        self.runtime = runtime
        self.only_sessions = frozenset(only_sessions) if only_sessions is not None else None
        self.enqueue = enqueue
        self.after_session = after_session
        self.shelf = shelf or runtime.settings.store_shelf
        self.root = runtime.settings.sessions_root
        self._ordinal_at_end: dict[str, int] = {}
        self._timed = TimedHints(runtime, enqueue, self.shelf)
        self.problems = ProblemBook(runtime.state)
        self._finder = SessionFinder(self.root, self.problems, self.only_sessions)
        self._next_reconcile = 0.0
        self._unchanged: dict[str, tuple[str, int, int, int]] = {}  # sid → _stamp()
        self._owed_hinted: dict[tuple[str, str], tuple[tuple[int, ...], float]] = {}
        #: Log shipping: the daemon ships each log, then scans what was shipped (the jobs read
        #: the same bytes), so nothing is recorded that a worker cannot read.
        self._segments = runtime.segments

    # --------------------------------------------------------------------------------- public

    def poll_once(self, *, full: bool = False) -> ScanReport:
        """Scan every session once and send the hints that are due. Directory listings come
        from the mtime cache (:class:`memory.dsh.locate.CachedSurvey`) unless ``full``."""
        locations = self._finder.discover(full=full)
        return self._poll_locations(locations, ScanReport(sessions=len(locations)))

    def _poll_locations(
        self,
        locations: list[SessionLocation],
        report: ScanReport,
    ) -> ScanReport:
        with long_lived_frozen():
            for location in locations:
                changed = report.changed
                try:
                    self._poll_session(location, report)
                except Exception as exc:  # one bad session must not stop the others
                    line = " ".join(str(exc).split())[:300]
                    self.problems.say(
                        location.session_id,
                        f"cannot scan {location.path}: {type(exc).__name__}: {line}",
                    )
                    report.problems += 1
                    report.unscanned.append(location.session_id)
                if self.after_session is not None and report.changed > changed:
                    self.after_session(location.session_id)
        if report.changed:
            self._timed.grew()
        report.enqueued += self._timed.send_due()
        return report

    def reconcile(self) -> int:
        """Send a hint for every job owed on the shelf (:func:`worker.watch.owed.owed_work`: log
        lag, idle-close, session node, consolidation of idle-closed sessions, queued reconsolidation
        requests, interrupted repairs); returns the number of hints sent.

        A ``consolidate`` / ``retract`` hint this watcher already sent is not repeated while the
        watermarks it was derived from are unchanged and the job may still be running (one lease
        TTL, at least one reconcile interval): a slow model call is not hinted again and again,
        and a hint that was lost is re-sent once that time has passed."""
        settings = self.runtime.settings
        hold = max(settings.reconcile_interval_s, settings.lease_ttl_s)
        now = time.monotonic()
        sent = 0
        for item in owed_work(self.runtime, self.shelf):
            if item.job in BACKED_OFF_JOBS:
                previous = self._owed_hinted.get((item.job, item.session_id))
                if previous is not None and previous[0] == item.key and now - previous[1] < hold:
                    continue
                self._owed_hinted[(item.job, item.session_id)] = (item.key, now)
            self.enqueue(item.job, item.session_id, self.shelf)
            sent += 1
        return sent

    def run(
        self,
        stop: threading.Event | SignalStop,
        *,
        after_poll: Callable[[ScanReport], None] | None = None,
    ) -> None:
        """Follow until ``stop`` is set; reconcile every ``reconcile_interval_s``.

        With ``watch_notifications`` (and the whole home to follow) the loop waits on
        file-system notifications (:class:`worker.watch.notify.Notifier`) and re-scans only the
        sessions whose files changed (:meth:`poll_changed`), with a whole poll every
        ``safety_scan_s``; otherwise, or while notifications are unavailable or failed, it polls
        every ``poll_interval_s``."""
        settings = self.runtime.settings
        notifier = (
            Notifier(self.root)
            if settings.watch_notifications and self.only_sessions is None
            else None
        )
        live = False  # notifications running, and a whole poll done since they started
        next_try = 0.0  # when to (re)start notifications
        next_safety = 0.0
        if notifier is not None:  # `stop` ends a wait on notifications too

            def wake_on_stop(notifier: Notifier = notifier) -> None:
                stop.wait()
                notifier.wake()

            threading.Thread(target=wake_on_stop, daemon=True, name="watch-stop").start()
        try:
            while not stop.is_set():
                try:
                    now = time.monotonic()
                    if notifier is not None and not notifier.running and now >= next_try:
                        if live:
                            log.warning(
                                "file-system notifications stopped (%s); polling every %gs",
                                notifier.failed,
                                settings.poll_interval_s,
                            )
                        live = False
                        if notifier.start():
                            next_safety = 0.0  # the whole poll below covers the start-up gap
                        else:
                            retry = (
                                settings.poll_interval_s
                                if not self.root.is_dir()
                                else settings.safety_scan_s
                            )
                            next_try = now + retry
                    changed = notifier.take() if live and notifier is not None else set()
                    if notifier is not None and live and not notifier.running:
                        continue  # failed between two looks: fall back to polling above
                    if not live or now >= next_safety:
                        report = self.poll_once(full=live)
                        if notifier is not None and notifier.running:
                            live = True
                            next_safety = now + settings.safety_scan_s
                    elif changed:
                        report = self.poll_changed(changed)
                    else:
                        report = ScanReport()
                        report.enqueued += self._timed.send_due(skip_idle_when_closed=True)
                    now = time.monotonic()
                    if now >= self._next_reconcile:
                        report.enqueued += self.reconcile()
                        self._next_reconcile = now + settings.reconcile_interval_s
                    if after_poll is not None:
                        after_poll(report)
                    if self.problems.healed(_LOOP):
                        log.warning("watching again after the error above")
                except Exception as exc:  # e.g. the state database is down: say so once, go on
                    line = " ".join(str(exc).split())[:300]
                    self.problems.say(
                        _LOOP, f"watch loop error (retrying): {type(exc).__name__}: {line}"
                    )
                    if notifier is not None and live:
                        stop.wait(settings.poll_interval_s)  # no busy loop on a failing poll
                        continue
                if notifier is not None and live:
                    notifier.wait(self._live_timeout(next_safety))
                else:
                    stop.wait(settings.poll_interval_s)
        finally:
            if notifier is not None:
                notifier.stop()

    def _live_timeout(self, next_safety: float) -> float:
        """How long a notified loop may sleep: until the next reconcile, safety scan, step
        flush or idle check (whichever is first), at most a minute."""
        now = time.monotonic()
        due = [self._next_reconcile, next_safety, now + 60.0]
        timed = self._timed.next_due(now)
        if timed is not None:
            due.append(timed)
        return max(0.0, min(due) - now)

    def poll_changed(self, paths: Collection[str]) -> ScanReport:
        """Scan only the sessions under the changed ``paths`` (file-system notifications) and
        send the hints that are due; a change of the root's own entries (a project directory
        added or removed) lists everything (from the mtime cache) and scans every session."""
        stale, touched, whole = changed_directories(self.root, paths)
        locations = self._finder.discover(stale=stale, trust=True)
        if not whole:
            locations = [loc for loc in locations if str(loc.directory) in touched]
        return self._poll_locations(locations, ScanReport(sessions=len(locations)))

    # ------------------------------------------------------------------------------ discovery

    def discover(self) -> list[SessionLocation]:
        """The sessions a poll reads (:meth:`worker.watch.discovery.SessionFinder.discover`)."""
        return self._finder.discover()

    # --------------------------------------------------------------------------------- scans

    def _poll_session(self, location: SessionLocation, report: ScanReport) -> None:
        sid = location.session_id
        stamp = _stamp(location.path)
        if stamp is not None and self._unchanged.get(sid) == stamp:
            return  # same file, same size and mtime as after the last complete scan
        # Start-up time: the log reader loads with the first session that needs a scan (a
        # home with no session, or none changed, never imports it).
        from dsh_memory_worker.memory.dsh.scanner import LogScan
        from dsh_memory_worker.worker.jobs.logread import checkpoint_index
        from dsh_memory_worker.worker.watch.poll_source import poll_source
        from dsh_memory_worker.worker.watch.scan_digest import ScanDigest

        with self.runtime.state.read() as repos:
            state = repos.sessions.get(sid)
        if state is not None and state.forgotten:
            return
        path = str(location.path)
        opened = poll_source(self._segments, location, state, self.runtime.settings, self.problems)
        if opened is None:
            return  # shipping: nothing shipped yet (no complete header), or a problem, said
        log, generation, position = opened.log, opened.generation, opened.position
        if opened.restarted:
            self._ordinal_at_end.pop(sid, None)  # read from the start: count again
        if not opened.complete:
            stamp = None  # shipping stopped at a problem: try the file again next poll
            report.problems += 1
        known = state if position is not None else None
        index = checkpoint_index(known) if known is not None else None
        scan = LogScan(log, position, index)
        digest = ScanDigest.start(
            lambda: self._ordinal_at(log, known), known, self.runtime.settings.withdrawal_kinds
        )
        # A whole-log read (from the start) is kept for the jobs about to run (embedded mode).
        hand_off = self.after_session is not None and position is None and self._segments is None
        identity = file_identity(path) if hand_off else None
        kept: list[Event] | None = [] if hand_off else None
        for event in scan:
            if digest.version is None and scan.header is not None:
                digest.begin(scan.header)
            digest.add(event)
            if kept is not None:
                kept.append(event)
                if len(kept) > SHARED_MAX_EVENTS:
                    kept = None
        if kept is not None and not scan.problems:
            self.runtime.hand_off.offer(path, identity, kept)
        del kept
        if any(p.kind in _FATAL for p in scan.problems):
            if stamp is not None:
                self._unchanged[sid] = stamp  # not re-read until the file changes
            self._scan_problem(sid, scan.problems)
            report.problems += 1
            return
        header = scan.header
        if header is None:
            return  # an empty or half-written header: nothing durable yet
        if header.id != sid:
            self.problems.note(
                sid,
                f"{location.path}: header id {header.id!r} does not match its directory "
                f"({sid!r}); skipped",
            )
            if stamp is not None:
                self._unchanged[sid] = stamp  # not re-read until the file changes
            report.problems += 1
            return
        damage = next((p for p in scan.problems if p.kind == "damaged"), None)
        if damage is None:
            self.problems.healed(sid)
        else:
            self.problems.note(sid, f"session {sid}: {damage}")
        if not scan.torn and stamp is not None:
            self._unchanged[sid] = stamp
        if digest.count == 0 and known is not None:
            return
        if digest.version is None:
            digest.begin(header)
        if digest.seed_incomplete(header):
            return  # a fork child whose seed is not all on disk: nothing of it is its own yet
        self._record(
            location,
            known,
            header,
            scan.position,
            scan.index,
            digest,
            generation,
            healthy=damage is None,
            first_sight=state is None,
        )
        report.changed += 1
        report.new_events += digest.count
        report.enqueued += self._hints(sid, digest)

    def _record(
        self,
        location: SessionLocation,
        state: SessionState | None,
        header: Header,
        position: ScanPosition,
        index: CheckpointIndex,
        digest: ScanDigest,
        generation: int,
        *,
        healthy: bool,
        first_sight: bool = False,
    ) -> None:
        sid = location.session_id
        old_end = state.durable_end_seq if state is not None else 0
        known = {p.seq for p in state.checkpoints} if state is not None else set()
        checkpoints = [
            Checkpoint(seq, offset, digest.ordinal_at(seq))
            for seq, offset in zip(index.seqs, index.offsets, strict=True)
            if seq >= old_end and seq not in known and digest.covers(seq)
        ]
        if digest.resolved:
            self._ordinal_at_end[sid] = digest.ordinal
        # Only the seq: the session_node job decides the text (a withdrawal may taint it).
        title = (digest.title.seq, None) if digest.title is not None else None
        activity = self.runtime.now() if state is not None else _mtime(location.path)
        with self.runtime.state.transaction() as repos:
            repos.sessions.upsert_scan(
                sid,
                path=str(location.path),
                scan_offset=position.offset,
                scan_seq=position.start_seq,
                durable_end_seq=position.next_seq,
                generation=generation,
                project=project_scope(header.cwd) if state is None else None,
                header=_header_facts(header) if state is None else None,
                inherited_cut=digest.cut,
                new_checkpoints=checkpoints,
                last_turn_end_seq=digest.last_turn_end,
                title=title,
                last_activity_at=activity if digest.count or state is None else None,
                last_message_at=digest.last_message_at,
            )
            if healthy:  # a log that reads again is healthy again
                repos.failures.clear(SCAN_TASK, sid)
            if first_sight and digest.cut > 0:  # a fork child first seen with its whole seed
                repos.audit.record(
                    ACTION_SEED_CHECK, "ok", session_id=sid, detail="seed complete at first sight"
                )

    def _ordinal_at(self, path: Log, state: SessionState | None) -> int:
        """The message ordinal at ``state``'s durable end (cached; else counted from the
        nearest checkpoint)."""
        if state is None or state.durable_end_seq <= 0:
            return 0
        cached = self._ordinal_at_end.get(state.session_id)
        if cached is not None:
            return cached
        seq, cut = state.durable_end_seq, state.inherited_cut
        from dsh_memory_worker.memory.dsh.reader import read_range
        from dsh_memory_worker.worker.jobs.logread import checkpoint_index

        point = state.checkpoint_at_or_before(seq) or Checkpoint(0, 0, 0)
        span = read_range(path, point.seq, seq, checkpoint_index(state))
        return base_ordinal(
            span.events,
            seq,
            inherited_cut=cut,
            checkpoint=(point.seq, point.ordinal if point.seq >= cut else 0),
        )

    # --------------------------------------------------------------------------------- hints

    def _hints(self, sid: str, digest: ScanDigest) -> int:
        sent = 0
        if digest.last_turn_end is not None or digest.last_marker is not None:
            # A withdrawal marker is its own trigger: log_span retracts and repairs at once.
            if digest.last_turn_end is not None:
                self._timed.turn_ended(sid)
            self.enqueue(JOB_LOG_SPAN, sid, self.shelf)
            sent += 1
        if digest.step_end_after_turn:
            self._timed.step_pending(sid, digest.step_end_time)
        if digest.saw_node_event:
            self.enqueue(JOB_SESSION_NODE, sid, self.shelf)
            sent += 1
        return sent

    # ------------------------------------------------------------------------------ problems

    def _scan_problem(self, sid: str, problems: list[Problem]) -> None:
        fatal = [p for p in problems if p.kind in _FATAL]
        problem = fatal[0] if fatal else problems[0]
        permanent = problem.kind in ("corrupt", "unsupported")
        self.problems.note(sid, f"session {sid}: {problem}", permanent=permanent)


def _header_facts(header: Header) -> dict[str, object]:
    return {k: v for k, v in dataclasses.asdict(header).items() if v is not None}


def _stamp(path: Path) -> tuple[str, int, int, int] | None:
    """What identifies an unchanged file: path, size, mtime and inode (not following a
    symlink: a log replaced by one is a change)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (str(path), info.st_size, info.st_mtime_ns, info.st_ino)


def _mtime(path: Path) -> dt.datetime:
    try:
        return dt.datetime.fromtimestamp(os.stat(path).st_mtime, dt.UTC)
    except OSError:
        return dt.datetime.now(dt.UTC)
