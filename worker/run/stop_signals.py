"""SIGINT and SIGTERM, the signals that stop ``run --once`` (one process or ``--jobs N``): held
back around what a signal must not cut, ignored while a stop is under way, installed from the
main thread only."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


def ignore(_signum: int, _frame: FrameType | None) -> None:
    """A handler that does nothing. Not ``SIG_IGN``: a signal that arrived just before the
    switch still runs the Python handler then in place, and with ``SIG_IGN`` there Python
    prints "Signal 15 ignored due to race condition" with a traceback."""


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back (this thread) until the block ends, then delivered."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def stop_signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored (main thread only), then their handlers restored."""
    previous = {signum: set_signal(signum, ignore) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)


def set_signal(signum: signal.Signals, handler: Any) -> Any:
    """Install ``handler``; returns the previous one (None off the main thread: no change)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signum, handler)
