"""The one-line answers of ``reconsolidate --replace`` and ``relog`` for a session: what a dry
run would do (:func:`plan_line`) and what a run did (:func:`outcome_line`)."""

from __future__ import annotations

from dsh_memory_worker.worker.jobs.rewrite import RewriteOutcome
from dsh_memory_worker.worker.jobs.rewrite_plan import RewritePlan

#: what a run without a model route tells the user to do about what waits
WAIT_HINT = "set MEMORY_WORKER_MODEL_ROUTES, then rerun relog"


def _n(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _derived(summaries: int, archives: int, units: int) -> str:
    return (
        f"{_n(summaries, 'summary', 'summaries')}, {_n(archives, 'archive')}, "
        f"{_n(units, 'work unit')}"
    )


def calls_text(calls: int, bound: int) -> str:
    """``2 model calls``, or ``2 model calls, at most 8 with adjudication`` when work-unit
    adjudication may add calls (how many depends on the model's answers)."""
    if bound > calls:
        return f"{_n(calls, 'model call')}, at most {bound} with adjudication"
    return _n(calls, "model call")


def outcome_line(outcome: RewriteOutcome, mode: str) -> str:
    """The honest one-line result of a session's run."""
    waiting = any(outcome.waiting)
    if not outcome.changed and not outcome.deferred and not outcome.failed and not waiting:
        return "already current: nothing to do"
    parts = []
    if mode == "relog":
        parts.append(
            f"re-rendered {_n(len(outcome.messages), 'message')}, "
            f"{_n(outcome.session_nodes, 'session node')}"
        )
    if outcome.no_model:
        if waiting:
            parts.append(f"{_derived(*outcome.waiting)} wait for a model route ({WAIT_HINT})")
    elif outcome.summaries or outcome.archives or outcome.units or not outcome.deferred:
        done = _derived(len(outcome.summaries), len(outcome.archives), len(outcome.units))
        parts.append(f"rewrote {done}")
    if outcome.removed:
        parts.append(
            f"removed {_n(len(outcome.removed), 'entry', 'entries')} the new pass no "
            "longer produces"
        )
    if outcome.failed:
        parts.append(f"failed: {', '.join(outcome.failed)}")
    if outcome.deferred:
        parts.append(
            f"stopped at the --max-calls budget, {outcome.deferred} left (rerun to continue)"
        )
    return "; ".join(parts)


def plan_line(plan: RewritePlan) -> str:
    """The dry-run line of a session's plan."""
    if plan.empty:
        return "already current: nothing to do"
    parts = []
    if plan.mode == "relog":
        parts.append(
            f"would re-render {_n(len(plan.renderings.messages), 'message')}, "
            f"{_n(int(plan.renderings.node is not None), 'session node')}"
        )
    if plan.waiting:
        if plan.steps:
            parts.append(
                f"{_derived(len(plan.steps), len(plan.archives), len(plan.units))} "
                f"would wait for a model route ({WAIT_HINT})"
            )
        return "; ".join(parts) + " — 0 model calls"
    summaries = _n(len(plan.steps), "summary", "summaries")
    parts.append(
        f"would rewrite {summaries}, {_n(len(plan.archives), 'archive')}, re-extract "
        f"{_n(len(plan.units), 'work unit')} — {calls_text(plan.calls, plan.max_calls)}"
        f", ~{plan.input_tokens} input tokens"
    )
    return "; ".join(parts)
