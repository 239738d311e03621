"""Where the bytes of one log generation come from: a file in the DSH home, or segments shipped
to shared storage (``worker.shipping``). Every reader (:mod:`memory.dsh.reader`, the scanner, the
checkpoint index) takes either, and reads the same events from the same byte offsets.

A :class:`LogSource` opens a seekable binary stream over the log's bytes. A file source is
today's :func:`~memory.dsh.openlog.open_log`, unchanged. A :class:`SegmentSource` is given the
log's shipped length and a ``fetch(offset, size)`` callable that returns the bytes of
``[offset, offset + size)`` (clipped to the shipped length); it knows nothing of databases.
"""

from __future__ import annotations

import errno
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol, cast

from dsh_memory_worker.memory.dsh.openlog import open_log

Fetch = Callable[[int, int], bytes]
"""``fetch(offset, size)``: the log's bytes ``[offset, offset + size)``; fewer only at the end."""


def is_compressed_name(name: str) -> bool:
    """Whether a log file name is a Zstandard generation (``.zstd`` / ``.zst``)."""
    return name.endswith(".zstd") or name.endswith(".zst")


class LogSource(Protocol):
    """The bytes of one log generation."""

    @property
    def label(self) -> str:
        """What problem lines call the log (a path, or the shipped log's name)."""
        ...

    @property
    def compressed(self) -> bool: ...

    def open(self) -> BinaryIO:
        """A seekable binary stream over the log's bytes (``OSError`` when unreadable)."""
        ...


@dataclass(frozen=True, slots=True)
class FileSource:
    """A log file on this machine, opened only when it is a regular file."""

    path: Path

    @property
    def label(self) -> str:
        return str(self.path)

    @property
    def compressed(self) -> bool:
        return is_compressed_name(self.path.name)

    def open(self) -> BinaryIO:
        return open_log(self.path)


class SegmentsMissing(OSError):
    """Shipped bytes a read needs are not stored (pruned, or never shipped)."""

    def __init__(self, offset: int, size: int) -> None:
        super().__init__(
            errno.ENODATA, f"shipped bytes {offset}..{offset + size} are not stored (pruned?)"
        )


@dataclass(frozen=True, slots=True)
class SegmentSource:
    """Shipped bytes of one log generation: ``size`` bytes, read through ``fetch``.

    ``name`` is the log's file name as it was shipped (it says whether the log is compressed)."""

    name: str
    size: int
    fetch: Fetch
    where: str = ""

    @property
    def label(self) -> str:
        return self.where or f"shipped log {self.name}"

    @property
    def compressed(self) -> bool:
        return is_compressed_name(self.name)

    def open(self) -> BinaryIO:
        return cast(BinaryIO, _SegmentReader(self.size, self.fetch))


class _SegmentReader(io.RawIOBase):
    """A raw, seekable, read-only stream over ``fetch`` (unbuffered: ``fetch`` may read ahead).

    A read stops short before bytes that are not stored, and fails only when none are at the
    position: a pruned span is an error for a read that needs it, not for the header read
    before a resume from a later checkpoint."""

    def __init__(self, size: int, fetch: Fetch) -> None:
        super().__init__()
        self._size = size
        self._fetch = fetch
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        data = self._fetch(self._pos, want)[:want]
        if not data:
            raise SegmentsMissing(self._pos, want)
        memoryview(buffer)[: len(data)] = data
        self._pos += len(data)
        return len(data)


def as_source(log: Path | str | LogSource) -> LogSource:
    """A path is a :class:`FileSource`; a source is itself."""
    if isinstance(log, (str, Path)):
        return FileSource(Path(log))
    return log
