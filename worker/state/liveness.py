"""Who is working now, from the ``leases`` table: every runner (``run``, ``daemon``, a Celery
``worker``, an operator command) takes a session's or a project's lease for each job and renews it
while the job runs (its heartbeat: each renewal moves ``expires_at`` to now + the lease TTL). So a
lease held and not expired names a live runner, its host and its last heartbeat; with none held,
the newest lease ever taken says when a runner was last seen.

An idle daemon holds no lease: "no runner seen since" means no job has run since then, which is
what the page can know from the state database alone."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Connection, select

from dsh_memory_worker.worker.state.models import LeaseRow


@dataclass(frozen=True, slots=True)
class Runner:
    """One lease held now: by whom (kind, host, PID from the owner id), on what, and when it
    last beat (``expires_at`` − TTL)."""

    key: str
    owner: str
    acquired_at: dt.datetime | None
    heartbeat_at: dt.datetime

    @property
    def kind(self) -> str:
        """``run``, ``daemon``, ``celery`` (a worker), ``console``, …: the owner id's first part
        (:func:`worker.state.owners.owner_id`)."""
        return self.owner.split(":", 1)[0]

    @property
    def host(self) -> str:
        parts = self.owner.split(":")
        return parts[1] if len(parts) == 4 else "?"

    @property
    def pid(self) -> str:
        parts = self.owner.split(":")
        return parts[2] if len(parts) == 4 else "?"


@dataclass(frozen=True, slots=True)
class Liveness:
    runners: list[Runner]
    #: when no lease is held: the newest lease ever taken (``None``: never any)
    last_seen_at: dt.datetime | None
    last_seen_owner: str | None


def liveness(conn: Connection, now: dt.datetime, ttl_s: float) -> Liveness:
    """The leases held at ``now`` (newest heartbeat first), and the last time one was taken."""
    ttl = dt.timedelta(seconds=ttl_s)
    held = conn.execute(
        select(LeaseRow.key, LeaseRow.owner, LeaseRow.acquired_at, LeaseRow.expires_at)
        .where(LeaseRow.owner.is_not(None), LeaseRow.expires_at > now)
        .order_by(LeaseRow.expires_at.desc(), LeaseRow.key)
    )
    runners = [
        Runner(key, owner, acquired, min(expires - ttl, now))
        for key, owner, acquired, expires in held
        if owner is not None and expires is not None
    ]
    newest = conn.execute(
        select(LeaseRow.acquired_at, LeaseRow.owner, LeaseRow.expires_at)
        .where(LeaseRow.acquired_at.is_not(None))
        .order_by(LeaseRow.acquired_at.desc())
        .limit(1)
    ).first()
    seen_at, seen_owner = (None, None)
    if newest is not None:
        acquired, seen_owner, expires = newest
        # a lease renewed after it was taken was last seen at its last heartbeat
        seen_at = acquired if expires is None else max(acquired or expires, expires - ttl)
    return Liveness(runners, seen_at, seen_owner)
