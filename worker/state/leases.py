"""Leases: per-key exclusivity with expiry and a fencing token.

A lease row outlives its releases, so the token of a key only ever increases: every acquisition
sets ``token = token + 1``. Whoever holds a token can prove it is still the holder only while
the row has that token, an owner and an expiry in the future; a later acquisition (after expiry)
supersedes it, and the watermark updates in ``progress.py`` check exactly that.

A lease whose owner is a process of this host that is gone (``kill -9``, a crash: see
:mod:`worker.state.owners`) is taken over at once instead of after its expiry, by the same kind of
conditional update (only while the row still has the dead owner's token), so the new holder gets
a new token and anything the dead one left in flight stays fenced.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Table, and_, bindparam, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from dsh_memory_worker.worker.state import prepared
from dsh_memory_worker.worker.state._sql import insert_ignore
from dsh_memory_worker.worker.state.models import LeaseRow, utcnow
from dsh_memory_worker.worker.state.owners import owner_is_gone

Clock = Callable[[], dt.datetime]


class ClockedRepo:
    """A repository of the state database over one connection, dating its rows by ``clock``."""

    def __init__(self, conn: Connection, clock: Clock = utcnow) -> None:
        self._conn = conn
        self._clock = clock


#: Whether the process behind an owner id is gone (its lease may be taken over at once).
OwnerGone = Callable[[str], bool]

log = logging.getLogger("memory_worker")


@dataclass(frozen=True)
class Lease:
    key: str
    owner: str
    token: int
    expires_at: dt.datetime


def held_params(key: str, token: int, now: dt.datetime) -> dict[str, object]:
    """The parameters of :data:`LEASE_IS_HELD`."""
    return {"p_lkey": key, "p_ltoken": token, "p_lnow": now}


# Every job takes and gives back a lease: these statements are built once (bound parameters)
# as Core statements on the table, which skips rebuilding the expression and the ORM's
# bulk-update bookkeeping on each call (about a third of the cost per acquire + release).
_T: Table = LeaseRow.__table__
_TIME = _T.c.expires_at.type
#: What acquiring a lease, or taking it over, writes: the new owner, the next token, the times.
_TAKEN = {
    "owner": bindparam("p_owner"),
    "token": _T.c.token + 1,
    "acquired_at": bindparam("p_now", type_=_TIME),
    "expires_at": bindparam("p_expires", type_=_TIME),
}
_ACQUIRE = (
    update(_T)
    .where(
        _T.c.key == bindparam("p_key"),
        or_(
            _T.c.owner.is_(None),
            _T.c.expires_at.is_(None),
            _T.c.expires_at <= bindparam("p_now", type_=_TIME),
        ),
    )
    .values(_TAKEN)
    .returning(_T.c.token)
)
_TAKEOVER = (
    update(_T)
    .where(
        _T.c.key == bindparam("p_key"),
        _T.c.token == bindparam("p_old_token"),
        _T.c.owner == bindparam("p_old_owner"),
    )
    .values(_TAKEN)
    .returning(_T.c.token)
)
_MINE = and_(
    _T.c.key == bindparam("p_key"),
    _T.c.token == bindparam("p_token"),
    _T.c.owner == bindparam("p_owner"),
)
_RENEW = (
    update(_T)
    .where(_MINE, _T.c.expires_at > bindparam("p_now", type_=_TIME))
    .values(expires_at=bindparam("p_expires", type_=_TIME))
    .returning(_T.c.token)
)
_RELEASE = update(_T).where(_MINE).values(owner=None, expires_at=None).returning(_T.c.token)

#: SQL condition: the lease ``p_lkey`` is held under ``p_ltoken`` and has not expired at
#: ``p_lnow`` (fill them with :func:`held_params`). The lease row is read ``FOR SHARE``
#: (PostgreSQL), so a write fenced by this condition and a concurrent takeover of the lease are
#: ordered: whichever commits second sees the first. SQLite gets the same ordering from
#: ``BEGIN IMMEDIATE``.
LEASE_IS_HELD: ColumnElement[bool] = (
    select(_T.c.key)
    .where(
        _T.c.key == bindparam("p_lkey"),
        _T.c.token == bindparam("p_ltoken"),
        _T.c.owner.is_not(None),
        _T.c.expires_at > bindparam("p_lnow", type_=_TIME),
    )
    .with_for_update(read=True)
    .exists()
)
_IS_HELD = select(LEASE_IS_HELD)


class LeaseRepo:
    """Acquire, renew and release leases inside the caller's transaction."""

    def __init__(
        self, conn: Connection, clock: Clock = utcnow, owner_gone: OwnerGone = owner_is_gone
    ) -> None:
        self._conn = conn
        self._clock = clock
        self._owner_gone = owner_gone

    def acquire(self, key: str, owner: str, ttl_s: float) -> Lease | None:
        """Take ``key`` for ``owner`` for ``ttl_s`` seconds; ``None`` while someone else holds it.

        Holding it already (same owner, unexpired) does not re-enter: it returns ``None`` too.
        A holder whose process is gone (same host) is no holder: its lease is taken over.
        """
        if ttl_s <= 0:
            raise ValueError("lease ttl must be positive")
        now = self._clock()
        expires = now + dt.timedelta(seconds=ttl_s)
        taken = prepared.first(
            self._conn,
            _ACQUIRE,
            {"p_key": key, "p_owner": owner, "p_now": now, "p_expires": expires},
        )
        if taken is not None:
            return Lease(key, owner, int(taken[0]), expires)
        values = {"key": key, "owner": owner, "token": 1, "acquired_at": now, "expires_at": expires}
        if insert_ignore(self._conn, LeaseRow.__table__, values):
            return Lease(key, owner, 1, expires)
        held = self.holder(key)
        if held is None or held.owner == owner or not self._owner_gone(held.owner):
            return None
        taken = self._conn.execute(
            _TAKEOVER,
            {
                "p_key": key,
                "p_old_token": held.token,
                "p_old_owner": held.owner,
                "p_owner": owner,
                "p_now": now,
                "p_expires": expires,
            },
        ).scalar_one_or_none()
        if taken is None:
            return None  # someone else took it over first
        log.info(
            "lease %s: its owner %s is gone; taken over (token %d)", key, held.owner, int(taken)
        )
        return Lease(key, owner, int(taken), expires)

    def renew(self, lease: Lease, ttl_s: float) -> Lease | None:
        """Extend a lease still held under its token; ``None`` when it expired or was taken."""
        now = self._clock()
        expires = now + dt.timedelta(seconds=ttl_s)
        result = prepared.first(
            self._conn, _RENEW, {**self._ident(lease), "p_now": now, "p_expires": expires}
        )
        return Lease(lease.key, lease.owner, lease.token, expires) if result is not None else None

    def release(self, lease: Lease) -> bool:
        """Give the lease up; False when it had already been taken over (nothing changes then)."""
        return prepared.first(self._conn, _RELEASE, self._ident(lease)) is not None

    def is_held(self, lease: Lease) -> bool:
        """True while ``lease`` is still the current, unexpired holding of its key."""
        now = self._clock()
        found = self._conn.execute(_IS_HELD, held_params(lease.key, lease.token, now))
        return bool(found.scalar())

    def holder(self, key: str) -> Lease | None:
        """The current unexpired holder of ``key``, if any."""
        now = self._clock()
        row = self._conn.execute(
            select(LeaseRow.owner, LeaseRow.token, LeaseRow.expires_at).where(
                LeaseRow.key == key, LeaseRow.owner.is_not(None), LeaseRow.expires_at > now
            )
        ).first()
        if row is None or row.owner is None or row.expires_at is None:
            return None
        return Lease(key, row.owner, int(row.token), row.expires_at)

    def last_token(self, key: str) -> int:
        """The highest token ever issued for ``key`` (0 when never acquired)."""
        token = self._conn.execute(
            select(LeaseRow.token).where(LeaseRow.key == key)
        ).scalar_one_or_none()
        return int(token or 0)

    @staticmethod
    def _ident(lease: Lease) -> dict[str, object]:
        return {"p_key": lease.key, "p_token": lease.token, "p_owner": lease.owner}
