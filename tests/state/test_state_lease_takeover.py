"""A lease whose owner process on this host is gone (exited, or killed and not yet reaped) is
taken over at once, with a new token that fences the dead holder's writes; a live owner, an owner
on another host or in another PID namespace, and an id in another form are left until expiry."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys

import pytest

from dsh_memory_worker.worker.state import StateDB, session_lease_key
from dsh_memory_worker.worker.state.owners import (
    local_host,
    owner_id,
    owner_is_gone,
    process_is_gone,
)

KEY = session_lease_key("sess-takeover")


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


@pytest.mark.integration
def test_owner_ids_and_liveness() -> None:
    me = owner_id("run")
    kind, host, pid, suffix = me.split(":")
    assert (kind, host, int(pid), len(suffix)) == ("run", local_host(), os.getpid(), 8)
    assert "/" in host  # host name and PID namespace
    assert not owner_is_gone(me)
    dead = _dead_pid()
    assert process_is_gone(dead)
    assert owner_is_gone(f"run:{local_host()}:{dead}:abcdef12")
    assert not owner_is_gone(f"run:elsewhere/1:{dead}:abcdef12")  # another host: trusted
    assert not owner_is_gone(f"celery:{dead}")  # another form: trusted until expiry
    zombie = _sleeper()
    try:
        os.kill(zombie.pid, signal.SIGKILL)
        # Not reaped yet: a zombie runs no code, so its leases are free.
        deadline = dt.datetime.now() + dt.timedelta(seconds=30)
        while not process_is_gone(zombie.pid):
            assert dt.datetime.now() < deadline, "the killed child never became a zombie"
        assert owner_is_gone(f"run:{local_host()}:{zombie.pid}:abcdef12")
    finally:
        zombie.wait(timeout=30)


@pytest.mark.integration
def test_a_dead_owners_lease_is_taken_over_with_a_new_token(state_url: str) -> None:
    db = StateDB(state_url)
    dead_owner = f"run:{local_host()}:{_dead_pid()}:deadbeef"
    with db.transaction() as repos:
        stale = repos.leases.acquire(KEY, dead_owner, 300)
        assert stale is not None and stale.token == 1
    with db.transaction() as repos:
        fresh = repos.leases.acquire(KEY, "run:new", 300)
    assert fresh is not None and fresh.token == 2 and fresh.owner == "run:new"
    with db.transaction() as repos:
        assert repos.leases.holder(KEY) == fresh
        assert repos.leases.is_held(stale) is False
        assert repos.leases.renew(stale, 300) is None
        assert repos.leases.release(stale) is False
        # Whatever the dead holder had in flight cannot move a watermark.
        assert not repos.progress.advance(
            "default",
            "sess-takeover",
            expected_version=0,
            lease_token=stale.token,
            lease_key=KEY,
            last_logged_seq=5,
        )
        assert repos.progress.advance(
            "default",
            "sess-takeover",
            expected_version=0,
            lease_token=fresh.token,
            lease_key=KEY,
            last_logged_seq=7,
        )
    db.dispose()


@pytest.mark.integration
def test_live_and_foreign_owners_keep_their_leases(state_url: str) -> None:
    db = StateDB(state_url)
    live = _sleeper()
    try:
        for key, owner in (
            (KEY, f"run:{local_host()}:{live.pid}:a1b2c3d4"),  # alive on this host
            (KEY + "-far", f"run:elsewhere/1:{_dead_pid()}:a1b2c3d4"),  # another host
            (KEY + "-old", f"celery:{_dead_pid()}"),  # an id without a host
        ):
            with db.transaction() as repos:
                held = repos.leases.acquire(key, owner, 300)
                assert held is not None
            with db.transaction() as repos:
                assert repos.leases.acquire(key, "run:new", 300) is None
                assert repos.leases.holder(key) == held
        os.kill(live.pid, signal.SIGKILL)
        live.wait(timeout=30)
        with db.transaction() as repos:  # now gone: taken over at once
            taken = repos.leases.acquire(KEY, "run:new", 300)
        assert taken is not None and taken.token == 2
    finally:
        if live.poll() is None:
            live.kill()
            live.wait(timeout=30)
    db.dispose()
