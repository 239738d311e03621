"""The prompt version: a short digest of every prompt text that shapes a derived entry.

The extraction instruction (for the configured maximum of work units), the shared system prompt
and the archive prompt go into one SHA-256; its first 12 hex digits name the version. Editing any
of them (or changing ``max_work_units_per_run``, which the instruction quotes) yields a new
version, so ``reconsolidate --stale`` finds what the old prompts wrote without anyone keeping a
version number by hand.
"""

from __future__ import annotations

import hashlib
from functools import cache

from dsh_memory_worker.memory.consolidation.archive import archive_prompt
from dsh_memory_worker.memory.consolidation.extraction import SYSTEM_PROMPT, extraction_instruction


@cache
def prompt_version(max_units: int) -> str:
    """The version of the prompts a run with ``max_units`` work units per span sends."""
    digest = hashlib.sha256()
    for part in (SYSTEM_PROMPT, extraction_instruction(max_units), archive_prompt(2, [])):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:12]
