"""The surface fold (format doc §3): which events the model currently sees, and what each
replacement shadowed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_memory_worker.memory.dsh.events import APPEND, Event, Problem, Replace
from dsh_memory_worker.memory.dsh.ranges import SeqRanges


@dataclass(frozen=True, slots=True)
class Replacement:
    """One applied replace op: event ``seq`` took the place of the positional slice
    ``shadowed`` (``start_seq`` … ``end_seq`` in surface order)."""

    seq: int
    kind: str  # normalised source kind of the replacing message; '' when none
    start_seq: int
    end_seq: int
    shadowed: tuple[int, ...]
    cited: SeqRanges | tuple[int, ...]


@dataclass(slots=True)
class Surface:
    """The folded surface: ``nodes`` in model order, the replacements applied, fold problems."""

    nodes: list[int] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def fold_surface(events: Iterable[Event]) -> Surface:
    """Fold events in log order; a violation is recorded as a problem and that op is skipped."""
    surface = Surface()
    nodes = surface.nodes
    for event in events:
        op = event.surface_op
        if op is None or event.ignorable:
            continue
        if op is APPEND:
            nodes.append(event.seq)
            continue
        if not isinstance(op, Replace):
            continue
        kind = event.message.source_kind if event.message is not None else ""
        try:
            i = nodes.index(op.start_seq)
            j = nodes.index(op.end_seq)
        except ValueError:
            surface.problems.append(
                Problem(
                    "invalid",
                    f"seq {event.seq}: replace {op.start_seq}…{op.end_seq} names a seq that is "
                    "not on the surface; op ignored",
                )
            )
            continue
        if i > j:
            surface.problems.append(
                Problem(
                    "invalid",
                    f"seq {event.seq}: replace {op.start_seq}…{op.end_seq} is reversed in "
                    "surface order; op ignored",
                )
            )
            continue
        shadowed = tuple(nodes[i : j + 1])
        missing = {seq for seq in shadowed if seq not in event.source_seqs}  # by comparison
        if missing:
            surface.problems.append(
                Problem(
                    "invalid",
                    f"seq {event.seq}: sourceEventSeqs do not cite shadowed {sorted(missing)}",
                )
            )
        nodes[i : j + 1] = [event.seq]
        surface.replacements.append(
            Replacement(event.seq, kind, op.start_seq, op.end_seq, shadowed, event.source_seqs)
        )
    return surface
