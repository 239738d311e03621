"""A follow loop's stop is set by a signal handler, which runs in the main thread between two
bytecodes — possibly in the middle of that thread's own ``wait`` or ``is_set``. A
``threading.Event`` deadlocks there (its ``set`` waits for the lock its ``wait`` holds): the shipper
and the daemon could then never stop on SIGTERM. The trace hook below calls the handler at every
line the waiting thread runs inside the stop's methods, as a signal may."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from dsh_memory_worker.worker.stop_flag import SignalStop


def _set_at_line_inside(stop: Any, method: str, nth: int) -> Callable[[], None]:
    """A body that waits on ``stop`` while a tracer sets it at the ``nth`` line run inside
    ``method`` (a qualified name)."""

    def body() -> None:
        lines = []

        def tracer(frame: FrameType, event: str, _arg: object) -> Any:
            if event == "line" and frame.f_code.co_qualname == method:
                lines.append(frame.f_lineno)
                if len(lines) == nth:
                    stop.set()  # the handler, as a signal would run it here
            return tracer

        sys.settrace(tracer)
        try:
            while not stop.wait(0.05):
                pass
        finally:
            sys.settrace(None)

    return body


def _ends(body: Callable[[], None], within_s: float = 30) -> bool:
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout=within_s)
    return not thread.is_alive()


@pytest.mark.integration
def test_a_threading_event_set_inside_its_own_wait_deadlocks() -> None:
    """Why not ``threading.Event``: set at its second line (the lock held), the wait never ends.
    In a process of its own: the deadlocked thread must not stay in the tests' process (a
    running thread makes ``run --once --jobs`` spawn instead of fork, for one)."""
    code = (
        "import sys, threading\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_stop_flag import _ends, _set_at_line_inside\n"
        "body = _set_at_line_inside(threading.Event(), 'Event.wait', 2)\n"
        "print('ends' if _ends(body, within_s=2) else 'deadlocked', flush=True)\n"
    )
    here = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", code, here], capture_output=True, text=True, timeout=120
    )
    assert done.stdout == "deadlocked\n", done.stderr


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_the_signal_stop_set_at_any_line_of_its_wait_ends_the_wait(nth: int) -> None:
    assert _ends(_set_at_line_inside(SignalStop(), "SignalStop.wait", nth))


def test_wait_returns_when_set_from_another_thread_and_stays_set() -> None:
    stop = SignalStop()
    assert stop.wait(0.01) is False
    threading.Timer(0.05, stop.set).start()
    assert stop.wait(30) is True
    assert stop.wait(0) is True and stop.is_set()


@pytest.mark.integration
def test_sigterm_ends_a_process_waiting_on_it() -> None:
    code = (
        "import signal, sys\n"
        "from dsh_memory_worker.worker.stop_flag import stop_on\n"
        "stop = stop_on(signal.SIGTERM)\n"
        "print('ready', flush=True)\n"
        "while not stop.wait(0.001): pass\n"
        "print('stopped', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert proc.stdout.read() == "stopped\n"
