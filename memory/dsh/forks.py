"""Fork inheritance (format doc §5): how many leading events a child copied from its parent."""

from __future__ import annotations

from collections.abc import Iterable

from dsh_memory_worker.memory.dsh.events import Event, Header


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


def seed_complete(header: Header, tagged: int, last_time: int | None = None) -> bool:
    """Whether a log whose first events hold ``tagged`` ``session/end-seed {inherited: true}``
    markers, the last one written at ``last_time`` (epoch ms), shows the end of its own seed
    (format doc §5).

    A V0/V1 fork's cut is in its header, and an unseeded log has none: complete. A V2+ seeded
    log copies its parent's events first — the parent's own tagged marker too when the parent is
    a fork — then writes its own marker as it is created. Its seed has ended when

    * the last tagged marker is not older than the header's ``createdAt``: the child wrote it
      (a copied one was written when an older session was created), or
    * for a subagent child (``origin: 'subagent'``, ``delegationDepth`` = the parent's + 1) there
      are ``delegationDepth`` of them (a chain of forked subagents holds one per level), and for
      any other seeded log there is one.

    Until then a reader has seen only the parent's events (or part of them) and must not take
    any of them as the child's own.
    """
    if header.version <= 1 or not header.is_seeded:
        return True
    if tagged == 0:
        return False
    if last_time is not None and header.created_at is not None and last_time >= header.created_at:
        return True
    return tagged >= (max(1, header.delegation_depth) if header.origin == "subagent" else 1)
