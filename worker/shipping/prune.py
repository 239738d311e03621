"""Pruning shipped segments no job can still need (an operator's request; nothing prunes on its
own). The rules, from the state database (docs/shipping.md, "Retention and pruning"):

- a **forgotten** session: every segment (the shipper never ships it again);
- a **superseded** generation: a newer generation of the session is shipped and the session's
  state has moved to it (``sessions.generation`` at least that generation), so no job reads the
  old one; its segments and its row go;
- **below the consolidated floor** (opt-in, ``consolidated=True``): in the current generation of a
  session idle-closed at least ``closed_for`` ago, with no failure waiting for a retry and no
  lease held, the segments that end at or before the checkpoint at or below the lowest watermark
  (logged and consolidated, over every shelf). Jobs resume from checkpoints at or above it, so
  they still read; what is given up is re-reading the pruned spans: ``reconsolidate`` and a late
  withdrawal that names a pruned message then report the missing bytes instead of reading them.

The header segment (byte 0) and the last ``TAIL_CHECK`` bytes are always kept: the readers need
the header, and the shipper compares the tail to tell an appended log from a rewritten one.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Connection, and_, delete, func, select

from dsh_memory_worker.worker.names import session_lease_key
from dsh_memory_worker.worker.shipping.shipper import TAIL_CHECK
from dsh_memory_worker.worker.shipping.sql import LOGS, SEGMENTS
from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.database import Repos
from dsh_memory_worker.worker.state.models import utcnow
from dsh_memory_worker.worker.state.progress import Progress
from dsh_memory_worker.worker.state.sessions import SessionState


@dataclass(slots=True)
class PruneReport:
    """What was (or, with ``dry_run``, would be) removed."""

    dry_run: bool
    segments: int = 0
    bytes: int = 0
    lines: list[str] = field(default_factory=list)


def prune_segments(
    db: StateDB,
    *,
    consolidated: bool = False,
    closed_for: dt.timedelta = dt.timedelta(days=30),
    dry_run: bool = False,
    now: dt.datetime | None = None,
) -> PruneReport:
    """Remove the segments the rules above allow; one transaction per session."""
    report = PruneReport(dry_run)
    before = (now or utcnow()) - closed_for
    with db.read() as repos:
        sessions = [
            str(s) for s in repos.conn.execute(select(LOGS.c.session_id).distinct()).scalars()
        ]
    for sid in sorted(sessions):
        try:
            with db.transaction() as repos:
                _prune_session(repos, sid, report, consolidated=consolidated, closed_before=before)
                if dry_run:
                    raise _DryRun
        except _DryRun:
            pass  # counted, rolled back
    return report


class _DryRun(Exception):
    """Rolls a dry run's transaction back."""


def _prune_session(
    repos: Repos,
    sid: str,
    report: PruneReport,
    *,
    consolidated: bool,
    closed_before: dt.datetime,
) -> None:
    conn = repos.conn
    logs = conn.execute(
        select(LOGS.c.generation, LOGS.c.shipped_end)
        .where(LOGS.c.session_id == sid)
        .order_by(LOGS.c.generation)
    ).all()
    state = repos.sessions.get(sid)
    newest, newest_end = logs[-1]
    if state is not None and state.forgotten:
        _remove(conn, report, f"{sid}: forgotten", sid, None, None)
        return
    if state is None or state.generation < newest:
        return  # nothing has read the newest generation yet: every one may still be needed
    for generation, _end in logs[:-1]:
        _remove(conn, report, f"{sid} generation {generation}: superseded", sid, generation, None)
        conn.execute(delete(LOGS).where(LOGS.c.session_id == sid, LOGS.c.generation == generation))
    if consolidated and state.generation == newest:
        floor = _floor_offset(repos, state, closed_before)
        if floor is not None:
            limit = min(floor, newest_end - TAIL_CHECK)
            _remove(
                conn, report, f"{sid} generation {newest}: below byte {limit}", sid, newest, limit
            )


def _floor_offset(repos: Repos, state: SessionState, closed_before: dt.datetime) -> int | None:
    """The byte offset below which no job of this session reads, or None when any may."""
    sid = state.session_id
    if state.closed_at is None or state.closed_at > closed_before:
        return None  # open or recently closed: a withdrawal may still name old messages
    if any(f.session_id == sid for f in repos.failures.list()):
        return None  # a failed job will be retried and may re-read its span
    if repos.leases.holder(session_lease_key(sid)) is not None:
        return None  # a job is running on it now
    progress: dict[str, list[Progress]] = defaultdict(list)
    for row in repos.progress.list():
        progress[row.session_id].append(row)
    rows = progress.get(sid)
    if not rows:
        return None
    seq = min(min(p.last_logged_seq, p.last_consolidated_seq) for p in rows)
    point = state.checkpoint_at_or_before(seq)
    return None if point is None else point.offset


def _remove(
    conn: Connection,
    report: PruneReport,
    what: str,
    sid: str,
    generation: int | None,
    below: int | None,
) -> None:
    """Delete the session's segments (of ``generation``; ending at or before ``below``, never
    the header segment) and count them."""
    where = [SEGMENTS.c.session_id == sid]
    if generation is not None:
        where.append(SEGMENTS.c.generation == generation)
    if below is not None:
        where += [SEGMENTS.c.byte_offset > 0, SEGMENTS.c.byte_offset + SEGMENTS.c.length <= below]
    count, size = conn.execute(
        select(func.count(), func.coalesce(func.sum(SEGMENTS.c.length), 0)).where(and_(*where))
    ).one()
    if not count:
        return
    conn.execute(delete(SEGMENTS).where(and_(*where)))
    report.segments += int(count)
    report.bytes += int(size)
    report.lines.append(f"{what}: {count} segments, {size} bytes")
