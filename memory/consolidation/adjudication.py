"""Work-unit adjudication: how a new work unit relates to the nearest existing memories.

Before a new ``wu-…`` entry is stored, a ``similar`` lookup finds existing knowledge near it
(:func:`similar_query_text`, :func:`similar_limit`); :func:`filter_candidates` keeps at most 3
real candidates (not the unit itself, no operational rows, within the distance ceiling). With at
least one candidate, one model call (:func:`adjudication_prompt`) answers exactly
``{"verdict": "duplicate|refines|extends|supersedes|contradicts|unrelated", "target": "<existing
entry name>"}``. :func:`adjudication_edges` maps the verdict to statements:

==============  =================================  ===============
verdict         statement (new → nearest)          unit stored?
==============  =================================  ===============
refines         ``refines``                        yes
extends         ``extends``                        yes
supersedes      ``supersedes``                     yes
contradicts     ``supersedes`` (both kept)         yes
unrelated       none                               yes
duplicate       none                               **no**
==============  =================================  ===============

``nearest`` is the candidate named by ``target``, else the first candidate. Any failure (no
route, a failed or truncated call, an unusable reply) means "store it as unrelated".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dsh_memory_worker.memory.consolidation.extraction import SYSTEM_PROMPT, load_json_object
from dsh_memory_worker.memory.constants import (
    OPERATIONAL_TAGS,
    REL_EXTENDS,
    REL_REFINES,
    REL_SUPERSEDES,
)
from dsh_memory_worker.memory.entries import is_operational_name, is_operational_tag
from dsh_memory_worker.memory.llm import ModelClient, ModelError, UnusableModelOutput, one_line

log = logging.getLogger(__name__)

PURPOSE: Final = "memory-adjudication"
VERDICTS: Final = ("duplicate", "refines", "extends", "supersedes", "contradicts", "unrelated")
#: Candidates shown to the judge.
MAX_JUDGED_CANDIDATES: Final = 3
QUERY_TEXT_CHARS: Final = 500
NEW_CONTENT_CHARS: Final = 1000
CANDIDATE_CONTENT_CHARS: Final = 300
DEFAULT_MAX_DISTANCE: Final = 0.45
DEFAULT_CANDIDATES: Final = 5
OVERSAMPLE: Final = 4
OVERSAMPLE_CEILING: Final = 40
OUTPUT_SHAPE: Final = (
    '{"verdict": "duplicate|refines|extends|supersedes|contradicts|unrelated", '
    '"target": "<existing entry name>"}'
)
_PREDICATES: Final[dict[str, str]] = {
    "refines": REL_REFINES,
    "extends": REL_EXTENDS,
    "supersedes": REL_SUPERSEDES,
    "contradicts": REL_SUPERSEDES,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """An existing memory near the new unit."""

    name: str
    data: str
    distance: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str  # one of VERDICTS, or an unknown word (treated as unrelated)
    target: str = ""


# ------------------------------------------------------------------------------ candidate search


def similar_query_text(title: str, content: str) -> str:
    """What the ``similar`` lookup searches with: ``title\\ncontent``, first 500 characters."""
    return f"{title}\n{content}"[:QUERY_TEXT_CHARS]


def similar_limit(candidates: int, store_filters_tags: bool) -> int:
    """The ``similar`` limit: ``candidates`` when the store can exclude tags, else oversampled
    ×4 (at most 40) because operational rows are filtered here instead."""
    return candidates if store_filters_tags else min(candidates * OVERSAMPLE, OVERSAMPLE_CEILING)


def similar_exclude_tags() -> list[str]:
    """The tags a tag-filtering store is asked to exclude."""
    return list(OPERATIONAL_TAGS)


def _is_operational(name: str, tags: Iterable[str]) -> bool:
    return not name or is_operational_name(name) or any(is_operational_tag(t) for t in tags)


def filter_candidates(
    rows: Iterable[Any], own_name: str, max_distance: float = DEFAULT_MAX_DISTANCE
) -> list[Candidate]:
    """The candidates worth judging, nearest first as the store returned them.

    ``rows`` are ``similar`` rows (``key`` or ``name``, ``content`` with ``data``/``tags``,
    ``distance``). Dropped: the unit itself; operational rows (``msg-``/``sum``/``session-``/
    ``hypatia-dream-run-`` names, an empty name, or an operational tag such as ``summary 2``);
    rows farther than ``max_distance`` (rows without a distance are kept). At most 3 remain.
    """
    kept: list[Candidate] = []
    for row in rows:
        name = getattr(row, "key", None) or getattr(row, "name", None)
        if not isinstance(name, str) or name == own_name:
            continue
        content = getattr(row, "content", None)
        tags = getattr(content, "tags", ()) or ()
        if _is_operational(name, (t for t in tags if isinstance(t, str))):
            continue
        distance = getattr(row, "distance", None)
        if isinstance(distance, int | float) and not isinstance(distance, bool):
            if distance > max_distance:
                continue
        else:
            distance = None
        data = getattr(content, "data", "")
        kept.append(Candidate(name, data if isinstance(data, str) else "", distance))
        if len(kept) == MAX_JUDGED_CANDIDATES:
            break
    return kept


# ----------------------------------------------------------------------------------- the call


def adjudication_prompt(title: str, content: str, candidates: Sequence[Candidate]) -> str:
    """The user message asking how the new memory relates to ``candidates``."""
    existing = "\n\n".join(
        f"{index}. {c.name}\n{' '.join(c.data.split())[:CANDIDATE_CONTENT_CHARS]}"
        for index, c in enumerate(candidates, 1)
    )
    return (
        "Decide how a NEW memory relates to EXISTING memories of an AI coding assistant. Output "
        "exactly one JSON object and nothing else:\n\n"
        f"{OUTPUT_SHAPE}\n\n"
        "Verdicts:\n"
        "- duplicate: the NEW memory says nothing an existing one does not already say.\n"
        "- refines: it makes an existing memory more precise or corrects a detail of it.\n"
        "- extends: it adds new, compatible knowledge to an existing memory.\n"
        "- supersedes: it replaces an existing memory that is now outdated.\n"
        "- contradicts: it conflicts with an existing memory and neither is clearly outdated.\n"
        "- unrelated: none of the above.\n"
        "`target` is the name of the existing memory the verdict is about.\n"
        "Prefer unrelated when unsure — a wrong edge is worse than a missing one.\n\n"
        f"NEW memory:\n{title}\n{content[:NEW_CONTENT_CHARS]}\n\n"
        f"EXISTING memories:\n{existing}"
    )


def parse_verdict(text: str) -> Verdict:
    """``{"verdict", "target"}`` from a reply; :class:`UnusableModelOutput` with detail
    ``unparseable reply`` or ``no verdict``. The verdict is trimmed and lower-cased."""
    try:
        value = load_json_object(text, "adjudication")
    except UnusableModelOutput as exc:
        raise UnusableModelOutput(str(exc), detail="unparseable reply") from None
    verdict = value.get("verdict")
    if not isinstance(verdict, str):
        raise UnusableModelOutput("adjudication output has no `verdict` string", "no verdict")
    target = value.get("target")
    return Verdict(verdict.strip().lower(), target.strip() if isinstance(target, str) else "")


def adjudicate(
    client: ModelClient,
    title: str,
    content: str,
    candidates: Sequence[Candidate],
    attempt: int,
) -> Verdict | None:
    """Judge a new unit against ``candidates`` with the route of the run's ``attempt``.

    ``None`` — store the unit as unrelated — when there is no candidate or the call fails in any
    way (logged as ``work-unit adjudication failed, storing unrelated: …``).
    """
    if not candidates or not client.configured:
        return None
    try:
        _, verdict = client.complete_json(
            PURPOSE,
            SYSTEM_PROMPT,
            adjudication_prompt(title, content, candidates),
            attempt,
            parse_verdict,
        )
    except ModelError as exc:
        log.warning("work-unit adjudication failed, storing unrelated: %s", one_line(str(exc)))
        return None
    return verdict


# ------------------------------------------------------------------------------------ mapping


def nearest(verdict: Verdict, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate named by ``verdict.target``, else the first one."""
    for candidate in candidates:
        if candidate.name == verdict.target:
            return candidate
    return candidates[0] if candidates else None


def stores_unit(verdict: Verdict | str | None) -> bool:
    """False only for ``duplicate``: nothing is stored and no edge is written."""
    word = verdict.verdict if isinstance(verdict, Verdict) else verdict
    return word != "duplicate"


def relation_for(verdict: Verdict | str | None) -> str | None:
    """The statement relation a verdict asserts from the new unit to its nearest, if any."""
    word = verdict.verdict if isinstance(verdict, Verdict) else verdict
    return _PREDICATES.get(word or "")


def adjudication_edges(
    verdict: Verdict | str | None, new_name: str, candidate_name: str
) -> list[tuple[str, str, str]]:
    """The ``(head, relation, tail)`` statements a verdict adds: one edge for refines / extends /
    supersedes / contradicts (as ``supersedes``), none otherwise (unknown verdicts included)."""
    relation = relation_for(verdict)
    if relation is None or not candidate_name:
        return []
    return [(new_name, relation, candidate_name)]
