"""What one session's ``reconsolidate --replace`` or ``relog`` run changes, and what it costs:
:class:`RewritePlan` (its items, model calls, the bound on them, input tokens, and its cut to a
call budget), built by :func:`worker.jobs.rewrite.plan_rewrite`."""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh_memory_worker.memory.entries import session_name
from dsh_memory_worker.worker.jobs.relog import Renderings
from dsh_memory_worker.worker.jobs.storeview import SpanSummaryRef


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One entry a run changes: ``kind`` is message / session-node / summary / archive /
    work-unit; ``action`` is re-render / rewrite / re-derive / re-extract."""

    entry: str
    kind: str
    action: str
    why: str


@dataclass(slots=True)
class SummaryStep:
    """One summary to regenerate, what it costs, and the archives it makes re-derived."""

    ref: SpanSummaryRef
    why: str
    calls: int
    tokens: int
    units: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)


@dataclass(slots=True)
class RewritePlan:
    session_id: str
    mode: str
    renderings: Renderings = field(default_factory=Renderings)
    steps: list[SummaryStep] = field(default_factory=list)
    #: archives re-derived although no member summary changes (a different writer wrote them)
    stale_archives: list[str] = field(default_factory=list)
    archive_tokens: dict[str, int] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    #: steps left out by :meth:`within`, and the summaries among them
    deferred: int = 0
    deferred_refs: list[SpanSummaryRef] = field(default_factory=list)
    #: adjudication calls a regenerated summary may add (0 with ``adjudicate`` off)
    judge_bound: int = 0
    #: no model route: the steps are not carried out, they are recorded as owed
    waiting: bool = False
    #: summaries an earlier model-less relog left owed
    owed: set[str] = field(default_factory=set)

    @property
    def archives(self) -> list[str]:
        seen: dict[str, None] = {}
        for step in self.steps:
            seen.update(dict.fromkeys(step.archives))
        seen.update(dict.fromkeys(self.stale_archives))
        return list(seen)

    @property
    def units(self) -> list[str]:
        return list(dict.fromkeys(u for step in self.steps for u in step.units))

    @property
    def calls(self) -> int:
        """The calls the run makes whatever the model answers (summaries and archives)."""
        if self.waiting:
            return 0
        return sum(step.calls for step in self.steps) + len(self.archives)

    @property
    def max_calls(self) -> int:
        """:attr:`calls` plus the most adjudication calls the new work units may cost."""
        if self.waiting:
            return 0
        return self.calls + sum(step.calls for step in self.steps) * self.judge_bound

    @property
    def input_tokens(self) -> int:
        return sum(step.tokens for step in self.steps) + sum(
            self.archive_tokens.get(a, 0) for a in self.archives
        )

    @property
    def empty(self) -> bool:
        return not (
            self.renderings.messages or self.renderings.node or self.steps or self.stale_archives
        )

    def items(self) -> list[PlanItem]:
        out = [
            PlanItem(name, "message", "re-render", "text differs under the content policy")
            for name in self.renderings.messages
        ]
        if self.renderings.node is not None:
            out.append(
                PlanItem(
                    session_name(self.session_id),
                    "session-node",
                    "re-render",
                    "text differs under the content policy",
                )
            )
        for step in self.steps:
            out.append(PlanItem(step.ref.name, "summary", "rewrite", step.why))
        out += [
            PlanItem(u, "work-unit", "re-extract", "derived from a rewritten summary")
            for u in self.units
        ]
        stale = set(self.stale_archives)
        out += [
            PlanItem(
                a,
                "archive",
                "re-derive",
                "written by a different writer" if a in stale else "above a rewritten summary",
            )
            for a in self.archives
        ]
        return out

    def within(self, budget: int) -> RewritePlan:
        """The longest prefix of the summary steps (then the stale archives) whose calls fit in
        ``budget``; re-rendering messages costs no call and is always kept."""
        cut = RewritePlan(
            self.session_id,
            self.mode,
            self.renderings,
            archive_tokens=self.archive_tokens,
            pending=self.pending,
            judge_bound=self.judge_bound,
            waiting=self.waiting,
            owed=self.owed,
        )
        for step in self.steps:
            if self._max_calls_of([*cut.steps, step]) > budget:
                break
            cut.steps.append(step)
        if len(cut.steps) == len(self.steps):
            for archive in self.stale_archives:
                if self._max_calls_of(cut.steps, [*cut.stale_archives, archive]) > budget:
                    break
                cut.stale_archives.append(archive)
        cut.deferred_refs = [step.ref for step in self.steps[len(cut.steps) :]]
        cut.deferred = len(cut.deferred_refs) + len(self.stale_archives) - len(cut.stale_archives)
        return cut

    def _max_calls_of(
        self, steps: list[SummaryStep], stale_archives: list[str] | None = None
    ) -> int:
        """:attr:`max_calls` of this plan cut to ``steps`` and ``stale_archives``."""
        trial = RewritePlan(
            self.session_id,
            self.mode,
            steps=steps,
            stale_archives=stale_archives or [],
            judge_bound=self.judge_bound,
            waiting=self.waiting,
        )
        return trial.max_calls

    def after(self, rederived: set[str]) -> RewritePlan:
        """This plan as it is when it runs after the archives ``rederived`` were re-derived by
        an earlier session of the same command: they are current then, so they are no longer
        stale (an archive above a summary this plan rewrites is re-derived again all the
        same)."""
        self.stale_archives = [a for a in self.stale_archives if a not in rederived]
        return self


__all__ = ["PlanItem", "RewritePlan", "SummaryStep"]
