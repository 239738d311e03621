"""The extraction call: one model call turns a transcript into a span summary and work units.

Prompt contract (the reference plugin's): the system prompt is :data:`SYSTEM_PROMPT`; the user
message is the instruction (:func:`extraction_instruction`) followed by
``\\n\\n<transcript>\\n…\\n</transcript>``; the reply is exactly one JSON object::

    {"summary": "<markdown bullets>",
     "workUnits": [{"title": …, "classification": …, "content": …, "tags": […]}]}

:func:`parse_extraction` is strict: a whole-reply markdown fence is accepted, anything else that
is not such an object fails **permanently** (:class:`UnusableModelOutput`, whose message never
quotes the reply). Extra units are trimmed to the configured maximum, never rejected; each unit
keeps string tags only, at most 5; a non-string classification reads as ``''``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from dsh_memory_worker.memory.llm import ModelClient, UnusableModelOutput

SYSTEM_PROMPT: Final = "You produce strict JSON only. You never add prose around it."
PURPOSE: Final = "memory-consolidation"
DEFAULT_MAX_WORK_UNITS: Final = 3
MAX_UNIT_TAGS: Final = 5
CLASSIFICATIONS: Final = (
    "one-shot",
    "correction-chain",
    "bug-fix",
    "design-decision",
    "exploration",
)

#: The reply shape, as the instruction shows it to the model.
OUTPUT_SHAPE: Final = (
    '{ "summary": "<markdown: 3-8 terse bullets: request, what was done, key decisions with '
    'rationale, pending items>",\n'
    '  "workUnits": [ { "title": "<short slug-like title>",\n'
    '                   "classification": "one-shot | correction-chain | bug-fix | '
    'design-decision | exploration",\n'
    '                   "content": "<markdown: ## Context / ## Solution  (correction-chain: '
    "## Initial Attempt / ## Why It Was Wrong / ## Correct Approach / ## Lesson) / "
    '## Key Detail>",\n'
    '                   "tags": ["<topic>", …] } ] }'
)

_FENCE: Final = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n?```\Z", re.S)


@dataclass(frozen=True, slots=True)
class WorkUnit:
    title: str
    classification: str
    content: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    summary: str
    work_units: tuple[WorkUnit, ...] = ()


def max_units_for(attempt: int, configured: int = DEFAULT_MAX_WORK_UNITS) -> int:
    """How many units the prompt asks for: the configured maximum first, 1 on any retry."""
    return configured if attempt <= 0 else 1


def extraction_instruction(max_units: int) -> str:
    """The instruction that precedes the transcript."""
    return (
        "You are the memory consolidation engine of an AI coding assistant. Read the "
        "conversation transcript below (U: user, A: assistant, T: tool call and its outcome) and "
        "distil it into durable memory.\n\n"
        "Output exactly one JSON object and nothing else: no prose before or after it, no "
        "markdown fences. Its shape:\n\n"
        f"{OUTPUT_SHAPE}\n\n"
        "Rules:\n"
        "- Capture lessons, not logs: what was learned, decided or fixed, and why; not a replay "
        "of the conversation.\n"
        "- Be specific: name the exact identifiers, files, commands, errors and values.\n"
        "- Skip trivial chat; when nothing is worth keeping, `workUnits` is [].\n"
        f"- At most {max_units} work units.\n"
        "- Write in the main language of the conversation."
    )


def extraction_prompt(transcript: str, max_units: int) -> str:
    """The whole user message: instruction, then the transcript in ``<transcript>`` tags."""
    return f"{extraction_instruction(max_units)}\n\n<transcript>\n{transcript}\n</transcript>"


def unfence(text: str) -> str:
    """Trim, and unwrap one markdown code fence around the whole reply (```` ```json ````)."""
    stripped = text.strip()
    found = _FENCE.match(stripped)
    return found.group(1).strip() if found else stripped


def load_json_object(text: str, what: str) -> Mapping[str, Any]:
    """The reply as a JSON object, or :class:`UnusableModelOutput` (never quoting the reply)."""
    body = unfence(text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise UnusableModelOutput(
            f"{what} output is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise UnusableModelOutput(
            f"{what} output is not a JSON object (got {type(value).__name__})"
        )
    return value


def parse_extraction(text: str, max_units: int = DEFAULT_MAX_WORK_UNITS) -> Extraction:
    """Validate a consolidation reply. ``max_units`` is the *configured* maximum (a retry asks
    the model for 1 but a longer list is trimmed to this, not rejected)."""
    value = load_json_object(text, "consolidation")
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise UnusableModelOutput("consolidation output has no non-empty `summary` string")
    raw_units = value.get("workUnits", [])
    if raw_units is None:
        raw_units = []
    if not isinstance(raw_units, list):
        raise UnusableModelOutput("consolidation output `workUnits` is not a list")
    units: list[WorkUnit] = []
    for position, raw in enumerate(raw_units[: max(0, max_units)]):
        if not isinstance(raw, Mapping):
            raise UnusableModelOutput(f"consolidation work unit {position} is not an object")
        title, content = raw.get("title"), raw.get("content")
        if not isinstance(title, str) or not title.strip():
            raise UnusableModelOutput(f"consolidation work unit {position} has an empty title")
        if not isinstance(content, str) or not content.strip():
            raise UnusableModelOutput(f"consolidation work unit {position} has empty content")
        classification = raw.get("classification")
        tags = raw.get("tags")
        units.append(
            WorkUnit(
                title=title.strip(),
                classification=classification.strip() if isinstance(classification, str) else "",
                content=content.strip(),
                tags=tuple(
                    tag.strip()
                    for tag in (tags if isinstance(tags, list) else [])
                    if isinstance(tag, str) and tag.strip()
                )[:MAX_UNIT_TAGS],
            )
        )
    return Extraction(summary=summary.strip(), work_units=tuple(units))


def extract(
    client: ModelClient,
    transcript: str,
    attempt: int,
    *,
    max_units: int = DEFAULT_MAX_WORK_UNITS,
) -> Extraction:
    """Make the consolidation call for ``attempt`` and parse it.

    Raises ``RetryableModelError`` (truncated or failed call; the next attempt takes the next
    route), ``PermanentModelError``/``UnusableModelOutput`` (no retry) or ``ModelsNotConfigured``.
    """
    user = extraction_prompt(transcript, max_units_for(attempt, max_units))
    _, extraction = client.complete_json(
        PURPOSE, SYSTEM_PROMPT, user, attempt, lambda text: parse_extraction(text, max_units)
    )
    return extraction
