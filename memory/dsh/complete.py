"""The complete bytes of a log, in pieces that end on a frame (zstd) or line (raw) boundary:
what log shipping sends. A torn tail (an unfinished last zstd frame, a raw line without its
newline) is never part of a piece; it is sent once it is complete.

Frames are found by their structure (:func:`~memory.dsh.frames.frame_length`), without
decoding; the readers decode and judge the shipped bytes exactly as they judge the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from dsh_memory_worker.memory.dsh.frames import (
    FrameCorrupt,
    FrameTooLarge,
    frame_length,
    max_frame_bytes,
)

_READ_SIZE = 1 << 20


@dataclass(frozen=True, slots=True)
class Piece:
    """Bytes ``[offset, offset + len(data))`` of the log, whole frames or whole lines."""

    offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


def complete_pieces(
    f: BinaryIO, compressed: bool, start: int, target: int = 4 << 20
) -> Iterator[Piece]:
    """Complete bytes from ``start`` (a frame or line boundary), each piece about ``target``
    bytes (at least one frame or line). From offset 0 the header frame or line is a piece of
    its own. Raises :class:`~memory.dsh.frames.FrameCorrupt` where the structure breaks (the
    pieces before it were yielded) and ``FrameTooLarge`` for a frame or line over the limit."""
    if start == 0:
        cut = _zstd_cuts if compressed else _line_cuts
        header = next(cut(f, 0, 1), None)
        if header is None:
            return
        yield header
        start = header.end
    yield from (_zstd_cuts if compressed else _line_cuts)(f, start, target)


def _line_cuts(f: BinaryIO, start: int, target: int) -> Iterator[Piece]:
    f.seek(start)
    limit = max_frame_bytes()
    pending = b""
    offset = start
    while True:
        more = f.read(_READ_SIZE)
        if not more:
            return
        data = pending + more if pending else more
        end = _last_newline_within(data, target)
        while end:
            yield Piece(offset, data[:end])
            offset += end
            data = data[end:]
            end = _last_newline_within(data, target)
        if len(data) > limit:
            raise FrameTooLarge(offset, "line holds", limit)
        pending = data


def _last_newline_within(data: bytes, target: int) -> int:
    """End of the last whole line within ``target`` bytes (of the first line when it is
    longer); 0 when ``data`` holds no whole line."""
    if len(data) <= target:
        return data.rfind(b"\n") + 1
    cut = data.rfind(b"\n", 0, target) + 1
    return cut or data.find(b"\n") + 1


def _zstd_cuts(f: BinaryIO, start: int, target: int) -> Iterator[Piece]:
    f.seek(start)
    limit = max_frame_bytes()
    buf = b""
    base = start  # file offset of buf[0]
    pos = 0  # end of the frames already in the current piece
    eof = False
    while True:
        try:
            length = frame_length(buf, pos)
        except FrameCorrupt as exc:
            if pos:
                yield Piece(base, buf[:pos])
            raise FrameCorrupt(base + exc.offset, exc.reason) from None
        if length is not None:
            pos += length
            if pos >= target:
                yield Piece(base, buf[:pos])
                buf, base, pos = buf[pos:], base + pos, 0
            continue
        if len(buf) - pos > limit:
            raise FrameTooLarge(base + pos, "zstd frame holds", limit)
        if eof:
            break
        more = f.read(_READ_SIZE)
        eof = not more
        buf += more
    if pos:
        yield Piece(base, buf[:pos])
