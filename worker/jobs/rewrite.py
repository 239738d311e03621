"""Rewriting derived memory on purpose: ``reconsolidate --replace`` and ``relog``, per session.

:func:`plan_rewrite` decides (reading only) what one session's run changes:

* ``replace`` — every span summary of the session whose recorded writer (provenance: route,
  model, prompt version) is not the current one, or that has a work unit whose writer is not,
  or whose repair is unfinished (all of them with ``force``); every archive above those, up the
  tiers; and archives above the session's summaries that a different writer wrote even though
  none of their members changes;
* ``relog`` — every ``msg-*`` entry and the session node whose text under today's content policy
  differs from the store's (:mod:`worker.jobs.relog`), then the summaries with a ``summary``
  edge to a re-rendered message and the archives above them.

Each plan counts the model calls it makes: exactly one per regenerated summary and one per
re-derived archive (:attr:`RewritePlan.calls`), and, when ``adjudicate`` is on, at most
``max_work_units_per_run`` adjudication calls per regenerated summary on top — how many there
are depends on the model's answers (how many units it extracts, whether a similar memory exists),
so the plan states the bound (:attr:`RewritePlan.max_calls`). It also estimates the input tokens
they send (characters / 4 of the prompts built from today's text; an archive's estimate uses its
members' current text). :meth:`RewritePlan.within` cuts a plan to a call budget at a summary
boundary (``--max-calls``), counting the bound, so the run never exceeds the budget: what is left
stays stale and the next run picks it up.

Without a model route (or with ``consolidation_enabled`` off) a ``relog`` plan still re-renders
the messages and the session node, which need no model; the summaries it would rewrite *wait*
(:attr:`RewritePlan.waiting`): each is recorded as owed (audit ``relog-owed``), so the next
``relog`` or ``reconsolidate --replace`` with a model route rewrites it, although its messages
are current by then.

:func:`execute_rewrite` carries a plan out under the session's lease through the repair path a
withdrawal uses (:class:`worker.jobs.repair.Repairer`): the summary keeps its name and gets its new
text in place, its ``summary`` edges are re-asserted and edges to messages it no longer covers
removed; the work units derived from it are re-extracted — units the new pass does not produce
again are removed (entry and every edge naming it) unless another summary still derives them
(then only the ``derivedFrom`` edge goes); the archives above are re-derived from their members'
current text. Relog first records a repair intent for each summary it will rewrite, so a crash or
a spent budget leaves them owed (``resume_repairs``, the next ``relog``) instead of lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from dsh_memory_worker.memory.consolidation.archive import archive_prompt, members_of
from dsh_memory_worker.memory.consolidation.extraction import SYSTEM_PROMPT, extraction_prompt
from dsh_memory_worker.memory.content.caps import estimate_tokens
from dsh_memory_worker.memory.entries import MESSAGE_POLICY, SESSION_POLICY, session_name
from dsh_memory_worker.memory.llm import ModelCallRecord
from dsh_memory_worker.memory.store.base import KnowledgeEntry, MemoryStore
from dsh_memory_worker.worker.jobs.context import JobContext
from dsh_memory_worker.worker.jobs.provenance import is_current
from dsh_memory_worker.worker.jobs.relog import rewrite_in_place, stale_renderings
from dsh_memory_worker.worker.jobs.repair import Repairer, RepairReport
from dsh_memory_worker.worker.jobs.repair_plan import (
    SummaryRepair,
    model_client,
    rebuilt_transcript,
)
from dsh_memory_worker.worker.jobs.rewrite_plan import RewritePlan, SummaryStep
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.jobs.storeview import (
    SpanSummaryRef,
    archive_level,
    archives_above,
    derived_units,
    span_summaries,
    summary_members,
)
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog
from dsh_memory_worker.worker.state.audit import ACTION_INTENT, ACTION_RELOG_OWED
from dsh_memory_worker.worker.state.provenance import Provenance, Writer

Mode = Literal["replace", "relog"]
ProvenanceLookup = Callable[[list[str]], dict[str, Provenance]]
MODES: tuple[str, ...] = ("replace", "relog")


# ------------------------------------------------------------------------------------ planning


def plan_rewrite(
    runtime: Runtime,
    store: MemoryStore,
    log_: SessionLog,
    *,
    mode: str,
    writer: Writer | None,
    provenance: ProvenanceLookup,
    pending: Iterable[str] = (),
    owed: Iterable[str] = (),
    logged_to: int,
    force: bool = False,
) -> RewritePlan:
    """What a ``mode`` run changes for one session (nothing is written); see the module
    docstring. ``provenance(names)`` answers the rows of those entries that have one; no
    ``writer`` (no model route) makes a ``relog`` plan whose summaries wait. ``owed`` are the
    summaries an earlier model-less relog left owed."""
    settings = runtime.settings
    plan = RewritePlan(
        log_.session_id,
        mode,
        pending=set(pending),
        owed=set(owed),
        waiting=writer is None,
        judge_bound=settings.max_work_units_per_run if settings.adjudicate else 0,
    )
    refs = span_summaries(store, log_.session_id)
    why: dict[str, str] = {}
    if mode == "relog":
        plan.renderings = stale_renderings(runtime, store, log_, logged_to)
        changed = set(plan.renderings.messages)
        for ref in refs:
            if changed.intersection(summary_members(store, ref.name)):
                why[ref.name] = "covers a re-rendered message"
    else:
        units = {ref.name: derived_units(store, ref.name) for ref in refs}
        rows = provenance([*units, *(u for found in units.values() for u in found)])
        for ref in refs:
            found = rows.get(ref.name)
            if force:
                why[ref.name] = "--force"
            elif found is None:
                why[ref.name] = "no recorded writer"
            elif writer is None or not is_current(found, writer):
                why[ref.name] = f"written by {found.writer.describe()}"
            elif any(not is_current(rows.get(u), writer) for u in units[ref.name]):
                why[ref.name] = "a work unit derived from it has a different writer"
    for ref in refs:
        if ref.name in plan.pending and ref.name not in why:
            why[ref.name] = "an unfinished repair"
        elif ref.name in plan.owed and ref.name not in why:
            why[ref.name] = "owed by a relog that had no model route"
    seen: set[str] = set()
    for ref in refs:
        if ref.name not in why:
            continue
        step = _summary_step(runtime, store, log_, ref, why[ref.name])
        step.archives = [a for a in _archives_over(store, [ref.name]) if a not in seen]
        seen.update(step.archives)
        plan.steps.append(step)
    if mode == "replace" and writer is not None:
        above = _archives_over(store, [r.name for r in refs])
        rows = provenance(above)
        for archive in above:
            if archive not in seen and not is_current(rows.get(archive), writer):
                plan.stale_archives.append(archive)
    for archive in plan.archives:
        plan.archive_tokens[archive] = _archive_tokens(store, archive)
    return plan


def _summary_step(
    runtime: Runtime, store: MemoryStore, log_: SessionLog, ref: SpanSummaryRef, why: str
) -> SummaryStep:
    kept = log_.kept_names(ref.from_seq, ref.to_seq)
    transcript = rebuilt_transcript(runtime, log_, ref)
    calls = tokens = 0
    if kept and not transcript.empty:
        calls = 1
        prompt = extraction_prompt(transcript.text, runtime.settings.max_work_units_per_run)
        tokens = estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(prompt)
    return SummaryStep(ref, why, calls, tokens, units=derived_units(store, ref.name))


def _archives_over(store: MemoryStore, names: list[str]) -> list[str]:
    """Every archive above ``names``, up the tiers, lowest tier first."""
    found: dict[str, int] = {}
    todo = list(names)
    while todo:
        for parent in archives_above(store, todo.pop()):
            level = archive_level(parent)
            if level is not None and parent not in found:
                found[parent] = level
                todo.append(parent)
    return sorted(found, key=lambda n: (found[n], n))


def _archive_tokens(store: MemoryStore, archive: str) -> int:
    level = archive_level(archive) or 2
    members: list[KnowledgeEntry] = []
    for name in summary_members(store, archive):
        entry = store.knowledge_get(name)
        if entry is not None:
            members.append(entry)
    members.sort(key=lambda e: (e.created_at, e.name))
    return estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(
        archive_prompt(level, members_of(members))
    )


# ----------------------------------------------------------------------------------- carrying out


@dataclass(slots=True)
class RewriteOutcome:
    """What one session's run did (the counts of the result line)."""

    session_id: str
    messages: list[str] = field(default_factory=list)
    session_nodes: int = 0
    summaries: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    deferred: int = 0
    #: model calls made (each recorded one, whatever its outcome)
    calls: int = 0
    #: no model route: only what needs none was done; (summaries, archives, work units) whose
    #: rewrite waits for one
    no_model: bool = False
    waiting: tuple[int, int, int] = (0, 0, 0)

    @property
    def changed(self) -> bool:
        return bool(
            self.messages
            or self.session_nodes
            or self.summaries
            or self.archives
            or self.units
            or self.removed
        )


def execute_rewrite(ctx: JobContext, log_: SessionLog, plan: RewritePlan) -> RewriteOutcome:
    """Carry ``plan`` out for ``ctx``'s session (the caller holds its lease)."""
    store = ctx.store()
    outcome = RewriteOutcome(ctx.session_id, deferred=plan.deferred)
    summaries = [step.ref for step in plan.steps]
    if plan.waiting:
        return _rerender_only(ctx, log_, plan, outcome)
    # Owed before any text changes, so a crash resumes them; relog also owes the summaries a
    # budget defers (their messages are re-rendered now, so only the intent remembers them).
    owed = summaries + (plan.deferred_refs if plan.mode == "relog" else [])
    with ctx.state() as repos:
        for ref in owed:
            if ref.name not in plan.pending:
                repos.audit.record(
                    ACTION_INTENT,
                    "pending",
                    shelf=ctx.shelf,
                    session_id=ctx.session_id,
                    subject=ref.name,
                    detail=f"{plan.mode}: {_why(plan, ref.name)}",
                )
    _rerender(ctx, store, log_, plan, outcome)
    if not summaries and not plan.stale_archives:
        return outcome
    client = model_client(ctx.runtime, ctx.session_id)
    if client is not None:
        record = client.recorder

        def counted(call: ModelCallRecord) -> None:
            outcome.calls += 1
            if record is not None:
                record(call)

        client.recorder = counted
    repairer = Repairer(ctx, store, log_.project, client)
    repairs = [SummaryRepair(ref, (), None, resumed=True) for ref in summaries]
    report = repairer.repair(log_, repairs, archives=plan.stale_archives)
    _count(outcome, report)
    return outcome


def _rerender(
    ctx: JobContext,
    store: MemoryStore,
    log_: SessionLog,
    plan: RewritePlan,
    outcome: RewriteOutcome,
) -> None:
    """Write the re-rendered messages and session node (no model needed)."""
    for name, (_, text) in plan.renderings.messages.items():
        ctx.heartbeat()
        if rewrite_in_place(
            store, name, text, log_.project, MESSAGE_POLICY.tags, MESSAGE_POLICY.embed
        ):
            outcome.messages.append(name)
    if plan.renderings.node is not None and rewrite_in_place(
        store,
        session_name(ctx.session_id),
        plan.renderings.node,
        log_.project,
        SESSION_POLICY.tags,
        SESSION_POLICY.embed,
    ):
        outcome.session_nodes = 1


def _rerender_only(
    ctx: JobContext, log_: SessionLog, plan: RewritePlan, outcome: RewriteOutcome
) -> RewriteOutcome:
    """No model route: record the summaries as owed (before their messages change, so a crash
    cannot lose them), then re-render what needs no model."""
    with ctx.state() as repos:
        for step in plan.steps:
            if step.ref.name not in plan.owed:
                repos.audit.record(
                    ACTION_RELOG_OWED,
                    "pending",
                    shelf=ctx.shelf,
                    session_id=ctx.session_id,
                    subject=step.ref.name,
                    detail=f"{plan.mode}: {step.why}",
                )
    _rerender(ctx, ctx.store(), log_, plan, outcome)
    outcome.no_model = True
    outcome.waiting = (len(plan.steps), len(plan.archives), len(plan.units))
    return outcome


def _why(plan: RewritePlan, name: str) -> str:
    return next((s.why for s in plan.steps if s.ref.name == name), "")


def _count(outcome: RewriteOutcome, report: RepairReport) -> None:
    for name in report.regenerated:
        (outcome.archives if archive_level(name) is not None else outcome.summaries).append(name)
    outcome.units = list(report.units)
    outcome.removed = [n for n in report.retracted if n not in outcome.summaries]
    outcome.failed = list(report.failed)
