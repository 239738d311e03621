"""Stored rows → normalised :class:`~memory.dsh.events.Event` objects, all versions (V0–V5).

The hot path is :meth:`RowNormaliser.row_events`: one dict in, its events out, with validation kept
to what the fold and the worker rely on. Damage that makes a row unusable raises
:class:`RowDamage` (the scanner decides torn vs corrupt); an unknown required type raises
:class:`RowUnsupported`; shape problems that DSH would refuse but that do not stop us reading are
collected as ``invalid`` problems.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh_memory_worker.memory.dsh.events import (
    APPEND,
    SURFACE_TYPES,
    Event,
    Header,
    Message,
    Problem,
    Replace,
)
from dsh_memory_worker.memory.dsh.ranges import (
    NO_SEQS,
    CitesPastRow,
    RangeError,
    SeqRanges,
    decode_seq_ranges,
)
from dsh_memory_worker.memory.dsh.vocabulary import (
    KNOWN_TYPES,
    LEGACY_TYPE_RENAMES,
    PACKED_ROW_TYPES,
    normalise_source_kind,
)

_MAX_INVALID_REPORTS = 20
_PLAIN_TYPES = KNOWN_TYPES - SURFACE_TYPES
_EMPTY: Mapping[str, Any] = {}


class RowDamage(Exception):
    """A row that cannot be an event (bad envelope, seq gap, malformed packed row)."""


class RowUnsupported(Exception):
    """An unknown event type without ``ignorable: true`` (a newer writer)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_rewind_marker(kind: str, op: Any, content: Any, source: Any) -> bool:
    """The early-V0 dsh-rewind marker: an empty assistant/message from provider dsh-rewind that
    replaces a surface slice."""
    return (
        kind == "assistant/message"
        and isinstance(op, Replace)
        and not content
        and isinstance(source, dict)
        and source.get("provider") == "dsh-rewind"
    )


class RowNormaliser:
    """Turns rows of one log into events; holds the version and collects ``invalid`` problems."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.version = header.version
        self.problems: list[Problem] = []
        self._invalid = 0

    # -- problems -----------------------------------------------------------------------------

    def invalid(self, seq: int, text: str) -> None:
        self._invalid += 1
        if self._invalid <= _MAX_INVALID_REPORTS:
            self.problems.append(Problem("invalid", f"seq {seq}: {text}"))

    def finish(self) -> list[Problem]:
        """The collected problems, with one summary line for any that were not listed."""
        extra = self._invalid - _MAX_INVALID_REPORTS
        if extra > 0:
            self.problems.append(Problem("invalid", f"{extra} more invalid rows not listed"))
            self._invalid = _MAX_INVALID_REPORTS
        return self.problems

    # -- rows ---------------------------------------------------------------------------------

    def row_events(self, obj: Any, seq: int) -> list[Event]:
        """The events of one stored row whose first event must have ``seq``."""
        # Fast path: an ordinary log-only event with a well-formed envelope.
        if type(obj) is dict:
            kind = obj.get("type")
            if (
                type(kind) is str
                and kind in _PLAIN_TYPES
                and "data" in obj
                and "surfaceOp" not in obj
                and "ignorable" not in obj
                and "sourceEventSeqs" not in obj
            ):
                stored_seq = obj.get("seq", seq)
                time = obj.get("time")
                if (
                    type(stored_seq) is int
                    and stored_seq == seq
                    and (type(time) is int or time is None)
                ):
                    return [Event(seq, kind, time, obj["data"])]
            elif (
                type(kind) is str
                and kind in SURFACE_TYPES
                and obj.get("surfaceOp") == "append"
                and "data" in obj
                and "ignorable" not in obj
            ):
                return self._appended(obj, kind, seq)
        return self._row_events(obj, seq)

    def _appended(self, obj: dict[str, Any], kind: str, seq: int) -> list[Event]:
        """Fast path for an appended surface event."""
        stored_seq = obj.get("seq", seq)
        time = obj.get("time")
        if (
            type(stored_seq) is not int
            or stored_seq != seq
            or not (type(time) is int or time is None)
        ):
            return self._row_events(obj, seq)
        raw_sources = obj.get("sourceEventSeqs")
        sources = NO_SEQS if raw_sources is None else self._sources(raw_sources, seq)
        data = obj["data"]
        kind, message = self._message(kind, data, APPEND, seq)
        return [Event(seq, kind, time, data, APPEND, sources, False, message)]

    def _sources(self, raw: Any, seq: int) -> SeqRanges:
        """A row's decoded ``sourceEventSeqs``; none (with a problem noted) when malformed."""
        try:
            return decode_seq_ranges(raw, below=seq)
        except CitesPastRow as exc:  # damage; what it cites of the log still counts
            self.invalid(seq, f"{exc}; only the {len(exc.kept)} seqs before it are read")
            return exc.kept
        except RangeError as exc:
            self.invalid(seq, str(exc))
            return NO_SEQS

    def _row_events(self, obj: Any, seq: int) -> list[Event]:
        if not isinstance(obj, dict):
            raise RowDamage("a row is not a JSON object")
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise RowDamage("a row has no event type")
        if kind in PACKED_ROW_TYPES:
            return self._packed(obj, kind, seq)
        stored_seq = obj.get("seq")
        if stored_seq is not None and not _is_int(stored_seq):
            raise RowDamage(f"seq {stored_seq!r:.40} is not an integer (at seq {seq})")
        if stored_seq is not None and stored_seq != seq:
            raise RowDamage(f"seq {stored_seq!r} where {seq} was expected (seq gap)")
        time = obj.get("time")
        if time is not None and not _is_int(time):
            raise RowDamage(f"seq {seq}: time is not an integer")
        if "data" not in obj:
            raise RowDamage(f"seq {seq}: row has no data")
        data = obj["data"]
        ignorable = obj.get("ignorable")
        if ignorable is not None and ignorable is not True:
            raise RowDamage(f"seq {seq}: ignorable must be exactly true")
        if kind not in KNOWN_TYPES:
            renamed = LEGACY_TYPE_RENAMES.get(kind)
            if renamed is not None:
                kind = renamed
            elif ignorable:
                return [Event(seq, kind, time, data, None, (), True, None)]
            else:
                raise RowUnsupported(
                    f"seq {seq}: unknown required event type {kind!r} (written by a newer DSH?)"
                )
        raw_op = obj.get("surfaceOp")
        if raw_op is None and kind not in SURFACE_TYPES:
            return [Event(seq, kind, time, data, None, (), ignorable is True, None)]
        op = None if raw_op is None else self._surface_op(raw_op, seq)
        raw_sources = obj.get("sourceEventSeqs")
        sources = NO_SEQS if raw_sources is None else self._sources(raw_sources, seq)
        if kind not in SURFACE_TYPES:
            self.invalid(seq, f"log-only {kind} carries surfaceOp/sourceEventSeqs")
            return [Event(seq, kind, time, data, None, sources, ignorable is True, None)]
        if op is None:
            self.invalid(seq, f"{kind} has no surfaceOp")
        kind, message = self._message(kind, data, op, seq)
        return [Event(seq, kind, time, data, op, sources, ignorable is True, message)]

    def _surface_op(self, raw: Any, seq: int) -> Replace | Any:
        if raw == "append":
            return APPEND
        if isinstance(raw, dict) and raw.get("op") == "replace" and len(raw) == 3:
            start = raw.get("startSeq", raw.get("start"))
            end = raw.get("endSeq", raw.get("end"))
            if isinstance(start, int) and isinstance(end, int) and _is_int(start) and _is_int(end):
                return Replace(start, end)
        self.invalid(seq, f"malformed surfaceOp {raw!r}")
        return None

    def _packed(self, obj: dict[str, Any], kind: str, seq: int) -> list[Event]:
        if self.version > 1:
            raise RowDamage(f"packed {kind} row in a V{self.version} log")
        data = obj.get("data")
        seq0 = obj.get("seq0", seq)
        if not _is_int(seq0) or seq0 != seq:
            raise RowDamage(f"packed row seq0 {seq0!r} where {seq} was expected (seq gap)")
        if not isinstance(data, dict):
            raise RowDamage(f"seq {seq}: malformed packed {kind} row")
        pieces = data.get("args" if kind == "tool-call-chunks" else "texts")
        dt = data.get("dt")
        time0 = obj.get("time0")
        if not isinstance(pieces, list) or not pieces:
            raise RowDamage(f"seq {seq}: malformed packed {kind} row")
        if dt is not None and (not isinstance(dt, list) or len(dt) != len(pieces) - 1):
            raise RowDamage(
                f"seq {seq}: packed {kind} row has {len(pieces)} members but dt "
                "does not have one fewer"
            )
        turn, step, index = data.get("turn"), data.get("step"), data.get("index")
        events: list[Event] = []
        time = time0 if _is_int(time0) else None
        for k, piece in enumerate(pieces):
            if k and time is not None and dt is not None:
                gap = dt[k - 1]
                time = time + gap if _is_int(gap) else None
            chunk: dict[str, Any]
            if kind == "tool-call-chunks":
                chunk = {"type": "tool-call-delta", "index": index, "id": data.get("id")}
                if "name" in data:
                    chunk["name"] = data["name"]
                chunk["argumentsDelta"] = piece
            else:
                delta = "text-delta" if kind == "text-chunks" else "reasoning-delta"
                chunk = {"type": delta, "index": index, "text": piece}
            payload = {"turn": turn, "step": step, "chunk": chunk}
            events.append(Event(seq + k, "assistant/chunk", time, payload))
        return events

    # -- messages -----------------------------------------------------------------------------

    def _message(self, kind: str, data: Any, op: Any, seq: int) -> tuple[str, Message | None]:
        if not isinstance(data, dict):
            self.invalid(seq, f"{kind} data is not an object")
            return kind, None
        if kind == "user/message":
            return kind, self._user(data, seq)
        if kind == "tool/result":
            return kind, self._tool_result(data, seq)
        msg = data.get("message")
        if not isinstance(msg, dict):
            if kind == "assistant/message" and "content" in data:
                msg = data  # legacy {content, provenance}
            else:
                self.invalid(seq, f"{kind} has no message")
                return kind, None
        content = msg.get("content")
        source = msg.get("source")
        if _is_rewind_marker(kind, op, content, source):
            marker_id = msg.get("id") or f"dsh-rewind:{self.header.id}:{seq}"
            marker_source: Mapping[str, Any] = source if isinstance(source, dict) else _EMPTY
            return "user/message", Message(str(marker_id), "user", (), "dsh-rewind", marker_source)
        if not content:
            return kind, None
        role = msg.get("role") or kind.split("/", 1)[0]
        return kind, self._build(msg, str(role), content, source, seq)

    def _build(
        self,
        msg: Mapping[str, Any],
        role: str,
        content: Any,
        source: Any,
        seq: int,
        tool_call_id: str | None = None,
        is_error: bool = False,
    ) -> Message:
        if type(source) is dict and type(content) is list:  # fast path: well-formed V4 message
            kind = source.get("kind")
            msg_id = msg.get("id")
            if type(kind) is str and kind and kind != "plugin" and type(msg_id) is str and msg_id:
                return Message(msg_id, role, tuple(content), kind, source, tool_call_id, is_error)
        if not isinstance(content, list):
            self.invalid(seq, "message content is not an array")
            content = []
        if not isinstance(source, dict):
            self.invalid(seq, "message has no source")
            source = _EMPTY
        elif not source.get("kind"):
            self.invalid(seq, "message source has no kind (DSH's own loader refuses this log)")
        msg_id = msg.get("id")
        if not isinstance(msg_id, str) or not msg_id:
            msg_id = f"legacy-message:{self.header.id}:{seq}"
        return Message(
            msg_id,
            role,
            tuple(content),
            normalise_source_kind(source, role),
            source,
            tool_call_id,
            is_error,
        )

    def _user(self, data: dict[str, Any], seq: int) -> Message:
        return self._build(data, "user", data.get("content"), data.get("source"), seq)

    def _tool_result(self, data: dict[str, Any], seq: int) -> Message | None:
        msg = data.get("message")
        if not isinstance(msg, dict):
            if "callId" in data:  # legacy {callId, content, isError}
                return self._build(
                    data,
                    "tool",
                    data.get("content"),
                    {"kind": "tool", "callId": data["callId"]},
                    seq,
                    str(data["callId"]),
                    data.get("isError") is True,
                )
            self.invalid(seq, "tool/result has no message")
            return None
        source = msg.get("source")
        if msg.get("role") == "tool":
            return self._tool_message(msg, msg, source, seq)
        blocks = msg.get("content")
        if (
            isinstance(blocks, list)
            and len(blocks) == 1
            and isinstance(blocks[0], dict)
            and blocks[0].get("type") == "tool-result"
        ):
            return self._tool_message(msg, blocks[0], source, seq)
        self.invalid(seq, "tool/result message is neither role 'tool' nor one tool-result block")
        return self._build(msg, "tool", blocks, source, seq)

    def _tool_message(
        self, msg: dict[str, Any], result: dict[str, Any], source: Any, seq: int
    ) -> Message:
        """A tool message whose content, ``toolCallId`` and ``isError`` are ``result``'s (the
        message itself, or its one tool-result block)."""
        call_id = result.get("toolCallId")
        return self._build(
            msg,
            "tool",
            result.get("content"),
            source,
            seq,
            call_id if isinstance(call_id, str) else None,
            result.get("isError") is True,
        )
