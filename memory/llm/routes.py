"""Model routes and output budgets (the route half of :mod:`memory.llm`, which re-exports every
name here).

A route is ``{base_url, model, api_key_env, reasoning_effort?}``; routes are kept in priority
order and the route for a call is picked by the *attempt number* of the task making it
(:func:`select_route`). :func:`output_token_cap` is the ``max_tokens`` of a call: a per-purpose
base plus a thinking allowance unless the effort is ``off`` / ``none``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

# The messages keep the logger of the public module (``memory.llm``).
log = logging.getLogger(__name__)

Purpose = Literal["memory-consolidation", "memory-adjudication", "memory-cascade"]

PURPOSES: Final[tuple[Purpose, ...]] = (
    "memory-consolidation",
    "memory-adjudication",
    "memory-cascade",
)

#: Extra output tokens granted when the model may think (any effort other than ``off``).
THINKING_OUTPUT_ALLOWANCE: Final = 4000
#: Output cap of the adjudication call before the thinking allowance.
ADJUDICATION_MAX_TOKENS: Final = 1024


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """One OpenAI-compatible endpoint + model. The key is read from the environment variable
    named by ``api_key_env`` (or given inline as ``api_key``, never printed)."""

    base_url: str
    model: str
    api_key_env: str
    reasoning_effort: str | None = None
    #: The key itself, when configured inline (discouraged); wins over ``api_key_env``.
    api_key: str | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return f"{self.base_url.rstrip('/')}/{self.model}"


def select_route(routes: Sequence[ModelRoute], attempt: int) -> tuple[int, ModelRoute] | None:
    """The route for ``attempt`` (0-based): head first, one further per retry, clamped to the
    last; ``None`` when there is no route. Negative attempts read as 0."""
    if not routes:
        return None
    index = min(max(0, int(attempt)), len(routes) - 1)
    return index, routes[index]


def parse_routes(value: str | Iterable[Mapping[str, Any]] | None) -> list[ModelRoute]:
    """Routes from JSON text or a list of mappings, in priority order.

    Blank ``base_url``/``model``, no ``api_key_env`` (nor inline ``api_key``) or an unknown key
    is a one-line ``ValueError``;
    a blank ``reasoning_effort`` is an error too (leave it out instead). Duplicates by
    (base_url, model) are dropped with a warning. ``None`` or ``""`` → ``[]``.
    """
    if value is None:
        return []
    if isinstance(value, str):
        if not value.strip():
            return []
        try:
            loaded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"model routes are not valid JSON: {exc.msg} at column {exc.colno}"
            ) from None
        if not isinstance(loaded, list):
            raise ValueError("model routes must be a JSON list of route objects")
        value = loaded
    routes: list[ModelRoute] = []
    seen: set[tuple[str, str]] = set()
    allowed = {"base_url", "model", "api_key_env", "api_key", "reasoning_effort"}
    for position, item in enumerate(value):
        if isinstance(item, ModelRoute):
            route = item
        else:
            if not isinstance(item, Mapping):
                raise ValueError(f"model route {position} must be an object")
            unknown = sorted(set(item) - allowed)
            if unknown:
                raise ValueError(f"model route {position} has unknown key(s): {', '.join(unknown)}")
            fields: dict[str, str] = {}
            for key in ("base_url", "model"):
                raw = item.get(key)
                if not isinstance(raw, str) or not raw.strip():
                    raise ValueError(f"model route {position} needs a non-empty `{key}`")
                fields[key] = raw.strip()
            inline = item.get("api_key")
            if inline is not None and hasattr(inline, "get_secret_value"):
                inline = inline.get_secret_value()
            env_name = item.get("api_key_env")
            if not (isinstance(env_name, str) and env_name.strip()) and not (
                isinstance(inline, str) and inline.strip()
            ):
                raise ValueError(f"model route {position} needs a non-empty `api_key_env`")
            effort = item.get("reasoning_effort")
            if effort is not None and (not isinstance(effort, str) or not effort.strip()):
                raise ValueError(
                    f"model route {position}: `reasoning_effort` must be a non-empty string "
                    "or left out"
                )
            route = ModelRoute(
                fields["base_url"],
                fields["model"],
                env_name.strip() if isinstance(env_name, str) else "",
                effort.strip() if isinstance(effort, str) else None,
                inline.strip() if isinstance(inline, str) and inline.strip() else None,
            )
        identity = (route.base_url.rstrip("/"), route.model)
        if identity in seen:
            log.warning("dropping duplicate consolidation model route %s", route.label)
            continue
        seen.add(identity)
        routes.append(route)
    return routes


#: Efforts that mean "do not think": no thinking allowance is added to the output cap.
NO_THINKING_EFFORTS: Final = frozenset({"off", "none"})


def budget_for_effort(max_output_tokens: int, effort: str | None) -> int:
    """``max_output_tokens`` when the effort is ``off`` (or ``none``), else plus the thinking
    allowance — also with no effort at all, since the model's default may think."""
    if effort in NO_THINKING_EFFORTS:
        return max_output_tokens
    return max_output_tokens + THINKING_OUTPUT_ALLOWANCE


def output_token_cap(purpose: Purpose, effort: str | None, max_output_tokens: int) -> int:
    """The ``max_tokens`` sent for ``purpose``: adjudication has its own base of 1024."""
    base = ADJUDICATION_MAX_TOKENS if purpose == "memory-adjudication" else max_output_tokens
    return budget_for_effort(base, effort)


__all__ = [
    "ADJUDICATION_MAX_TOKENS",
    "NO_THINKING_EFFORTS",
    "PURPOSES",
    "THINKING_OUTPUT_ALLOWANCE",
    "ModelRoute",
    "Purpose",
    "budget_for_effort",
    "output_token_cap",
    "parse_routes",
    "select_route",
]
