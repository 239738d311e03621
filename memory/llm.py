"""Model routes: OpenAI-compatible chat completions (DeepSeek's API is one) for consolidation.

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
``model_calls`` table.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

import openai
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

Purpose = Literal["memory-consolidation", "memory-adjudication", "memory-cascade"]
Outcome = Literal["ok", "incomplete", "error"]

PURPOSES: Final[tuple[Purpose, ...]] = (
    "memory-consolidation",
    "memory-adjudication",
    "memory-cascade",
)

#: Where routes come from (read by ``worker/settings.py``, named here for the messages).
ROUTES_ENV_VAR: Final = "MEMORY_WORKER_MODEL_ROUTES"
ROUTES_SETTINGS_KEY: Final = "model_routes"

DEEPSEEK_BASE_URL: Final = "https://api.deepseek.com"

#: Extra output tokens granted when the model may think (any effort other than ``off``).
THINKING_OUTPUT_ALLOWANCE: Final = 4000
#: Output cap of the adjudication call before the thinking allowance.
ADJUDICATION_MAX_TOKENS: Final = 1024
DEFAULT_MAX_OUTPUT_TOKENS: Final = 2000
DEFAULT_TIMEOUT_S: Final = 120.0
#: Longest error detail kept in a record or an error message.
DETAIL_MAX: Final = 200

NOT_CONFIGURED_MESSAGE: Final = (
    "consolidation is off: no model route is configured; logging continues. To turn it on, set "
    f"{ROUTES_ENV_VAR} (or `{ROUTES_SETTINGS_KEY}` in the config file) to a JSON list such as "
    '[{"base_url": "https://api.deepseek.com", "model": "deepseek-chat", '
    '"api_key_env": "DEEPSEEK_API_KEY"}] and export that key variable'
)

_LABELS: Final[dict[str, str]] = {
    "memory-consolidation": "consolidation",
    "memory-adjudication": "adjudication",
    "memory-cascade": "cascade",
}


# --------------------------------------------------------------------------------------- errors


def one_line(text: str, cap: int = DETAIL_MAX) -> str:
    """Collapse whitespace to single spaces and cap at ``cap`` characters (ending with ``…``)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= cap else flat[: cap - 1] + "…"


class ModelError(Exception):
    """Base class; ``str(err)`` is one line and never quotes the model's reply."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class RetryableModelError(ModelError):
    """Worth another attempt (which takes the next route)."""


class PermanentModelError(ModelError):
    """Retrying cannot help: fail the task."""


class UnusableModelOutput(PermanentModelError):
    """The reply finished normally but is not what the prompt contract asks for.

    ``detail`` is the short label recorded for the call (e.g. ``unusable output``).
    """

    def __init__(self, message: str, detail: str = "unusable output") -> None:
        super().__init__(message)
        self.detail = detail


class ModelsNotConfigured(ModelError):
    """No model route: consolidation is off (logging keeps running)."""

    def __init__(self, message: str = NOT_CONFIGURED_MESSAGE) -> None:
        super().__init__(message)


_warned_not_configured = False
_warn_lock = threading.Lock()


def warn_models_not_configured(logger: logging.Logger | None = None) -> bool:
    """Log :data:`NOT_CONFIGURED_MESSAGE` as a warning once per process; True if it logged now."""
    global _warned_not_configured
    with _warn_lock:
        if _warned_not_configured:
            return False
        _warned_not_configured = True
    (logger or log).warning(NOT_CONFIGURED_MESSAGE)
    return True


# --------------------------------------------------------------------------------------- routes


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


# ------------------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    finish_reason: str
    usage: Usage
    route_index: int


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One model call, as the worker's ``model_calls`` table stores it. Never the output."""

    purpose: str
    route_index: int
    base_url: str
    model: str
    effort: str | None
    outcome: Outcome
    ms: int
    input_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    error: str | None


Recorder = Callable[[ModelCallRecord], None]


def _usage_from(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) if details is not None else None
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", None),
        output_tokens=getattr(raw, "completion_tokens", None),
        reasoning_tokens=reasoning,
    )


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def _provider_message(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        detail = ""
        if isinstance(body, Mapping):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, Mapping) else inner
            detail = str(message) if message else ""
        return f"HTTP {exc.status_code}" + (f" {detail}" if detail else "")
    return type(exc).__name__


class _Timeout(Exception):
    pass


# -------------------------------------------------------------------------------------- client


class ModelClient:
    """Chat completions over a list of routes; see the module docstring for the contract."""

    def __init__(
        self,
        routes: Sequence[ModelRoute],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        recorder: Recorder | None = None,
        env: Mapping[str, str] | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        stream: bool = True,
        transient_tries: int = 3,
        retry_wait_s: float = 1.0,
    ) -> None:
        self.routes: tuple[ModelRoute, ...] = tuple(routes)
        self.timeout_s = float(timeout_s)
        self.recorder = recorder
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.max_output_tokens = int(max_output_tokens)
        self.stream = stream
        self.transient_tries = max(1, int(transient_tries))
        self.retry_wait_s = max(0.0, float(retry_wait_s))
        self._clients: dict[int, openai.OpenAI] = {}

    @property
    def configured(self) -> bool:
        return bool(self.routes)

    # ---------------------------------------------------------------------------- public API

    def complete(self, purpose: Purpose, system: str, user: str, attempt: int) -> Completion:
        """One model call; raises :class:`RetryableModelError`, :class:`PermanentModelError` or
        :class:`ModelsNotConfigured`. The call is recorded whatever happens."""
        completion, _ = self._call(purpose, system, user, attempt, None)
        return completion

    def complete_json(
        self,
        purpose: Purpose,
        system: str,
        user: str,
        attempt: int,
        parse: Callable[[str], T],
    ) -> tuple[Completion, T]:
        """Like :meth:`complete`, then ``parse(text)``. A parser raising
        :class:`UnusableModelOutput` marks the record ``incomplete`` with its detail label, and
        the error propagates (it is permanent)."""
        completion, parsed = self._call(purpose, system, user, attempt, parse)
        assert parsed is not None
        return completion, parsed[0]

    # ------------------------------------------------------------------------------ internals

    def _call(
        self,
        purpose: Purpose,
        system: str,
        user: str,
        attempt: int,
        parse: Callable[[str], T] | None,
    ) -> tuple[Completion, tuple[T] | None]:
        if purpose not in _LABELS:
            raise PermanentModelError(f"unknown model purpose {purpose!r}")
        chosen = select_route(self.routes, attempt)
        if chosen is None:
            raise ModelsNotConfigured()
        index, route = chosen
        label = _LABELS[purpose]
        effort = route.reasoning_effort
        started = time.monotonic()
        usage = Usage()

        def record(outcome: Outcome, error: str | None) -> None:
            if self.recorder is None:
                return
            row = ModelCallRecord(
                purpose=purpose,
                route_index=index,
                base_url=route.base_url,
                model=route.model,
                effort=effort,
                outcome=outcome,
                ms=int((time.monotonic() - started) * 1000),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                error=None if error is None else one_line(error),
            )
            try:
                self.recorder(row)
            except Exception as exc:  # recording must never fail the call
                log.warning("could not record a model call: %s", one_line(str(exc)))

        key = route.api_key or (self.env.get(route.api_key_env, "") if route.api_key_env else "")
        if not key.strip():
            where = (
                f"environment variable {route.api_key_env} is not set"
                if route.api_key_env
                else "the route names no api_key_env"
            )
            message = f"{label} model route {index} ({route.label}) needs an API key: {where}"
            record("error", f"missing API key ({where})")
            raise PermanentModelError(message)

        request: dict[str, Any] = {
            "model": route.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": output_token_cap(purpose, effort, self.max_output_tokens),
        }
        extra_body: dict[str, Any] = {}
        if effort is not None:
            extra_body["reasoning_effort"] = effort
        client = self._client(index, route, key)
        try:
            text, finish, usage = self._with_retries(client, request, extra_body, started)
        except _Timeout:
            detail = f"timed out after {self.timeout_s:g}s"
            record("error", detail)
            raise RetryableModelError(f"{label} model call failed: {detail}") from None
        except openai.OpenAIError as exc:
            detail = one_line(_provider_message(exc))
            record("error", detail)
            raise RetryableModelError(f"{label} model call failed: {detail}") from None
        except (ValueError, OSError, TypeError, AttributeError, LookupError) as exc:
            # a malformed body or stream (the SDK does not validate replies) or a transport surprise
            detail = f"unreadable reply ({type(exc).__name__})"
            record("error", detail)
            raise RetryableModelError(f"{label} model call failed: {detail}") from None

        if finish != "stop":
            if finish == "length":
                record("incomplete", "length")
                raise RetryableModelError(f"{label} hit the output token cap (truncated JSON)")
            record("error" if finish == "error" else "incomplete", finish or "no finish reason")
            raise RetryableModelError(
                f"{label} model call failed: finish reason {finish or 'missing'}"
            )
        completion = Completion(text=text, finish_reason=finish, usage=usage, route_index=index)
        if parse is None:
            record("ok", None)
            return completion, None
        try:
            parsed = parse(text)
        except UnusableModelOutput as exc:
            record("incomplete", exc.detail)
            raise
        except Exception as exc:
            record("error", f"parser failed: {type(exc).__name__}")
            raise
        record("ok", None)
        return completion, (parsed,)

    def _client(self, index: int, route: ModelRoute, key: str) -> openai.OpenAI:
        client = self._clients.get(index)
        if client is None or client.api_key != key:
            client = openai.OpenAI(
                api_key=key,
                base_url=route.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # tenacity does the retrying, so it is visible and bounded
            )
            self._clients[index] = client
        return client

    def _with_retries(
        self,
        client: openai.OpenAI,
        request: dict[str, Any],
        extra_body: dict[str, Any],
        started: float,
    ) -> tuple[str, str, Usage]:
        retrying = Retrying(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(self.transient_tries),
            wait=wait_exponential(multiplier=self.retry_wait_s, max=30 * self.retry_wait_s),
            reraise=True,
        )
        for try_ in retrying:
            with try_:
                if time.monotonic() - started > self.timeout_s:
                    raise _Timeout()
                if self.stream:
                    return self._streamed(client, request, extra_body, started)
                return self._whole(client, request, extra_body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _whole(
        self, client: openai.OpenAI, request: dict[str, Any], extra_body: dict[str, Any]
    ) -> tuple[str, str, Usage]:
        reply = client.chat.completions.create(
            **request, stream=False, extra_body=extra_body or None
        )
        if not reply.choices:
            return "", "", _usage_from(reply.usage)
        choice = reply.choices[0]
        return choice.message.content or "", choice.finish_reason or "", _usage_from(reply.usage)

    def _streamed(
        self,
        client: openai.OpenAI,
        request: dict[str, Any],
        extra_body: dict[str, Any],
        started: float,
    ) -> tuple[str, str, Usage]:
        parts: list[str] = []
        finish = ""
        usage = Usage()
        stream = client.chat.completions.create(
            **request,
            stream=True,
            stream_options={"include_usage": True},
            extra_body=extra_body or None,
        )
        with stream:
            for chunk in stream:
                if time.monotonic() - started > self.timeout_s:
                    raise _Timeout()
                if chunk.usage is not None:
                    usage = _usage_from(chunk.usage)
                for choice in chunk.choices:
                    if choice.index != 0:
                        continue
                    if choice.delta is not None and choice.delta.content:
                        parts.append(choice.delta.content)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        return "".join(parts), finish, usage
