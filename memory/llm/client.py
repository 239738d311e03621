"""The model client: one call per :meth:`ModelClient.complete`, routes picked by attempt (see
:mod:`memory.llm`)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

if TYPE_CHECKING:
    import openai

from dsh_memory_worker.memory.llm.routes import (
    ModelRoute,
    Purpose,
    output_token_cap,
    select_route,
)
from dsh_memory_worker.memory.llm.stream import (
    Completion,
    ReplyTimeout,
    Usage,
    is_sdk_error,
    is_transient,
    provider_message,
    streamed_reply,
    whole_reply,
)

log = logging.getLogger(
    "dsh_memory_worker.memory.llm"
)  # the package's logger, as before it was split

T = TypeVar("T")

Outcome = Literal["ok", "incomplete", "error"]

#: Where routes come from (read by ``worker/settings.py``, named here for the messages).
ROUTES_ENV_VAR: Final = "MEMORY_WORKER_MODEL_ROUTES"
ROUTES_SETTINGS_KEY: Final = "model_routes"

DEEPSEEK_BASE_URL: Final = "https://api.deepseek.com"

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


# ------------------------------------------------------------------------------------- records


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
        """One call: route by attempt, request, transport retries, the outcome classified and
        recorded once. Long on purpose: every step shares the route, the timer and the one
        :class:`ModelCallRecord` the outcome fills, which pieces would each have to carry."""
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
        except ReplyTimeout:
            detail = f"timed out after {self.timeout_s:g}s"
            record("error", detail)
            raise RetryableModelError(f"{label} model call failed: {detail}") from None
        except Exception as exc:
            if is_sdk_error(exc):  # `openai.OpenAIError`, without importing the SDK here
                detail = one_line(provider_message(exc))
            elif isinstance(exc, (ValueError, OSError, TypeError, AttributeError, LookupError)):
                # a malformed body or stream (the SDK does not validate replies) or a transport
                # surprise
                detail = f"unreadable reply ({type(exc).__name__})"
            else:
                raise
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
            # Imported here, not at module level: `openai` costs ~23 MB and ~0.2 s, and a worker
            # without model routes (an idle follower) never builds a client (issue 16, idle RSS).
            import openai

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
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.transient_tries),
            wait=wait_exponential(multiplier=self.retry_wait_s, max=30 * self.retry_wait_s),
            reraise=True,
        )
        for try_ in retrying:
            with try_:
                if time.monotonic() - started > self.timeout_s:
                    raise ReplyTimeout()
                if self.stream:
                    return streamed_reply(client, request, extra_body, started, self.timeout_s)
                return whole_reply(client, request, extra_body)
        raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "DEEPSEEK_BASE_URL",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "DETAIL_MAX",
    "NOT_CONFIGURED_MESSAGE",
    "ROUTES_ENV_VAR",
    "ROUTES_SETTINGS_KEY",
    "ModelCallRecord",
    "ModelClient",
    "ModelError",
    "ModelsNotConfigured",
    "Outcome",
    "PermanentModelError",
    "Recorder",
    "RetryableModelError",
    "UnusableModelOutput",
    "one_line",
    "warn_models_not_configured",
]
