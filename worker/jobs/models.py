"""The model client of the consolidation jobs: routes from the settings, calls recorded in the
``model_calls`` table, and the attempt number that picks the route.

A job's attempt is the number of failed runs its failure row has counted for the session
(``failures.attempts``; 0 when the last run succeeded), so the first run uses the head route and
every retry — in process or through Celery — takes the next one.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import SQLAlchemyError

from dsh_memory_worker.memory.llm import (
    ModelCallRecord,
    ModelClient,
    ModelRoute,
    Recorder,
    one_line,
)
from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.settings import Settings

log = logging.getLogger(__name__)

#: Rows of ``model_calls`` kept; older ones are pruned as new calls are recorded.
MODEL_CALLS_KEPT = 1000


def routes_of(settings: Settings) -> list[ModelRoute]:
    """The configured routes in priority order, as ``memory.llm`` routes."""
    return [
        ModelRoute(
            base_url=route.base_url,
            model=route.model,
            api_key_env=route.api_key_env or "",
            reasoning_effort=route.reasoning_effort,
            api_key=route.api_key.get_secret_value() if route.api_key is not None else None,
        )
        for route in settings.model_routes
    ]


def model_call_recorder(runtime: Runtime, session_id: str | None) -> Recorder:
    """A recorder that writes each :class:`ModelCallRecord` as one settled ``model_calls`` row."""

    def record(call: ModelCallRecord) -> None:
        try:
            with runtime.state.transaction() as repos:
                row = repos.model_calls.start(
                    purpose=call.purpose,
                    route_index=call.route_index,
                    base_url=call.base_url,
                    model=call.model,
                    effort=call.effort or "",
                    session_id=session_id,
                )
                repos.model_calls.settle(
                    row,
                    call.outcome,
                    ms=call.ms,
                    input_tokens=call.input_tokens,
                    output_tokens=call.output_tokens,
                    reasoning_tokens=call.reasoning_tokens,
                    detail=call.error,
                )
                repos.model_calls.prune(keep=MODEL_CALLS_KEPT)
        except SQLAlchemyError as exc:
            log.warning("could not record a model call: %s", one_line(str(exc)))

    return record


def model_client(runtime: Runtime, session_id: str | None = None) -> ModelClient:
    """A client over the configured routes, recording into ``model_calls``."""
    settings = runtime.settings
    return ModelClient(
        routes_of(settings),
        timeout_s=settings.model_timeout_s,
        recorder=model_call_recorder(runtime, session_id),
        max_output_tokens=settings.max_output_tokens,
    )


def job_attempt(ctx: JobContext, job: str) -> int:
    """How many runs of ``job`` for this session failed since its last success."""
    with ctx.state() as repos:
        failure = repos.failures.get(job, ctx.session_id)
    return failure.attempts if failure is not None else 0
