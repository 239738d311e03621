"""Chat-completion replies: the result types and the decoding of a whole or a streamed reply (the
transport half of :mod:`memory.llm`, which re-exports the public names here).

:func:`whole_reply` and :func:`streamed_reply` return ``(text, finish reason, usage)`` of choice 0;
a stream is read to its end (usage arrives in the last chunk) and abandoned with
:class:`ReplyTimeout` once the call has run past its timeout.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai


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


def usage_from(raw: Any) -> Usage:
    """Token counts from the SDK's usage object (``None`` → all unknown)."""
    if raw is None:
        return Usage()
    details = getattr(raw, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) if details is not None else None
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", None),
        output_tokens=getattr(raw, "completion_tokens", None),
        reasoning_tokens=reasoning,
    )


def _sdk() -> Any:
    """The ``openai`` module when it is loaded, else ``None``. An SDK error can only exist once a
    client was built, which imports it (:meth:`memory.llm.client.ModelClient._client`); looking
    it up here keeps ``openai`` (~23 MB) out of a worker that never calls a model."""
    return sys.modules.get("openai")


def is_sdk_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an ``openai`` SDK error."""
    openai = _sdk()
    return openai is not None and isinstance(exc, openai.OpenAIError)


def is_transient(exc: BaseException) -> bool:
    """A transport error worth retrying in the same attempt (connection, timeout, 408/409/429,
    5xx)."""
    openai = _sdk()
    if openai is None:
        return False
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


#: What an error's ``type`` / ``code`` may be to be kept: a short identifier, never prose.
_ERROR_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,63}")


def provider_message(exc: BaseException) -> str:
    """A short, fixed-form description of an SDK error: ``HTTP <status>`` and the provider's
    error ``type`` / ``code`` when they are identifiers (``HTTP 400 invalid_request_error``).

    Never the provider's message: content-filter and invalid-request errors often quote the
    request, and this text is stored (``model_calls.detail``, ``failures.last_error``, audit
    details) and logged, where withdrawn or forgotten text must not survive (docs/guarantees)."""
    openai = _sdk()
    if openai is None:
        return type(exc).__name__
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        inner = body.get("error", body) if isinstance(body, Mapping) else None
        labels: list[str] = []
        if isinstance(inner, Mapping):
            for key in ("type", "code"):
                value = inner.get(key)
                label = str(value) if isinstance(value, str | int) else ""
                if _ERROR_LABEL.fullmatch(label) and label not in labels:
                    labels.append(label)
        return f"HTTP {exc.status_code}" + (f" {'/'.join(labels)}" if labels else "")
    return type(exc).__name__


class ReplyTimeout(Exception):
    """The whole call (all tries, the stream included) ran past its timeout."""


def whole_reply(
    client: openai.OpenAI, request: dict[str, Any], extra_body: dict[str, Any]
) -> tuple[str, str, Usage]:
    """One non-streaming call: choice 0's text, its finish reason and the usage."""
    reply = client.chat.completions.create(**request, stream=False, extra_body=extra_body or None)
    if not reply.choices:
        return "", "", usage_from(reply.usage)
    choice = reply.choices[0]
    return choice.message.content or "", choice.finish_reason or "", usage_from(reply.usage)


def streamed_reply(
    client: openai.OpenAI,
    request: dict[str, Any],
    extra_body: dict[str, Any],
    started: float,
    timeout_s: float,
) -> tuple[str, str, Usage]:
    """One streaming call read to its end; :class:`ReplyTimeout` once ``timeout_s`` has passed
    since ``started`` (``time.monotonic()``)."""
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
            if time.monotonic() - started > timeout_s:
                raise ReplyTimeout()
            if chunk.usage is not None:
                usage = usage_from(chunk.usage)
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                if choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
                if choice.finish_reason:
                    finish = choice.finish_reason
    return "".join(parts), finish, usage


__all__ = [
    "Completion",
    "ReplyTimeout",
    "Usage",
    "is_transient",
    "provider_message",
    "streamed_reply",
    "usage_from",
    "whole_reply",
]
