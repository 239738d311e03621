"""Names the reader must know: event types per format generation and source-kind renames."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SUPPORTED_VERSIONS: Final = frozenset({0, 1, 2, 3, 4, 5})

#: Event types of the V0 build (tag dsh-v0.1.1-rc.2), format doc §2.5.
V0_TYPES: Final = frozenset(
    {
        "agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided",
        "approval/policy", "assistant/chunk", "assistant/message", "command/done",
        "command/run", "compaction/end", "compaction/prune", "compaction/start",
        "compaction/summary", "feedback/record", "goal/change", "hook/invoked", "hook/result",
        "llm/retry", "llm/retry-started", "permission/preset", "plan/mode", "request/context",
        "request/header", "sandbox/mode", "schedule/change", "session/end-seed",
        "session/title", "session/title-llm-request", "step/end", "step/start",
        "subagent/descriptor", "team/member", "team/message/delivered", "team/message/queued",
        "team/task", "todo/write", "tool-workflow/agent-end", "tool-workflow/agent-start",
        "tool-workflow/run-end", "tool-workflow/run-start", "tool/call", "tool/code-dispatch",
        "tool/code-dispatch-start", "tool/result", "turn/end", "turn/start", "user/message",
        "web/deepseek-search-llm-request",
    }
)  # fmt: skip

#: Types added by V2–V4 (the V4 schema's 59 roots are V0 minus three plus these), and the
#: fork-only ``fork/session-source``.
LATER_TYPES: Final = frozenset(
    {
        "assistant/attempt", "deliverables/presented", "developer/message",
        "feedback/message-delete", "feedback/message-put", "image/offload", "model/selection",
        "session-log-deepseek/delivery-accepted", "subagent/catalog",
        "subagent/model-selection-policy", "system/message", "tool/ptc-dispatch",
        "tool/ptc-dispatch-start", "workspace/changes", "fork/session-source",
    }
)  # fmt: skip

KNOWN_TYPES: Final = V0_TYPES | LATER_TYPES

#: Legacy V0 spellings DSH migrated on load (format doc §8 step 6).
LEGACY_TYPE_RENAMES: Final[Mapping[str, str]] = {
    "steering/message": "user/message",
    "compact/start": "compaction/start",
    "compact/summary": "compaction/summary",
    "compact/end": "compaction/end",
    "compact/prune": "compaction/prune",
}

PACKED_ROW_TYPES: Final = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

#: V3→V4 renames of ``{kind:'plugin', plugin:X}`` (format doc §2.7); anything else → ``plugin:X``.
PLUGIN_RENAMES: Final[Mapping[str, str]] = {
    "compact": "compact-checkpoint",
    "tools-code-mode": "ptc-mode",
    "tools-ptc": "ptc-mode",
    "dsh-compaction-basic": "compact-basic",
}
SYSTEM_PROMPT_PLUGIN: Final = "@deepseek-ai/dsh-system-prompt"
SAME_NAME_PLUGINS: Final = frozenset(
    {
        "agent-instructions", "session-reference", "team-message", "goal", "skill-invocation",
        "skill-catalog", "coordinator", "subagent-report", "subagent-settled", "webhook",
        "agent-message", "model-selection", "plan-mode", "time-context", "tmux-context",
        "user-approval", "repeat-tool-reminder", "tool-cordis", "cordis-host-runner",
        "tool-goal", "tool-jobs", "hooks-codex", "hooks-claude-code", "schedule",
        "dsh-session-title-llm",
    }
)  # fmt: skip


def plugin_kind(plugin: str, role: str) -> str:
    """The V4 kind for a V0–V3 plugin producer name."""
    renamed = PLUGIN_RENAMES.get(plugin)
    if renamed is not None:
        return renamed
    if plugin == SYSTEM_PROMPT_PLUGIN:
        return "system-prompt" if role == "system" else "runtime-context"
    if plugin in SAME_NAME_PLUGINS:
        return plugin
    return f"plugin:{plugin}"


def normalise_source_kind(source: Any, role: str = "user") -> str:
    """One spelling per producer: ``{kind:'plugin', plugin:X}`` and the earliest ``{plugin:X}``
    become the V4 kind; a V4 kind passes through; no kind at all → ``''``."""
    if not isinstance(source, Mapping):
        return ""
    kind = source.get("kind")
    plugin = source.get("plugin")
    if (kind == "plugin" or kind is None) and isinstance(plugin, str) and plugin:
        return plugin_kind(plugin, role)
    if isinstance(kind, str):
        return kind
    return ""
