"""Work units: store one extracted lesson as ``wu-<slug>-<hash8>``, adjudicated against its nearest.

For each unit the consolidation model extracted (:func:`store_work_unit`):

1. the content gets its classification suffix and a content-addressed name
   (:func:`memory.entries.work_unit_name`); an entry of that name already existing means the same
   lesson was learned before: no lookup, no model call, but ``is_a work-unit`` and
   ``derivedFrom <summary>`` are re-asserted (the lesson gains a ``derivedFrom`` edge to the new
   summary);
2. a ``similar`` lookup (operational tags excluded when the store can filter, oversampled
   otherwise) gives at most 3 candidates within the distance ceiling
   (:func:`memory.consolidation.adjudication.filter_candidates`); a failing lookup means none;
3. with a candidate, one model call returns a verdict (with ``adjudicate`` off there is neither
   lookup nor call: the unit is stored as unrelated); ``duplicate`` stores
   nothing at all; every other verdict stores the entry with ``is_a`` and ``derivedFrom``, plus
   ``refines`` / ``extends`` / ``supersedes`` (``contradicts`` → ``supersedes``, both entries
   kept) to the nearest candidate. A failed adjudication stores the unit as unrelated.

Entry and statements are embedded and scoped to the project, like the reference plugin's.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from dsh_memory_worker.memory.consolidation.adjudication import (
    VERDICTS,
    Candidate,
    adjudicate,
    adjudication_edges,
    filter_candidates,
    nearest,
    similar_exclude_tags,
    similar_limit,
    similar_query_text,
    stores_unit,
)
from dsh_memory_worker.memory.consolidation.extraction import WorkUnit
from dsh_memory_worker.memory.constants import REL_DERIVED_FROM, REL_IS_A, WORK_UNIT_CLASS
from dsh_memory_worker.memory.entries import (
    WORK_UNIT_EDGE_POLICY,
    scopes_for,
    work_unit_content,
    work_unit_data,
    work_unit_name,
    work_unit_policy,
)
from dsh_memory_worker.memory.llm import ModelClient, one_line
from dsh_memory_worker.memory.store.base import MemoryStore, StoreError, TransientStoreError

if TYPE_CHECKING:
    from dsh_memory_worker.worker.settings import Settings

log = logging.getLogger(__name__)

#: What :func:`store_work_unit` reports besides a verdict.
EXISTING: Final = "existing"


@dataclass(frozen=True, slots=True)
class WorkUnitOptions:
    """The knobs of a work-unit write (``Settings``: ``adjudicate``, ``dedup_max_distance``,
    ``dedup_candidates``)."""

    adjudicate: bool = True
    max_distance: float = 0.45
    candidates: int = 5

    @classmethod
    def of(cls, s: Settings) -> WorkUnitOptions:
        """The knobs settings ``s`` give."""
        return cls(
            adjudicate=s.adjudicate,
            max_distance=s.dedup_max_distance,
            candidates=s.dedup_candidates,
        )


@dataclass(frozen=True, slots=True)
class WorkUnitOutcome:
    """``verdict`` is ``existing`` (name already stored), ``duplicate`` (nothing stored) or the
    verdict the unit was stored under (``unrelated`` when there was no judgement)."""

    name: str
    verdict: str
    stored: bool
    edges: tuple[tuple[str, str, str], ...] = ()


def find_candidates(
    store: MemoryStore, title: str, content: str, own_name: str, options: WorkUnitOptions
) -> list[Candidate]:
    """The existing memories worth judging against (at most 3); none when the lookup fails."""
    filters = store.features().similar_filters
    try:
        rows = store.similar(
            similar_query_text(title, content),
            target="knowledge",
            limit=similar_limit(options.candidates, filters),
            exclude_tags=similar_exclude_tags() if filters else (),
        )
    except TransientStoreError:
        raise
    except StoreError as exc:
        log.warning("work-unit candidate lookup unavailable: %s", one_line(str(exc)))
        return []
    return filter_candidates(rows, own_name, options.max_distance)


def store_work_unit(
    store: MemoryStore,
    client: ModelClient,
    unit: WorkUnit,
    *,
    summary_name: str,
    project: str,
    attempt: int,
    recorded: dt.date | dt.datetime,
    options: WorkUnitOptions | None = None,
) -> WorkUnitOutcome:
    """Write one work unit derived from ``summary_name`` (see the module docstring)."""
    options = options or WorkUnitOptions()
    content = work_unit_content(unit.content, unit.classification or None)
    name = work_unit_name(unit.title, content)
    scopes = scopes_for(project)
    base_edges = (
        (name, REL_IS_A, WORK_UNIT_CLASS),
        (name, REL_DERIVED_FROM, summary_name),
    )
    if store.knowledge_get(name) is not None:
        _assert_edges(store, base_edges, scopes)
        return WorkUnitOutcome(name, EXISTING, stored=False, edges=base_edges)
    candidates = (
        find_candidates(store, unit.title, content, name, options) if options.adjudicate else []
    )
    verdict = adjudicate(client, unit.title, content, candidates, attempt) if candidates else None
    if verdict is not None and not stores_unit(verdict):
        return WorkUnitOutcome(name, "duplicate", stored=False)
    policy = work_unit_policy(unit.tags)
    store.knowledge_create(
        name,
        work_unit_data(content, recorded),
        tags=policy.tags,
        scopes=scopes,
        embed=policy.embed,
    )
    word = verdict.verdict if verdict is not None and verdict.verdict in VERDICTS else "unrelated"
    edges = list(base_edges)
    if verdict is not None and word != "unrelated":
        target = nearest(verdict, candidates)
        if target is not None:
            edges.extend(adjudication_edges(verdict, name, target.name))
    _assert_edges(store, edges, scopes)
    return WorkUnitOutcome(name, word, stored=True, edges=tuple(edges))


def _assert_edges(
    store: MemoryStore,
    edges: tuple[tuple[str, str, str], ...] | list[tuple[str, str, str]],
    scopes: tuple[str, ...],
) -> None:
    for head, relation, tail in edges:
        store.statement_create(
            head, relation, tail, scopes=scopes, embed=WORK_UNIT_EDGE_POLICY.embed
        )


def extract_work_units(
    store: MemoryStore,
    client: ModelClient,
    units: tuple[WorkUnit, ...] | list[WorkUnit],
    *,
    summary_name: str,
    project: str,
    attempt: int,
    recorded: dt.date | dt.datetime,
    options: WorkUnitOptions | None = None,
) -> list[WorkUnitOutcome]:
    """:func:`store_work_unit` for each unit, in order."""
    return [
        store_work_unit(
            store,
            client,
            unit,
            summary_name=summary_name,
            project=project,
            attempt=attempt,
            recorded=recorded,
            options=options,
        )
        for unit in units
    ]
