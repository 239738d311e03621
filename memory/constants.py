"""Every external name the worker writes, defined once.

Entry-name formats, tag names, statement relations and the default withdrawal whitelist are the
memory layout of the ``dsh-hypatia-auto-memory`` plugin; other modules import them from here and
``tests/content/test_entries_names.py`` asserts them.
"""

from __future__ import annotations

from typing import Final

# ---- entry names ------------------------------------------------------------------------------

#: ``msg-<sessionId>-<N>``: one entry per loggable message, ``N`` the dense ordinal from 0.
MESSAGE_NAME: Final = "msg-{session_id}-{ordinal}"
#: ``session-<sessionId>``: the session node, built from the first host summary.
SESSION_NAME: Final = "session-{session_id}"
#: ``sum-<sessionId>-<fromSeq>-<coveredToSeq>``: a span summary (tier 1).
SPAN_SUMMARY_NAME: Final = "sum-{session_id}-{from_seq}-{to_seq}"
#: ``sum<level>-<digest12>``: a log16 archive tier; digest over the sorted member names.
ARCHIVE_NAME: Final = "sum{level}-{digest}"
#: ``wu-<slug>-<hash8>``: a content-addressed work unit.
WORK_UNIT_NAME: Final = "wu-{slug}-{digest}"

MESSAGE_PREFIX: Final = "msg-"
SESSION_PREFIX: Final = "session-"
SUMMARY_PREFIX: Final = "sum"  # any name starting with "sum" is operational
DREAM_RUN_PREFIX: Final = "hypatia-dream-run-"
#: Names with these prefixes are operational rows, never work-unit candidates.
OPERATIONAL_PREFIXES: Final = (MESSAGE_PREFIX, SUMMARY_PREFIX, SESSION_PREFIX, DREAM_RUN_PREFIX)

ARCHIVE_DIGEST_LEN: Final = 12
WORK_UNIT_DIGEST_LEN: Final = 8
SLUG_CAP: Final = 60
DEFAULT_SLUG: Final = "memory"

# ---- tags -------------------------------------------------------------------------------------

TAG_MESSAGE: Final = "message"
TAG_SESSION: Final = "session"
TAG_SUMMARY: Final = "summary"
#: ``summary <level>``: the tier tag next to ``summary`` (``summary 1`` for span summaries).
TAG_SUMMARY_LEVEL: Final = "summary {level}"
TAG_MEMORY: Final = "memory"
TAG_WORK_UNIT: Final = "work-unit"
TAG_DREAM_RUN: Final = "hypatia-dream-run"
#: Tags excluded from work-unit candidate searches.
OPERATIONAL_TAGS: Final = (TAG_DREAM_RUN, TAG_MESSAGE, TAG_SESSION, TAG_SUMMARY)
WORK_UNIT_MAX_TAGS: Final = 8

# ---- statement relations ----------------------------------------------------------------------

REL_BELONG_TO: Final = "belongTo"  # msg-… → session-…
REL_SUMMARY: Final = "summary"  # sum… → member (msg-… or a lower tier)
REL_IS_A: Final = "is_a"  # wu-… → work-unit
REL_DERIVED_FROM: Final = "derivedFrom"  # wu-… → sum-…
REL_REFINES: Final = "refines"
REL_EXTENDS: Final = "extends"
REL_SUPERSEDES: Final = "supersedes"
#: The object of every work unit's ``is_a`` statement.
WORK_UNIT_CLASS: Final = "work-unit"

# ---- message entry layout ---------------------------------------------------------------------

INTERRUPTED_SUFFIX: Final = "[turn interrupted mid-stream]"
TOOL_CALLS_ONLY: Final = "(tool calls only)"
TRUNCATION_MARKER: Final = "\n\n[...truncated {omitted} chars]"
ARCHIVE_DEFAULT_TITLE: Final = "Archive tier {level}"

# ---- withdrawal -------------------------------------------------------------------------------

#: Normalised source kinds whose ``user/message`` replacement means "the user took this back":
#: dsh-rewind (V4 ``dsh-rewind``, V3-era ``plugin:dsh-rewind``; the early V0 assistant marker is
#: normalised by the reader to ``dsh-rewind``) and the two rollback plugins (``plugin:rollback``).
DEFAULT_WITHDRAWAL_WHITELIST: Final = ("dsh-rewind", "plugin:dsh-rewind", "plugin:rollback")

# ---- project scope ----------------------------------------------------------------------------

#: Scope of a session whose directory has no name (``/``); no real basename contains a slash.
ROOT_PROJECT: Final = "/"
