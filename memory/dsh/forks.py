"""Fork inheritance (format doc §5): how many leading events a child copied from its parent."""

from __future__ import annotations

from collections.abc import Iterable

from memory.dsh.events import Event, Header


def inherited_cut(header: Header | None, events: Iterable[Event]) -> int:
    """The fork cut: events with ``seq`` below it belong to the parent lineage (0 when none).

    V0/V1: the header's ``seedLength``. V2+: the seq of the **last** ``session/end-seed`` whose
    data is ``{inherited: true}`` (untagged end-seeds mark restarts, not forks).
    """
    if header is None:
        return 0
    if header.version <= 1:
        return header.seed_length or 0
    cut = 0
    for event in events:
        if event.type == "session/end-seed" and _tagged(event):
            cut = event.seq
    return cut


def _tagged(event: Event) -> bool:
    data = event.data
    return isinstance(data, dict) and data.get("inherited") is True
