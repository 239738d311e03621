"""Store child processes die with the worker.

A CLI call runs in its own session (so a timeout can kill its whole process group), which also
means nothing reaches it when the worker goes: without help a ``hypatia`` child outlives a
``kill -9`` or SIGTERM of the worker, reparented to init, still writing. On Linux the child asks
the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``, run in the child
between fork and exec, kept across exec); if the parent died before that, the child exits at
once. Elsewhere this is a no-op and the worker kills the group itself when a call is interrupted
(:mod:`memory.store.cli`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    # The process's own symbols include libc's (no ``ctypes.util.find_library``: it runs
    # ``ldconfig -p`` in a child process).
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


_PRCTL = _prctl()  # resolved once, in the parent: the child only calls it


def die_with_parent(parent_pid: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when ``parent_pid`` dies (``None``
    where the platform has no such request)."""
    prctl = _PRCTL
    if prctl is None:
        return None

    def _request() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent is already gone
            os._exit(1)

    return _request
