"""Leases: one holder at a time, expiry, and fencing tokens that only increase."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from dsh_memory_worker.worker.state import Lease, StateDB, session_lease_key

KEY = session_lease_key("sess-race")


class FakeClock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


def _acquire(db: StateDB, owner: str, ttl_s: float = 30) -> Lease | None:
    with db.transaction() as repos:
        return repos.leases.acquire(KEY, owner, ttl_s)


def test_lease_key_format() -> None:
    assert session_lease_key("abc") == "session:abc"


def test_a_held_lease_is_not_granted_again(state_url: str) -> None:
    db = StateDB(state_url, clock=FakeClock())
    first = _acquire(db, "w1")
    assert first is not None and first.token == 1 and first.owner == "w1"
    assert _acquire(db, "w2") is None
    assert _acquire(db, "w1") is None  # not re-entrant either
    with db.transaction() as repos:
        assert repos.leases.holder(KEY) == first
    db.dispose()


def test_tokens_increase_across_release_and_expiry(state_url: str) -> None:
    clock = FakeClock()
    db = StateDB(state_url, clock=clock)
    tokens = []
    first = _acquire(db, "w1", ttl_s=10)
    assert first is not None
    tokens.append(first.token)
    with db.transaction() as repos:
        assert repos.leases.release(first)
    second = _acquire(db, "w2", ttl_s=10)
    assert second is not None
    tokens.append(second.token)
    clock.advance(11)  # w2 died without releasing: its lease expires
    third = _acquire(db, "w3", ttl_s=10)
    assert third is not None
    tokens.append(third.token)
    assert tokens == [1, 2, 3]
    with db.transaction() as repos:
        assert repos.leases.last_token(KEY) == 3
        assert repos.leases.last_token("session:never") == 0
    db.dispose()


def test_a_superseded_holder_cannot_renew_release_or_advance(state_url: str) -> None:
    clock = FakeClock()
    db = StateDB(state_url, clock=clock)
    stale = _acquire(db, "slow", ttl_s=10)
    assert stale is not None
    with db.transaction() as repos:
        assert repos.progress.advance(
            "default",
            "sess-race",
            expected_version=0,
            lease_token=stale.token,
            lease_key=KEY,
            last_logged_seq=5,
        )
    clock.advance(11)
    fresh = _acquire(db, "fast", ttl_s=10)
    assert fresh is not None and fresh.token == stale.token + 1
    with db.transaction() as repos:
        assert repos.leases.renew(stale, 10) is None
        assert repos.leases.release(stale) is False
        assert repos.leases.is_held(stale) is False
        assert repos.leases.is_held(fresh) is True
        # The stale holder read version 1 and wants to move forward: refused.
        assert not repos.progress.advance(
            "default",
            "sess-race",
            expected_version=1,
            lease_token=stale.token,
            lease_key=KEY,
            last_logged_seq=9,
        )
        assert repos.progress.advance(
            "default",
            "sess-race",
            expected_version=1,
            lease_token=fresh.token,
            lease_key=KEY,
            last_logged_seq=7,
        )
        assert repos.progress.get("default", "sess-race").last_logged_seq == 7
    db.dispose()


def test_an_expired_lease_cannot_advance_even_before_takeover(state_url: str) -> None:
    clock = FakeClock()
    db = StateDB(state_url, clock=clock)
    lease = _acquire(db, "w1", ttl_s=10)
    assert lease is not None
    clock.advance(10)  # expires_at == now counts as expired
    with db.transaction() as repos:
        assert not repos.progress.advance(
            "default",
            "sess-race",
            expected_version=0,
            lease_token=lease.token,
            lease_key=KEY,
            last_logged_seq=1,
        )
        assert repos.leases.renew(lease, 10) is None
        assert repos.progress.get("default", "sess-race").last_logged_seq == 0
    db.dispose()


def test_renew_extends_a_held_lease(state_url: str) -> None:
    clock = FakeClock()
    db = StateDB(state_url, clock=clock)
    lease = _acquire(db, "w1", ttl_s=10)
    assert lease is not None
    clock.advance(8)
    with db.transaction() as repos:
        renewed = repos.leases.renew(lease, 10)
    assert renewed is not None and renewed.token == lease.token
    assert renewed.expires_at == clock.now + dt.timedelta(seconds=10)
    clock.advance(8)  # past the first expiry, inside the renewed one
    assert _acquire(db, "w2") is None
    with db.transaction() as repos:
        assert repos.leases.is_held(renewed)
    db.dispose()


def test_a_released_lease_no_longer_fences_writes(state_url: str) -> None:
    db = StateDB(state_url)
    lease = _acquire(db, "w1")
    assert lease is not None
    with db.transaction() as repos:
        assert repos.leases.release(lease)
        assert repos.leases.holder(KEY) is None
        assert not repos.progress.advance(
            "default",
            "sess-race",
            expected_version=0,
            lease_token=lease.token,
            lease_key=KEY,
            last_logged_seq=3,
        )
    db.dispose()


def test_racing_threads_exactly_one_wins_each_round(state_url: str) -> None:
    contenders = 6
    engines = [StateDB(state_url) for _ in range(contenders)]
    barrier = threading.Barrier(contenders)

    def contend(index: int) -> Lease | None:
        barrier.wait()
        return _acquire(engines[index], f"t{index}", ttl_s=30)

    winners_tokens = []
    for _round in range(3):
        with ThreadPoolExecutor(contenders) as pool:
            results = list(pool.map(contend, range(contenders)))
        winners = [lease for lease in results if lease is not None]
        assert len(winners) == 1
        winners_tokens.append(winners[0].token)
        with engines[0].transaction() as repos:
            assert repos.leases.release(winners[0])
    assert winners_tokens == [1, 2, 3]
    for db in engines:
        db.dispose()


def _process_contender(url: str, owner: str, barrier: object, out: object) -> None:
    db = StateDB(url)
    barrier.wait()  # type: ignore[attr-defined]
    lease = _acquire(db, owner, ttl_s=30)
    out.put((owner, lease.token if lease else None))  # type: ignore[attr-defined]
    db.dispose()


@pytest.mark.integration
def test_racing_processes_exactly_one_wins(state_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    contenders = 4
    barrier = ctx.Barrier(contenders)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_process_contender, args=(state_url, f"p{i}", barrier, out))
        for i in range(contenders)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    tokens = [token for _owner, token in results if token is not None]
    assert tokens == [1]
    assert len(results) == contenders


def test_a_takeover_in_flight_is_seen_by_the_fenced_write(state_url: str) -> None:
    """The old holder still believes its lease valid (its clock says so), while a new holder
    has taken it over but not committed yet: the fenced write waits and then fails."""
    start = FakeClock()
    slow_clock, fast_clock = FakeClock(), FakeClock()
    old_db = StateDB(state_url, clock=start)
    old = _acquire(old_db, "old", ttl_s=10)
    assert old is not None
    slow_clock.now = start.now + dt.timedelta(seconds=5)  # old holder: 5 s in, still valid
    fast_clock.now = start.now + dt.timedelta(seconds=11)  # new holder: 11 s in, expired
    slow = StateDB(state_url, clock=slow_clock)
    fast = StateDB(state_url, clock=fast_clock)
    taken = threading.Event()
    commit = threading.Event()
    new_tokens: list[int] = []

    def take_over() -> None:
        with fast.transaction() as repos:
            lease = repos.leases.acquire(KEY, "new", 10)
            assert lease is not None
            new_tokens.append(lease.token)
            taken.set()
            commit.wait(timeout=30)

    thread = threading.Thread(target=take_over)
    thread.start()
    assert taken.wait(timeout=30)
    results: list[bool] = []

    def fenced_write() -> None:
        with slow.transaction() as repos:
            results.append(
                repos.progress.advance(
                    "default",
                    "sess-race",
                    expected_version=0,
                    lease_token=old.token,
                    lease_key=KEY,
                    last_logged_seq=4,
                )
            )

    writer = threading.Thread(target=fenced_write)
    writer.start()
    writer.join(timeout=0.5)
    assert writer.is_alive()  # blocked behind the uncommitted takeover
    commit.set()
    thread.join(timeout=30)
    writer.join(timeout=30)
    assert new_tokens == [old.token + 1]
    assert results == [False]
    with fast.transaction() as repos:
        assert repos.progress.get("default", "sess-race").last_logged_seq == 0
    for db in (old_db, slow, fast):
        db.dispose()
