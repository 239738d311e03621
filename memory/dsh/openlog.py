"""Open a session log only when it is a regular file, never through a symbolic link.

The check is made on the opened descriptor (``O_NOFOLLOW``, then ``fstat``), so a log swapped
for a symlink or a FIFO between discovery and reading is refused, not followed or blocked on.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class UnsafeLog(OSError):
    """The path is a symbolic link or not a regular file; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EINVAL, reason)
        self.reason = reason


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a problem line."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_log(path: Path) -> BinaryIO:
    """The log opened for reading; :class:`UnsafeLog` for a symlink or a non-regular file,
    ``OSError`` for anything else (missing, unreadable)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeLog("is a symbolic link (not followed)") from None
        if exc.errno == errno.ENXIO:  # a FIFO or socket with nobody on the other end
            raise UnsafeLog("is not a regular file (a FIFO or socket)") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeLog(f"is {file_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
