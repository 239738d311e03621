"""The log₁₆ cascade: batching rules, the archive prompt and its parser.

A cascade run climbs tiers 2…8 of one project. At each tier it asks the store for the oldest
``batch_size`` tier-(L-1) summaries no higher summary points at (:func:`not_summarised_query`);
a full batch (:func:`plan_cascade_batch`) becomes one archive ``sum<L>-<digest12>`` whose body
the model writes from the members (:func:`archive_prompt`, :func:`parse_archive`). A short tier
ends the run. The archive name comes from ``memory.entries``; this module only decides *which*
rows and *what text*.

Reply contract: exactly ``{"title": "<short descriptive noun phrase>", "summary": "<markdown:
5-10 terse bullets>"}``. A reply without a non-empty ``summary`` is unusable
(:class:`UnusableModelOutput`, never quoting it): the cascade warns and stops, and the tier is
tried again by the next run. A blank title becomes ``Archive tier <level>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dsh_memory_worker.memory.consolidation.extraction import SYSTEM_PROMPT, load_json_object
from dsh_memory_worker.memory.constants import ARCHIVE_DEFAULT_TITLE
from dsh_memory_worker.memory.entries import archive_data
from dsh_memory_worker.memory.llm import ModelClient, UnusableModelOutput
from dsh_memory_worker.memory.store.base import KnowledgeEntry

PURPOSE: Final = "memory-cascade"
FIRST_ARCHIVE_LEVEL: Final = 2
#: Highest tier a cascade builds.
MAX_ARCHIVE_LEVEL: Final = 8
DEFAULT_BATCH_SIZE: Final = 16
MIN_BATCH_SIZE: Final = 2
MAX_BATCH_SIZE: Final = 64
DEFAULT_TITLE: Final = ARCHIVE_DEFAULT_TITLE
OUTPUT_SHAPE: Final = (
    '{"title": "<short descriptive noun phrase>", "summary": "<markdown: 5-10 terse bullets>"}'
)


@dataclass(frozen=True, slots=True)
class ArchiveMember:
    """One summary to be archived: its entry name and body."""

    name: str
    data: str


@dataclass(frozen=True, slots=True)
class Archive:
    level: int
    title: str
    summary: str

    @property
    def markdown(self) -> str:
        """The archive entry's data: ``# <title>\\n\\n<summary>``."""
        return archive_data(self.level, self.summary, self.title)


def archive_levels() -> range:
    """The tiers a run may build, in climbing order (2…8)."""
    return range(FIRST_ARCHIVE_LEVEL, MAX_ARCHIVE_LEVEL + 1)


def summary_tag(level: int) -> str:
    return f"summary {level}"


def not_summarised_query(level: int, project: str, batch_size: int) -> dict[str, Any]:
    """The store query for tier ``level``'s batch: unarchived ``summary <level-1>`` entries of
    ``project``, oldest first. Only the object form takes a limit."""
    return {
        "$not-summaried": [summary_tag(level - 1), ["$contains", "scopes", project]],
        "limit": batch_size,
    }


def plan_cascade_batch(
    rows: Iterable[Any], level: int, batch_size: int
) -> list[ArchiveMember] | None:
    """The members of the next tier-``level`` archive, or ``None`` when the tier is not full.

    ``rows`` are the query's rows, oldest first (``KnowledgeEntry`` or anything with ``name`` and
    ``content.data``); rows without a string name are ignored, and fewer than ``batch_size``
    usable rows means no archive. The first ``batch_size`` usable rows form the batch.
    """
    if level < FIRST_ARCHIVE_LEVEL or level > MAX_ARCHIVE_LEVEL:
        return None
    members: list[ArchiveMember] = []
    for row in rows:
        name = getattr(row, "name", None)
        if not isinstance(name, str) or not name:
            continue
        content = getattr(row, "content", None)
        data = getattr(content, "data", "")
        members.append(ArchiveMember(name, data if isinstance(data, str) else ""))
        if len(members) == batch_size:
            return members
    return None


def members_of(entries: Sequence[KnowledgeEntry]) -> list[ArchiveMember]:
    """Entries as archive members (no batching)."""
    return [ArchiveMember(e.name, e.content.data) for e in entries]


def archive_prompt(level: int, members: Sequence[ArchiveMember]) -> str:
    """The user message that asks for a tier-``level`` archive of ``members`` (oldest first)."""
    body = "\n\n".join(
        f"### {index}. {member.name}\n{member.data}" for index, member in enumerate(members, 1)
    )
    return (
        f"You are the memory archivist of an AI coding assistant, building tier {level} of a "
        f"layered summary archive. Below are {len(members)} summaries from tier {level - 1}, "
        "oldest first.\n\n"
        "Merge them into one archive entry. Output exactly one JSON object and nothing else:\n\n"
        f"{OUTPUT_SHAPE}\n\n"
        "Rules:\n"
        "- Compress the narrative, not the conclusions: keep every decision and its reason, the "
        "exact identifiers, and the items still unresolved.\n"
        "- Drop the chronology; group by topic.\n"
        "- No vague phrasing such as 'various improvements'.\n"
        "- Write in the language of the summaries.\n\n"
        f"{body}"
    )


def parse_archive(text: str, level: int) -> Archive:
    """Validate an archive reply; :class:`UnusableModelOutput` when there is no summary."""
    value = load_json_object(text, "cascade")
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise UnusableModelOutput("cascade output has no non-empty `summary` string")
    title = value.get("title")
    clean_title = " ".join(title.split()) if isinstance(title, str) else ""
    return Archive(
        level=level,
        title=clean_title or DEFAULT_TITLE.format(level=level),
        summary=summary.strip(),
    )


def write_archive_text(
    client: ModelClient, level: int, members: Sequence[ArchiveMember], attempt: int
) -> Archive:
    """Make the cascade call for tier ``level`` and parse it (errors as ``ModelClient``'s, plus
    :class:`UnusableModelOutput` for an unusable reply)."""
    _, archive = client.complete_json(
        PURPOSE,
        SYSTEM_PROMPT,
        archive_prompt(level, members),
        attempt,
        lambda text: parse_archive(text, level),
    )
    return archive
