"""Lease owner ids, and telling whether the process behind one is gone.

An owner id is ``<kind>:<host>:<pid>:<random>``, where ``<host>`` is the host name and the
process's PID namespace (``box/4026531836``): two containers that share a host name (host
networking) still differ there, so a PID is only ever judged inside the namespace it belongs to.
A lease whose owner has this process's ``<host>`` and whose PID is no longer a live process (gone,
or a zombie waiting to be reaped) is held by nobody and may be taken over at once; any other
owner (another host, an id in another form) is trusted until its lease expires.
"""

from __future__ import annotations

import os
import socket
import uuid
from functools import cache


@cache
def local_host() -> str:
    """This process's host part of an owner id: host name and PID namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")
    except OSError:
        namespace = ""
    host = socket.gethostname().replace(":", "_")
    return f"{host}/{namespace}" if namespace else host


def owner_id(kind: str) -> str:
    """A lease owner id unique to this process: ``<kind>:<host>:<pid>:<random>``."""
    return f"{kind}:{local_host()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def local_pid(owner: str) -> int | None:
    """The PID in ``owner`` when it names a process of this host and PID namespace."""
    parts = owner.split(":")
    if len(parts) != 4 or parts[1] != local_host() or not parts[2].isdigit():
        return None
    return int(parts[2])


def process_is_gone(pid: int) -> bool:
    """True when no live process has ``pid`` (a zombie counts as gone: it runs no code)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


def owner_is_gone(owner: str) -> bool:
    """True when ``owner`` is a process of this host that no longer runs."""
    pid = local_pid(owner)
    return pid is not None and pid != os.getpid() and process_is_gone(pid)
