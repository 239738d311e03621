"""hypatia-lite's retry helper: attempt counts, the pauses (through an injected sleep), which
exceptions retry, and the four callers' rules."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from hypatia_lite import db, retry, store
from hypatia_lite.pg import backend as pg_backend
from hypatia_lite.protocol import TransientStoreError
from hypatia_lite.sqlitelib import sqlite3


def _failing(errors: list[BaseException], value: str = "ok") -> tuple[Callable[[], str], list[int]]:
    """An action raising ``errors`` one per call, then returning ``value``; and its call log."""
    calls: list[int] = []

    def action() -> str:
        calls.append(len(calls))
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return value

    return action, calls


def test_backoff_doubles_from_first_up_to_the_cap() -> None:
    assert [retry.Backoff(0.05, cap=1.0).delay(n) for n in range(1, 8)] == [
        0.05,
        0.1,
        0.2,
        0.4,
        0.8,
        1.0,
        1.0,
    ]
    assert [retry.Backoff(0.25, factor=1).delay(n) for n in (1, 2, 5)] == [0.25, 0.25, 0.25]


def test_jitter_is_a_uniform_part_of_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[float, float]] = []
    monkeypatch.setattr(random, "uniform", lambda a, b: asked.append((a, b)) or b / 2)
    assert [retry.Backoff(0.004, jitter=True).delay(n) for n in (1, 2, 3)] == [0.002, 0.004, 0.008]
    assert asked == [(0, 0.004), (0, 0.008), (0, 0.016)]


def test_attempts_pause_between_tries_only() -> None:
    slept: list[float] = []
    assert list(retry.attempts(4, retry.Backoff(1.0), sleep=slept.append)) == [0, 1, 2, 3]
    assert slept == [1.0, 2.0, 4.0]
    slept.clear()
    for attempt in retry.attempts(5, retry.Backoff(1.0), sleep=slept.append):
        if attempt == 1:
            break
    assert slept == [1.0]  # a loop that succeeds stops the pauses


def test_call_retries_what_retry_on_accepts_until_it_succeeds() -> None:
    slept: list[float] = []
    action, calls = _failing([KeyError("a"), KeyError("b")])
    got = retry.call(
        action,
        times=5,
        backoff=retry.Backoff(0.5),
        retry_on=lambda err: isinstance(err, KeyError),
        sleep=slept.append,
    )
    assert (got, calls, slept) == ("ok", [0, 1, 2], [0.5, 1.0])


def test_call_raises_the_last_error_after_the_last_attempt() -> None:
    slept: list[float] = []
    between: list[int] = []
    errors: list[BaseException] = [KeyError(n) for n in range(6)]
    action, calls = _failing(errors)
    with pytest.raises(KeyError) as raised:
        retry.call(
            action,
            times=3,
            backoff=retry.Backoff(0.1, cap=0.15),
            retry_on=lambda err: True,
            between=lambda: between.append(len(calls)),
            sleep=slept.append,
        )
    assert raised.value is errors[2]
    assert (calls, slept, between) == ([0, 1, 2], [0.1, 0.15], [1, 2])


def test_an_error_retry_on_refuses_propagates_at_once() -> None:
    slept: list[float] = []
    action, calls = _failing([KeyError("transient"), ValueError("fatal")])
    with pytest.raises(ValueError, match="fatal"):
        retry.call(
            action,
            times=5,
            backoff=retry.Backoff(1.0),
            retry_on=lambda err: isinstance(err, KeyError),
            sleep=slept.append,
        )
    assert (calls, slept) == ([0, 1], [1.0])


def test_the_callers_rules() -> None:
    doubling = retry.Backoff(0.05, cap=1.0)
    assert db._LOCK_RETRIES == pg_backend._RETRIES == 6
    assert db._LOCK_BACKOFF == pg_backend._BACKOFF == doubling
    assert store._UPDATE_ATTEMPTS == 8
    jittered = retry.Backoff(0.004, jitter=True)
    assert jittered == store._UPDATE_BACKOFF


def test_sqlite_lock_errors_retry_six_times_then_turn_transient(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(retry, "attempts", _with_sleep(retry.attempts, slept.append))
    action, calls = _failing([sqlite3.OperationalError("database is locked")] * 6)
    with pytest.raises(TransientStoreError, match="database is locked"):
        db.retry_locked(action)
    assert (len(calls), slept) == (6, [0.05, 0.1, 0.2, 0.4, 0.8])

    action, calls = _failing([sqlite3.OperationalError("no such table: x")])
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        db.retry_locked(action)
    assert len(calls) == 1

    action, calls = _failing([sqlite3.OperationalError("database is busy")])
    assert db.retry_locked(action) == "ok" and len(calls) == 2


def _with_sleep(
    attempts: Callable[..., object], sleep: Callable[[float], None]
) -> Callable[..., object]:
    """``retry.attempts`` with ``sleep`` whatever its caller passes (its default was bound at
    definition, before the monkeypatch)."""

    def patched(times: int, backoff: retry.Backoff, **_: object) -> object:
        return attempts(times, backoff, sleep=sleep)

    return patched
