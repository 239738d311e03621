"""The session header line (format doc §4.3)."""

from __future__ import annotations

import json
from typing import Any

from dsh_memory_worker.memory.dsh.depth import depth_problem, too_deep
from dsh_memory_worker.memory.dsh.events import Header, Problem
from dsh_memory_worker.memory.dsh.vocabulary import SUPPORTED_VERSIONS


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _opt_int(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_header(line: bytes) -> Header | Problem:
    """Parse the first line; a problem (``corrupt`` / ``unsupported``) instead of raising."""
    if too_deep(line):
        return Problem("corrupt", f"the header line is {depth_problem()}")
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return Problem("corrupt", "the header line is not valid JSON")
    if not isinstance(obj, dict) or obj.get("type") != "session":
        return Problem("corrupt", 'the first line is not a {"type":"session"} header')
    version = obj.get("version", 0)  # some test-support fixtures omit it: they are V0
    if not isinstance(version, int) or isinstance(version, bool):
        return Problem("corrupt", f"header version {version!r} is not an integer")
    if version not in SUPPORTED_VERSIONS:
        return Problem(
            "unsupported",
            f"session format version {version} is newer than this reader (supports 0-5); "
            "upgrade dsh-memory-worker",
        )
    session_id = obj.get("id")
    if not isinstance(session_id, str) or not session_id:
        return Problem("corrupt", "the header has no session id")
    for key in ("cwd", "parentSession"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return Problem("corrupt", f"header {key} {obj[key]!r:.60} is not a string")
    if "\0" in (obj.get("cwd") or ""):
        return Problem("corrupt", "header cwd holds a NUL character (no path can)")
    seed_length = _opt_int(obj, "seedLength") if version <= 1 else None
    if version <= 1 and "seedLength" in obj and (seed_length is None or seed_length < 0):
        return Problem("corrupt", f"header seedLength {obj.get('seedLength')!r} is not valid")
    is_seeded = seed_length is not None if version <= 1 else obj.get("isSeeded") is True
    return Header(
        id=session_id,
        version=version,
        created_at=_opt_int(obj, "createdAt"),
        cwd=_opt_str(obj, "cwd"),
        parent=_opt_str(obj, "parentSession"),
        seed_length=seed_length,
        is_seeded=is_seeded,
        origin=_opt_str(obj, "origin"),
        delegation_depth=_opt_int(obj, "delegationDepth") or 0,
        agent_preset=_opt_str(obj, "agentPreset"),
    )
