"""The store breaker counts timeouts in a sliding window of time (issue 32, build item 7): the
3rd timeout within ``window_s`` opens it whatever answers came between, old timeouts age out,
a trial after the cool-down closes or reopens it. A clock the test moves; no process, no sleep
(the real flapping stores: ``tests/faults/test_flapping_store_bounded.py``)."""

from __future__ import annotations

import pytest

from dsh_memory_worker.memory.store.base import FatalStoreError
from dsh_memory_worker.memory.store.breaker import Breaker, StoreDown


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _breaker(clock: Clock) -> Breaker:
    return Breaker(threshold=3, cooldown_s=300.0, clock=clock, window_s=300.0)


def test_a_flapping_store_opens_the_breaker_on_its_third_timeout() -> None:
    clock = Clock()
    breaker = _breaker(clock)
    opened = []
    for call in range(5):  # hang, answer, hang, answer, hang: 2 s apart
        breaker.before_call("write")
        if call % 2:
            breaker.answered()
        else:
            opened.append(breaker.timed_out("hung"))
        clock.now += 2.0
    assert opened == [False, False, True]
    assert breaker.is_open
    with pytest.raises(StoreDown) as raised:
        breaker.before_call("hypatia knowledge_create")
    assert isinstance(raised.value, FatalStoreError)
    assert str(raised.value) == (
        "hypatia knowledge_create: the store is treated as down after 3 timeouts within 300 s "
        "(last: hung); no call is made until 300 s have passed"
    )


def test_timeouts_older_than_the_window_age_out() -> None:
    clock = Clock()
    breaker = _breaker(clock)
    # A store slow now and then: one timeout every 151 s never has 3 within 300 s.
    for _ in range(10):
        breaker.before_call("read")
        assert breaker.timed_out("slow") is False
        breaker.answered()
        clock.now += 151.0
    assert not breaker.is_open
    # The last (L) is 151 s ago: the window holds it alone, this makes two; 148 s on, three.
    assert breaker.timed_out("slow") is False
    clock.now += 148.0
    assert breaker.timed_out("slow") is True


def test_the_trial_after_the_cool_down_closes_or_reopens() -> None:
    clock = Clock()
    breaker = _breaker(clock)
    for _ in range(3):
        breaker.timed_out("hung")
    clock.now += 299.0
    with pytest.raises(StoreDown):
        breaker.before_call("write")
    clock.now += 1.0
    breaker.before_call("trial")  # let through
    assert breaker.timed_out("hung again") is True  # a trial's timeout reopens at once
    with pytest.raises(StoreDown) as raised:
        breaker.before_call("write")
    assert "after 1 timeout within 300 s (last: hung again)" in str(raised.value)
    clock.now += 300.0
    breaker.before_call("trial")
    breaker.answered()
    assert not breaker.is_open
    breaker.before_call("write")  # closed: calls go through
    clock.now += 299.0
    assert breaker.timed_out("hung") is True  # on probation: within 300 s of the trial's answer
    clock.now += 300.0
    breaker.before_call("trial")
    breaker.answered()
    clock.now += 300.0  # a whole window without a timeout: the store starts afresh
    assert breaker.timed_out("hung") is False
    assert breaker.timed_out("hung") is False
    assert breaker.timed_out("hung") is True


def test_the_bound_a_store_hanging_every_other_call_for_an_hour() -> None:
    """Over 3600 s of calls 2 s apart, every other one hanging (2 s timeout), the timeouts the
    run waits on are the first 3, then one per 300 s cool-down (a trial that hangs, or the first
    hang after a trial that answered), as for a store that only hangs."""
    clock = Clock()
    breaker = _breaker(clock)
    waited = 0
    start = clock.now
    call = 0
    while clock.now < start + 3600.0:
        call += 1
        try:
            breaker.before_call("call")
        except StoreDown:
            clock.now += 0.01
            continue
        if call % 2:
            breaker.timed_out("hung")
            waited += 1
        else:
            breaker.answered()
        clock.now += 2.0
    # 3 at the first opening, then one per cool-down: 11 full cool-downs fit in the hour after it.
    assert waited == 3 + 11
