"""The normalised DSH event model: one vocabulary for log versions V0–V5.

Every reader path (raw or zstd, any version) produces these objects; everything above the reader
(withdrawal, entries, consolidation, the worker) sees only them. What normalisation does:

* replace ops: V0–V2 ``{op:'replace', start, end}`` and V3+ ``{op:'replace', startSeq, endSeq}``
  both become :class:`Replace` (``start_seq`` / ``end_seq``); ``"append"`` becomes :data:`APPEND`.
* ``sourceEventSeqs``: range form decoded (``[[5,8],12]`` → ``(5, 6, 7, 8, 12)``).
* source kinds: ``{kind:'plugin', plugin:X}`` and the earliest ``{plugin:X}`` become ``plugin:X``
  unless V3→V4 renamed ``X`` (``compact`` → ``compact-checkpoint`` etc., format doc §2.7); the raw
  source object stays available in :attr:`Message.source`.
* tool results: V0–V3 ``role:'user'`` wrapping one ``tool-result`` block and V4 ``role:'tool'``
  both become a :class:`Message` with ``role == 'tool'``, ``tool_call_id``, the result blocks as
  ``content`` and ``is_error``.
* legacy V0 shapes: ``steering/message`` → ``user/message``; ``compact/*`` → ``compaction/*``;
  the early dsh-rewind marker (an empty ``assistant/message`` from provider ``dsh-rewind`` with a
  replace op) becomes a ``user/message`` whose message has ``source_kind == 'dsh-rewind'`` and
  empty content.
* packed V0/V1 chunk rows are expanded into ``assistant/chunk`` events; normalised snapshot
  fixtures without ``seq``/``time`` get seqs from the expanded stream and ``time`` ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from dsh_memory_worker.memory.dsh.ranges import SeqRanges

#: Event types that may sit on the model-visible surface (V4 superset).
SURFACE_TYPES: Final = frozenset(
    {"user/message", "assistant/message", "tool/result", "system/message", "developer/message"}
)

#: ``torn``: an incomplete write at the end (normal while DSH writes); ``damaged``: complete
#: lines that do not parse, after which nothing committed follows (dropped, but reported).
ProblemKind = Literal["torn", "damaged", "corrupt", "unsupported", "invalid", "io"]


@dataclass(frozen=True, slots=True)
class Replace:
    """A replace surface op; endpoints are seqs located by *surface position* (start may be >
    end numerically)."""

    start_seq: int
    end_seq: int


class _Append:
    __slots__ = ()

    def __repr__(self) -> str:
        return "APPEND"


APPEND: Final = _Append()

SurfaceOp = _Append | Replace


@dataclass(frozen=True, slots=True)
class Message:
    """A message derived from a surface event, normalised across versions."""

    id: str
    role: str  # 'system' | 'developer' | 'user' | 'assistant' | 'tool'
    content: tuple[Mapping[str, Any], ...]
    source_kind: str  # normalised; '' when the source had no kind (DSH refuses such a log)
    source: Mapping[str, Any] = field(default_factory=dict)
    tool_call_id: str | None = None
    is_error: bool = False


def _int_field(data: Any, key: str) -> int | None:
    """``data[key]`` when ``data`` is a mapping and the value an int (not a bool), else None.
    ``type(…) is`` first: decoded data is a dict and the value an int, and the ABC checks
    cost more."""
    value = data.get(key) if type(data) is dict or isinstance(data, Mapping) else None
    return (
        value
        if type(value) is int or (isinstance(value, int) and not isinstance(value, bool))
        else None
    )


@dataclass(frozen=True, slots=True)
class Event:
    """One normalised log event."""

    seq: int
    type: str
    time: int | None  # Unix ms; None in normalised snapshot fixtures
    data: Mapping[str, Any]
    surface_op: SurfaceOp | None = None
    #: decoded sourceEventSeqs (ranges stay ranges: :class:`memory.dsh.ranges.SeqRanges`);
    #: empty when absent
    source_seqs: SeqRanges | tuple[int, ...] = ()
    ignorable: bool = False
    message: Message | None = None  # for surface types (None when the payload derives none)
    #: Whether the event is a loggable message, once something asked
    #: (:func:`memory.span.loggable_once`): in one run the scan, the span planner and the
    #: session node's survey see the same objects and classify each event once between them.
    loggable_memo: bool | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def turn(self) -> int | None:
        return _int_field(self.data, "turn")

    @property
    def step(self) -> int | None:
        return _int_field(self.data, "step")

    @property
    def is_replace(self) -> bool:
        return isinstance(self.surface_op, Replace)


@dataclass(frozen=True, slots=True)
class Header:
    """The session header line, all versions."""

    id: str
    version: int
    created_at: int | None = None
    cwd: str | None = None
    parent: str | None = None
    seed_length: int | None = None  # V0/V1
    is_seeded: bool = False  # V2+ (V0/V1: seed_length is not None)
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """A read problem, reported as one human-readable line; never an exception."""

    kind: ProblemKind
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"
