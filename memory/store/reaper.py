"""Store calls' process groups die with the worker, however the worker ends.

A ``cli`` store call runs in its own session (its pid is its process group). The kernel's
parent-death signal (:mod:`memory.store.lifetime`) reaches only that direct child: a ``hypatia``
that starts a child of its own (a wrapper script, an embedder) would leave it running after a
``kill -9`` of the worker. So each worker process keeps one small helper, the *reaper*, started
with the first store call: it holds the read end of a pipe whose only writer is the worker. Each
store call registers its group on that pipe (``+<pgid>``) from the child itself, before ``exec``
(so no window exists where a started call is unregistered), and the worker unregisters it once
the call is reaped (``-<pgid>``). When the worker goes, by any signal, the pipe reads end of file
and the reaper kills every group still registered, then exits.

The reaper ignores SIGINT, SIGTERM and SIGHUP (a terminal's Ctrl-C or a group-wide SIGTERM must
not kill it before the worker): only the end of the pipe ends it. A forked child of the worker
(``--jobs``, a Celery pool child) closes the inherited write end and starts its own reaper on its
first store call; until then, or if it never makes one, it holds the parent's write end open,
and the parent's reaper acts when that child is gone too.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

# The helper: stdlib only, no site (starts in tens of milliseconds), reads its stdin.
_HELPER = r"""
import os, signal
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
groups, rest = set(), b""
while True:
    try:
        chunk = os.read(0, 4096)
    except InterruptedError:
        continue
    if not chunk:
        break
    *lines, rest = (rest + chunk).split(b"\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""

_lock = threading.Lock()
_state: dict[str, int] = {}  # "pid": the process that owns "fd" (the write end), "helper"


def reaper_fd() -> int | None:
    """The write end of this process's reaper pipe, starting the reaper on first use (``None``
    where it cannot run: the caller then relies on the parent-death signal alone)."""
    if sys.platform == "win32":  # pragma: no cover - POSIX only
        return None
    with _lock:
        if "fd" in _state:
            if _state["pid"] == os.getpid():
                return _state["fd"]
            # Forked from the owner: its write end must not keep the owner's reaper waiting.
            # (Not closed in an at-fork hook: a store call's own fork runs those hooks before
            # its ``preexec_fn`` registers the call on this very descriptor.)
            with contextlib.suppress(OSError):
                os.close(_state.pop("fd"))
        read_end, write_end = os.pipe()  # both close-on-exec; stdin below is a dup
        try:
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return None
        os.close(read_end)
        _state.update(pid=os.getpid(), fd=write_end, helper=helper.pid)
        # Never waited for: it outlives this process by design; the returncode is not needed.
        helper.returncode = 0
        return write_end


def register_in_child(fd: int) -> None:
    """Run in the store child between fork and exec: register its own group (its pid)."""
    with contextlib.suppress(OSError):
        os.write(fd, b"+%d\n" % os.getpid())


def unregister(fd: int | None, pgid: int) -> None:
    """The call with group ``pgid`` is over: the reaper forgets it."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(fd, b"-%d\n" % pgid)
