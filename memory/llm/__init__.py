"""Model routes: OpenAI-compatible chat completions (DeepSeek's API is one) for consolidation —
the client (:mod:`.client`), routes and budgets (:mod:`.routes`), replies (:mod:`.stream`).

A route is ``{base_url, model, api_key_env, reasoning_effort?}``; routes are kept in priority
order and the route for a call is picked by the *attempt number* of the task making it: the
first attempt uses the head, each retry degrades one route further, and past the end the last
route is reused (:func:`select_route`). Consolidation, adjudication and the cascade share this
selector but no cursor.

:class:`ModelClient` makes one call per :meth:`ModelClient.complete`, through the official
``openai`` SDK (streaming by default), with a per-purpose output cap (:func:`output_token_cap`),
a whole-call timeout, and transient transport errors (connection, timeout, 429, 5xx) retried a
few times with tenacity inside the same attempt. What comes out is one of:

* a :class:`Completion` (finish reason ``stop``);
* :class:`RetryableModelError` — truncated reply (``length``), any other finish reason, a
  provider error, a timeout; the queue retries and the next attempt takes the next route;
* :class:`PermanentModelError` — a missing API key variable, or (via
  :meth:`ModelClient.complete_json`) a reply that is not usable (:class:`UnusableModelOutput`);
* :class:`ModelsNotConfigured` — no route at all: consolidation is off, logging carries on.

Error messages are one line and never contain the model's reply. Every call is handed to the
optional ``recorder`` as a :class:`ModelCallRecord` (never the output).

This module imports nothing from ``worker``; the worker passes a recorder that writes its
``model_calls`` table. Routes and budgets live in :mod:`memory.llm.routes`, the reply types and
the whole / streamed reply decoding in :mod:`memory.llm.stream`; every public name of the three
modules is importable from :mod:`memory.llm`.
"""

from __future__ import annotations

from dsh_memory_worker.memory.llm.client import (
    DEEPSEEK_BASE_URL,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_S,
    DETAIL_MAX,
    NOT_CONFIGURED_MESSAGE,
    ROUTES_ENV_VAR,
    ROUTES_SETTINGS_KEY,
    ModelCallRecord,
    ModelClient,
    ModelError,
    ModelsNotConfigured,
    Outcome,
    PermanentModelError,
    Recorder,
    RetryableModelError,
    UnusableModelOutput,
    one_line,
    warn_models_not_configured,
)
from dsh_memory_worker.memory.llm.routes import (
    ADJUDICATION_MAX_TOKENS,
    NO_THINKING_EFFORTS,
    PURPOSES,
    THINKING_OUTPUT_ALLOWANCE,
    ModelRoute,
    Purpose,
    budget_for_effort,
    output_token_cap,
    parse_routes,
    select_route,
)
from dsh_memory_worker.memory.llm.stream import (
    Completion,
    Usage,
)

__all__ = [
    "ADJUDICATION_MAX_TOKENS",
    "DEEPSEEK_BASE_URL",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "DETAIL_MAX",
    "NOT_CONFIGURED_MESSAGE",
    "NO_THINKING_EFFORTS",
    "PURPOSES",
    "ROUTES_ENV_VAR",
    "ROUTES_SETTINGS_KEY",
    "THINKING_OUTPUT_ALLOWANCE",
    "Completion",
    "ModelCallRecord",
    "ModelClient",
    "ModelError",
    "ModelRoute",
    "ModelsNotConfigured",
    "Outcome",
    "PermanentModelError",
    "Purpose",
    "Recorder",
    "RetryableModelError",
    "UnusableModelOutput",
    "Usage",
    "budget_for_effort",
    "one_line",
    "output_token_cap",
    "parse_routes",
    "select_route",
    "warn_models_not_configured",
]
