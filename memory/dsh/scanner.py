"""The line scanner behind every read: header, chunks → lines → events, torn/corrupt policy
(format doc §4.5), checkpoints and resume positions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from json.scanner import make_scanner
from pathlib import Path
from typing import Any, BinaryIO, cast

from dsh_memory_worker.memory.dsh.depth import MAX_JSON_DEPTH, depth_problem, too_deep
from dsh_memory_worker.memory.dsh.events import Event, Header, Problem
from dsh_memory_worker.memory.dsh.frames import (
    Chunk,
    FrameCorrupt,
    FrameTooLarge,
    iter_raw_chunks,
    iter_zstd_chunks,
    max_frame_bytes,
    read_first_chunk,
)
from dsh_memory_worker.memory.dsh.header import parse_header
from dsh_memory_worker.memory.dsh.normalise import RowDamage, RowNormaliser, RowUnsupported
from dsh_memory_worker.memory.dsh.openlog import UnsafeLog
from dsh_memory_worker.memory.dsh.position import CheckpointIndex, ScanPosition
from dsh_memory_worker.memory.dsh.source import LogSource, as_source, is_compressed_name

_SCAN_ONCE = make_scanner(cast(Any, json.JSONDecoder()))  # json.loads minus its per-call wrappers


def is_compressed(path: Path) -> bool:
    return is_compressed_name(path.name)


class LogScan:
    """One pass over a log: a path, or any :class:`~memory.dsh.source.LogSource` (shipped
    segments read the same). Iterate it for events; afterwards read ``header``, ``position``,
    ``index``, ``problems`` and ``torn``.

    ``position`` resumes after earlier scans; events with ``seq < position.next_seq`` are not
    yielded. ``stop_at`` ends the pass once that seq is reached (range reads); ``skip_parse``
    lets V2+ logs (one event per row) skip parsing rows below ``next_seq``.
    """

    def __init__(
        self,
        path: Path | LogSource,
        position: ScanPosition | None = None,
        index: CheckpointIndex | None = None,
        stop_at: int | None = None,
        skip_parse: bool = False,
    ) -> None:
        self.path = path
        self.source = as_source(path)
        self.compressed = self.source.compressed
        self.start = position
        self.index = index if index is not None else CheckpointIndex()
        self.stop_at = stop_at
        self.skip_parse = skip_parse
        self.header: Header | None = None
        self.problems: list[Problem] = []
        self.torn = False
        self.stopped = False  # ended early on corruption / unsupported / stop_at
        self.position = position if position is not None else ScanPosition(0, 0)
        self._norm: RowNormaliser | None = None

    # -- public --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Event]:
        try:
            with self.source.open() as f:
                prepared = self._prepare(f)
                if prepared is not None:
                    try:
                        yield from self._chunks(*prepared)
                    except FrameCorrupt as exc:
                        self._problem("corrupt", f"{exc.reason} at byte {exc.offset}")
                        self.stopped = True
        except UnsafeLog as exc:
            self.problems.append(Problem("io", f"{self.source.label} {exc.reason}; not read"))
        except OSError as exc:
            self.problems.append(Problem("io", f"cannot read {self.source.label}: {exc.strerror}"))
        if self._norm is not None:
            self.problems[:0] = self._norm.finish()

    # -- internals -----------------------------------------------------------------------------

    def _problem(self, kind: str, text: str) -> None:
        self.problems.append(Problem(kind, text))  # type: ignore[arg-type]

    def _prepare(self, f: BinaryIO) -> tuple[Iterator[Chunk], ScanPosition] | None:
        """Read and check the header; the body chunks to scan and where they start."""
        try:
            first = read_first_chunk(f, self.compressed)
        except FrameCorrupt as exc:
            self._problem("corrupt", f"{exc.reason} at byte {exc.offset}")
            return None
        if first is None or not first.data:
            self._problem("torn", "the log is empty (no header written yet)")
            self.torn = True
            return None
        if not first.complete or not first.data.endswith(b"\n"):
            if b"\r" in first.data.lstrip(b" \t\r\n"):
                # DSH writes compact JSON (a CR inside a string is escaped) ended by LF: a raw
                # CR with no LF after it ends lines the old-Mac way; no line would ever end.
                self._problem("corrupt", "the log's lines end in CR alone, not LF")
                return None
            if not first.data.lstrip(b" \t\r\n").startswith(b"{") or b"\0" in first.data:
                # not a header being written: a file of NULs, or something else entirely
                self._problem(
                    "corrupt",
                    "the log does not start with a JSON header line"
                    + (" (it holds NUL bytes)" if b"\0" in first.data else ""),
                )
                return None
            self._problem("torn", "the header line is incomplete")
            self.torn = True
            return None
        if self.compressed and first.data.count(b"\n") != 1:
            self._problem("corrupt", "the first zstd frame is not exactly the header line")
            return None
        parsed = parse_header(first.data)
        if isinstance(parsed, Problem):
            self.problems.append(parsed)
            return None
        self.header = parsed
        self._norm = RowNormaliser(parsed)
        start = self.start
        if start is None or start.offset < first.end:
            start = ScanPosition(first.end, start.next_seq if start else 0, 0)
        f.seek(0, 2)
        size = f.tell()
        if start.offset > size:
            self._problem(
                "io",
                f"the log is shorter ({size} bytes) than the stored position "
                f"({start.offset}); it was truncated or replaced: rescan from the start",
            )
            return None
        self.position = start
        chunks = (iter_zstd_chunks if self.compressed else iter_raw_chunks)(f, start.offset)
        return chunks, start

    def _chunks(self, chunks: Iterator[Chunk], start: ScanPosition) -> Iterator[Event]:
        """Every event of ``chunks`` from ``start``: lines split, skipped or parsed, normalised,
        checkpointed. Long on purpose: this is the reader's per-line hot loop (locals bound
        once, no call per line); split into helpers it is measurably slower on million-event
        logs (``benchmarks/dsh_read_bench.py``)."""
        norm = self._norm
        assert norm is not None
        scan_once = _SCAN_ONCE
        row_events = norm.row_events
        index = self.index
        raw = not self.compressed
        stop_at = self.stop_at
        skip_below = start.next_seq
        fast_skip = self.skip_parse and norm.version >= 2
        seq = start.start_seq
        pending = b""
        pending_start = start.offset  # offset of the chunk where ``pending`` (or the next) began
        pending_seq = seq
        damage: str | None = None  # first line-level damage (tolerant mode)
        last_complete = True
        max_line = max_frame_bytes()
        held: list[bytes] = []  # frames continuing ``pending``'s line, joined once it ends
        held_bytes = 0
        for chunk in chunks:
            if chunk.skippable:
                continue
            last_complete = chunk.complete
            if pending and not raw:  # a line across zstd frames: bounded like a raw line
                newline = chunk.data.find(b"\n")
                if (
                    len(pending) + held_bytes + (len(chunk.data) if newline < 0 else newline)
                    > max_line
                ):
                    raise FrameTooLarge(pending_start, "line holds", max_line)
                if newline < 0 and chunk.complete:
                    held.append(chunk.data)
                    held_bytes += len(chunk.data)
                    continue
                if held:
                    pending = b"".join((pending, *held))
                    held, held_bytes = [], 0
            strict = chunk.complete and not raw
            if not pending and damage is None:
                pending_start, pending_seq = chunk.start, seq
                if not raw and index.due(seq):
                    index.add(seq, chunk.start)
            data = pending + chunk.data if pending else chunk.data
            lines = data.split(b"\n")
            pending = lines.pop()
            if not chunk.complete:
                self.torn = True
                if raw:  # a raw partial last line is the torn tail
                    self._problem("torn", f"partial last line at byte {chunk.start} dropped")
                    pending = b""
                    break
            line_offset = pending_start if raw else 0
            for line in lines:
                if damage is not None:
                    if _is_turn_end(line):
                        self._problem(
                            "corrupt",
                            f"{damage}, followed by a committed turn/end: the damage "
                            "is inside committed history",
                        )
                        self.stopped = True
                        return
                    continue
                if raw:
                    if index.due(seq):
                        index.add(seq, line_offset)
                    line_offset += len(line) + 1
                if fast_skip and seq < skip_below:
                    seq += 1
                    continue
                try:
                    # Bounded before decoding: the decoder recurses once per level.
                    if line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH and too_deep(line):
                        raise RowDamage(depth_problem())
                    text = line.decode()
                    obj, end = scan_once(text, 0)
                    if end != len(text) and text[end:].strip():
                        raise ValueError("trailing data")
                    events = row_events(obj, seq)
                except (ValueError, StopIteration, RowDamage, RecursionError) as exc:
                    where = (
                        f"byte {line_offset - len(line) - 1}"
                        if raw
                        else f"frame at byte {chunk.start}"
                    )
                    text = str(exc) if isinstance(exc, RowDamage) else "unparsable line"
                    if strict:
                        self._problem("corrupt", f"{text} in the complete {where}")
                        self.stopped = True
                        return
                    damage = f"{text} at {where} (seq {seq})"
                    if raw:
                        self.position = ScanPosition(line_offset - len(line) - 1, seq)
                    continue
                except RowUnsupported as exc:
                    self._problem("unsupported", str(exc))
                    self.stopped = True
                    return
                seq = events[-1].seq + 1
                for event in events:
                    if event.seq >= skip_below:
                        if stop_at is not None and event.seq >= stop_at:
                            self.stopped = True
                            return
                        yield event
                if raw:
                    self.position = ScanPosition(line_offset, seq)
            if damage is not None:
                continue
            if chunk.complete and not pending:
                self.position = ScanPosition(chunk.end, max(seq, skip_below))
            elif not raw:
                self.position = ScanPosition(pending_start, max(seq, skip_below), pending_seq)
        if damage is not None:
            self.torn = True
            self._problem("damaged", f"{damage}; the damaged tail was dropped")
        elif pending and not raw and last_complete:
            self._problem("corrupt", "the complete zstd frames end inside a line")
            self.stopped = True
        elif self.torn and not raw:
            self._problem(
                "torn", "the last zstd frame is incomplete; only its complete lines were read"
            )


def _is_turn_end(line: bytes) -> bool:
    if b"turn/end" not in line or too_deep(line):
        return False
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "turn/end"
