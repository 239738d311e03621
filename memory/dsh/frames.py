"""Bytes → decoded chunks: multi-frame Zstandard (structure scan, format doc §4.5 step 1) and raw
JSONL, read a bounded chunk at a time so a large log is never held in memory whole.

What one zstd frame may decode to, and how long one raw line may grow, is bounded
(:func:`set_max_frame_bytes`; the worker sets it from ``log_max_frame_bytes``): a small file
that expands to hundreds of megabytes is refused as :class:`FrameTooLarge` after at most that
many bytes were decoded, and never held in memory beyond one read piece."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_READ_SIZE = 1 << 20
_FCS_SIZES = (0, 2, 4, 8)
_DICT_SIZES = (0, 1, 2, 4)
_MEASURE_PIECE = 1 << 20
DEFAULT_MAX_FRAME_BYTES = 64 << 20
_limits = {"frame": DEFAULT_MAX_FRAME_BYTES}


def set_max_frame_bytes(limit: int) -> None:
    """The most bytes one zstd frame may decode to and one raw line may hold (per process)."""
    if limit < 1:
        raise ValueError("the frame limit must be positive")
    _limits["frame"] = limit


def max_frame_bytes() -> int:
    return _limits["frame"]


class FrameCorrupt(Exception):
    """A structural error in a zstd file (bad magic, reserved bits, undecodable complete frame)."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset
        self.reason = reason


class FrameTooLarge(FrameCorrupt):
    """A zstd frame that decodes to more than the limit, or a raw line longer than it."""

    def __init__(self, offset: int, what: str, limit: int) -> None:
        super().__init__(
            offset,
            f"{what} more than {limit} bytes (the limit for one frame or line, setting "
            "log_max_frame_bytes)",
        )


@dataclass(slots=True)
class Chunk:
    """Decoded bytes of one zstd frame, or one run of raw lines.

    ``start``/``end`` are file offsets; ``complete`` is False for a torn last zstd frame (its bytes
    are what a non-finalising decoder recovered). ``skippable`` marks a zstd skippable frame.
    """

    start: int
    end: int
    data: bytes
    complete: bool = True
    skippable: bool = False


def frame_length(buf: bytes, pos: int) -> int | None:
    """Length of the zstd frame starting at ``buf[pos]``, or ``None`` if ``buf`` ends inside it.

    Raises :class:`FrameCorrupt` for a bad magic number, reserved header bits or a reserved block
    type (offsets in the exception are relative to ``buf``).
    """
    end = len(buf)
    if end - pos < 4:
        return None
    magic = int.from_bytes(buf[pos : pos + 4], "little")
    if (magic & _SKIPPABLE_MASK) == _SKIPPABLE_MAGIC:
        if end - pos < 8:
            return None
        size = int.from_bytes(buf[pos + 4 : pos + 8], "little")
        return 8 + size if end - pos >= 8 + size else None
    if buf[pos : pos + 4] != ZSTD_MAGIC:
        raise FrameCorrupt(pos, "not a zstd frame (bad magic number)")
    if end - pos < 5:
        return None
    fhd = buf[pos + 4]
    if fhd & 0x08:
        raise FrameCorrupt(pos, "zstd frame header has reserved bits set")
    single_segment = bool(fhd & 0x20)
    fcs_flag = fhd >> 6
    fcs = 1 if (fcs_flag == 0 and single_segment) else _FCS_SIZES[fcs_flag]
    cursor = pos + 5 + (0 if single_segment else 1) + _DICT_SIZES[fhd & 0x03] + fcs
    while True:
        if end - cursor < 3:
            return None
        header = buf[cursor] | (buf[cursor + 1] << 8) | (buf[cursor + 2] << 16)
        last = header & 1
        block_type = (header >> 1) & 3
        if block_type == 3:
            raise FrameCorrupt(cursor, "zstd block has the reserved type")
        cursor += 3 + (1 if block_type == 1 else header >> 3)
        if cursor > end:
            return None
        if last:
            break
    if fhd & 0x04:
        cursor += 4
        if cursor > end:
            return None
    return cursor - pos


def _declared_size(data: bytes) -> int | None:
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        return None
    return size if size >= 0 else None


def _check_expansion(data: bytes, complete: bool, limit: int) -> None:
    """Raise :class:`FrameTooLarge` when ``data`` (one frame) decodes to more than ``limit``
    bytes; a frame without a declared size is decoded and counted, a piece at a time."""
    declared = _declared_size(data)
    if declared is not None and declared > limit:
        raise FrameTooLarge(0, "zstd frame declares", limit)
    if declared is not None and complete:
        return  # decoding it to more than it declares fails as corrupt
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False)
    total = 0
    try:
        while piece := reader.read(_MEASURE_PIECE):
            total += len(piece)
            if total > limit:
                raise FrameTooLarge(0, "zstd frame decodes to", limit)
    except zstandard.ZstdError:
        return  # decode_frame reports (complete) or tolerates (torn) it


def decode_frame(data: bytes, complete: bool, limit: int | None = None) -> bytes:
    """Decompress one frame; a torn frame yields what a non-finalising decoder can recover.

    Raises :class:`FrameTooLarge` (before keeping any output) when it would decode to more than
    ``limit`` bytes (default: :func:`max_frame_bytes`)."""
    _check_expansion(data, complete, max_frame_bytes() if limit is None else limit)
    obj = zstandard.ZstdDecompressor().decompressobj()
    try:
        out: bytes = obj.decompress(data)
    except zstandard.ZstdError as exc:
        if complete:
            raise FrameCorrupt(0, f"zstd frame does not decode ({exc})") from exc
        return b""
    if complete and (not obj.eof or obj.unused_data):
        raise FrameCorrupt(0, "zstd frame does not decode to a finished frame")
    return out


def iter_zstd_chunks(f: BinaryIO, start: int) -> Iterator[Chunk]:
    """Decode frame by frame from ``start`` (a frame boundary); the last chunk may be torn."""
    f.seek(start)
    buf = b""
    base = start
    pos = 0
    eof = False
    while True:
        try:
            length = frame_length(buf, pos)
        except FrameCorrupt as exc:
            raise FrameCorrupt(base + exc.offset, exc.reason) from None
        if length is None:
            if eof:
                if pos < len(buf):
                    torn = buf[pos:]
                    if torn[:4] != ZSTD_MAGIC[: len(torn[:4])]:
                        raise FrameCorrupt(base + pos, "not a zstd frame (bad magic number)")
                    try:
                        data = decode_frame(torn, False)
                    except FrameCorrupt as exc:
                        raise FrameCorrupt(base + pos, exc.reason) from None
                    yield Chunk(base + pos, base + len(buf), data, False)
                return
            more = f.read(max(_READ_SIZE, len(buf) - pos))
            if not more:
                eof = True
            buf = buf[pos:] + more
            base += pos
            pos = 0
            continue
        frame = buf[pos : pos + length]
        frame_start = base + pos
        pos += length
        if frame[:4] != ZSTD_MAGIC:
            yield Chunk(frame_start, frame_start + length, b"", True, skippable=True)
            continue
        try:
            data = decode_frame(frame, True)
        except FrameCorrupt as exc:
            raise FrameCorrupt(frame_start, exc.reason) from None
        yield Chunk(frame_start, frame_start + length, data, True)


def iter_raw_chunks(f: BinaryIO, start: int) -> Iterator[Chunk]:
    """Read raw JSONL from ``start`` in runs of whole lines; a final partial line comes last as an
    incomplete chunk.

    A line that does not end within one read is first measured, a read piece at a time and
    without keeping its bytes, up to its newline: one over the limit is refused
    (:class:`FrameTooLarge`) having held no more than one piece, one within it is read again
    whole."""
    f.seek(start)
    pending = b""
    offset = start
    limit = max_frame_bytes()
    while True:
        more = f.read(_READ_SIZE)
        if not more:
            if pending:
                yield Chunk(offset, offset + len(pending), pending, False)
            return
        data = pending + more if pending else more
        cut = data.rfind(b"\n") + 1
        if cut:
            yield Chunk(offset, offset + cut, data[:cut], True)
            offset += cut
            pending = data[cut:]
            continue
        length, ended = _measure_line(f, len(data), limit)
        if length > limit:
            raise FrameTooLarge(offset, "line holds", limit)
        f.seek(offset)
        line = f.read(length)
        if not ended or len(line) < length:  # the partial last line (or the file shrank)
            if line:
                yield Chunk(offset, offset + len(line), line, False)
            return
        yield Chunk(offset, offset + length, line, True)
        offset += length
        pending = b""


def _measure_line(f: BinaryIO, held: int, limit: int) -> tuple[int, bool]:
    """The length of the line whose first ``held`` bytes were just read (its newline included)
    and whether a newline ends it, reading on a piece at a time; stops counting past ``limit``."""
    length = held
    while length <= limit:
        more = f.read(_READ_SIZE)
        if not more:
            return length, False
        newline = more.find(b"\n")
        if newline >= 0:
            return length + newline + 1, True
        length += len(more)
    return length, False


def read_first_chunk(f: BinaryIO, compressed: bool) -> Chunk | None:
    """The header chunk: zstd frame 1, or the raw text up to and including the first newline."""
    chunks = iter_zstd_chunks(f, 0) if compressed else iter_raw_chunks(f, 0)
    for chunk in chunks:
        if chunk.skippable:
            continue
        if compressed or not chunk.complete:
            return chunk
        cut = chunk.data.find(b"\n") + 1
        return Chunk(0, cut, chunk.data[:cut], True)
    return None
