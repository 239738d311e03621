"""A stop that a signal handler may set: SIGTERM / SIGINT ask a follow loop to end.

``threading.Event`` cannot be set from a signal handler: the handler runs in the main thread
between two bytecodes, and when that thread is inside ``Event.wait`` or ``is_set`` it holds the
Event's lock, which ``set()`` then waits for forever (a shipper or a daemon that no longer stops on
SIGTERM; seen as a rare hang of the shipper after its final SIGTERM). Here ``set`` takes no lock:
it raises a flag and writes one byte to a pipe that ``wait`` selects on (the byte is never read,
so every later wait, in any thread, returns at once)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
from types import FrameType


class SignalStop:
    """``is_set`` / ``wait(timeout)`` like ``threading.Event``; ``set`` is safe in a handler."""

    def __init__(self) -> None:
        self._flag = False
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def set(self) -> None:
        self._flag = True
        with contextlib.suppress(OSError):  # the pipe is full: a byte is there already
            os.write(self._write, b"\0")

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """Until set, or ``timeout`` seconds; whether it is set."""
        if not self._flag:
            select.select([self._read], [], [], timeout)
        return self._flag

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        """A signal handler that sets this stop."""
        self.set()


def stop_on(*signums: int) -> SignalStop:
    """A stop set by any of ``signums`` (their handlers are replaced)."""
    stop = SignalStop()
    for signum in signums:
        signal.signal(signum, stop.handle)
    return stop


__all__ = ["SignalStop", "stop_on"]
