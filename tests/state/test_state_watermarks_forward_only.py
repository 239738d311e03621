"""Watermarks only move forward, only from the version read, and only under a held lease."""

from __future__ import annotations

import datetime as dt

import pytest

from dsh_memory_worker.worker.state import Lease, StateDB, session_lease_key

SHELF = "default"
SID = "sess-1"


def _lease(db: StateDB, owner: str = "w1", ttl_s: float = 60) -> Lease:
    with db.transaction() as repos:
        lease = repos.leases.acquire(session_lease_key(SID), owner, ttl_s)
    assert lease is not None
    return lease


def _advance(db: StateDB, lease: Lease, version: int, **fields: object) -> bool:
    with db.transaction() as repos:
        return repos.progress.advance(
            SHELF,
            SID,
            expected_version=version,
            lease_token=lease.token,
            **fields,  # type: ignore[arg-type]
        )


def test_new_progress_row_starts_at_zero(state_db: StateDB) -> None:
    with state_db.transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
        again = repos.progress.get(SHELF, SID)
    assert progress == again
    assert (
        progress.last_logged_seq,
        progress.last_consolidated_seq,
        progress.last_belong_to_index,
        progress.last_check_turn,
    ) == (0, 0, 0, 0)
    assert progress.has_session_node is False
    assert progress.pending_tokens == 0
    assert progress.version == 0


def test_advance_moves_every_watermark_forward_and_bumps_version(state_db: StateDB) -> None:
    lease = _lease(state_db)
    assert _advance(
        state_db,
        lease,
        0,
        last_logged_seq=40,
        last_belong_to_index=7,
        last_consolidated_seq=20,
        last_check_turn=3,
        has_session_node=True,
        pending_tokens=1200,
    )
    with state_db.transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
    assert progress.last_logged_seq == 40
    assert progress.last_belong_to_index == 7
    assert progress.last_consolidated_seq == 20
    assert progress.last_check_turn == 3
    assert progress.has_session_node is True
    assert progress.pending_tokens == 1200
    assert progress.version == 1


@pytest.mark.parametrize(
    "field", ["last_logged_seq", "last_consolidated_seq", "last_belong_to_index", "last_check_turn"]
)
def test_a_backward_watermark_is_refused_and_changes_nothing(state_db: StateDB, field: str) -> None:
    lease = _lease(state_db)
    assert _advance(state_db, lease, 0, **{field: 50, "pending_tokens": 10})
    # One field backward spoils the whole update, including the fields that were fine.
    assert not _advance(state_db, lease, 1, **{field: 49, "pending_tokens": 99})
    with state_db.transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
    assert getattr(progress, field) == 50
    assert progress.pending_tokens == 10
    assert progress.version == 1
    # Equal is allowed (a replay of the same span converges).
    assert _advance(state_db, lease, 1, **{field: 50})
    assert _advance(state_db, lease, 2, **{field: 51})


def test_a_stale_version_cannot_advance(state_db: StateDB) -> None:
    lease = _lease(state_db)
    assert _advance(state_db, lease, 0, last_logged_seq=10)
    assert not _advance(state_db, lease, 0, last_logged_seq=20)
    assert not _advance(state_db, lease, 5, last_logged_seq=20)
    with state_db.transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
    assert (progress.last_logged_seq, progress.version) == (10, 1)


def test_session_node_flag_never_goes_back(state_db: StateDB) -> None:
    lease = _lease(state_db)
    assert _advance(state_db, lease, 0, has_session_node=True)
    assert not _advance(state_db, lease, 1, has_session_node=False)
    with state_db.transaction() as repos:
        assert repos.progress.get(SHELF, SID).has_session_node is True


def test_pending_tokens_is_a_counter_and_may_reset_to_zero(state_db: StateDB) -> None:
    lease = _lease(state_db)
    assert _advance(state_db, lease, 0, pending_tokens=5000)
    assert _advance(state_db, lease, 1, pending_tokens=0, last_consolidated_seq=30)
    with state_db.transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
    assert (progress.pending_tokens, progress.last_consolidated_seq) == (0, 30)


def test_negative_values_are_rejected_before_touching_the_database(state_db: StateDB) -> None:
    lease = _lease(state_db)
    with pytest.raises(ValueError, match="never negative"):
        _advance(state_db, lease, 0, last_logged_seq=-1)
    with pytest.raises(ValueError, match="never negative"):
        _advance(state_db, lease, 0, pending_tokens=-1)


def test_reset_is_the_only_way_back_and_fences_out_old_readers(state_db: StateDB) -> None:
    lease = _lease(state_db)
    assert _advance(state_db, lease, 0, last_logged_seq=90, has_session_node=True)
    with state_db.transaction() as repos:
        reset = repos.progress.reset(SHELF, SID)
    assert (reset.last_logged_seq, reset.has_session_node, reset.version) == (0, False, 2)
    # A worker that read version 1 before the reset cannot write its stale view back.
    assert not _advance(state_db, lease, 1, last_logged_seq=95)
    assert _advance(state_db, lease, 2, last_logged_seq=12)


def test_shelves_keep_separate_watermarks(state_db: StateDB) -> None:
    lease = _lease(state_db)
    with state_db.transaction() as repos:
        assert repos.progress.advance(
            "default", SID, expected_version=0, lease_token=lease.token, last_logged_seq=8
        )
        other = repos.progress.get("work", SID)
        listed = [(p.shelf, p.last_logged_seq) for p in repos.progress.list()]
    assert other.last_logged_seq == 0
    assert listed == [("default", 8), ("work", 0)]


def test_watermarks_survive_reopening_the_database(state_url: str) -> None:
    first = StateDB(state_url)
    lease = _lease(first)
    assert _advance(first, lease, 0, last_logged_seq=33)
    first.dispose()
    second = StateDB(state_url, clock=lambda: dt.datetime.now(dt.UTC))
    with second.transaction() as repos:
        assert repos.progress.get(SHELF, SID).last_logged_seq == 33
    second.dispose()


def test_two_writers_from_the_same_version_only_one_lands(state_url: str) -> None:
    import threading

    dbs = [StateDB(state_url) for _ in range(4)]
    lease = _lease(dbs[0])
    barrier = threading.Barrier(len(dbs))
    results: list[bool] = []

    def write(db: StateDB, seq: int) -> None:
        barrier.wait()
        results.append(_advance(db, lease, 0, last_logged_seq=seq))

    threads = [threading.Thread(target=write, args=(db, 10 + i)) for i, db in enumerate(dbs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [False, False, False, True]
    with dbs[0].transaction() as repos:
        progress = repos.progress.get(SHELF, SID)
    assert progress.version == 1
    assert progress.last_logged_seq in (10, 11, 12, 13)
    for db in dbs:
        db.dispose()
