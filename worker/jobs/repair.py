"""Repair of derived memory: no text the user took back survives in a summary, an archive or a
work unit.

A span summary ``sum-<sid>-<from>-<to>`` that still has a ``summary`` edge to a withdrawn message
entry was written before the withdrawal. Repair

1. records its *intent* in the audit table (``repair-intent``) for every such summary, before
   touching the store — a crash anywhere after this is resumed by :func:`resume_repairs` or the
   next repair of the session, which re-derive the same work from the log and the store;
2. regenerates the summary from the remaining messages under the same name (``knowledge-update``,
   or delete + create when the store has no update) and removes its edges to withdrawn entries;
   a summary with nothing left is retracted (entry and edges);
3. retracts work units derived only from repaired summaries (entry and every statement naming
   it), unlinks units that have other sources, and writes the units the cleaned span yields;
4. regenerates every archive ``sum<L>-…`` above a repaired summary from its members' current
   text, tier by tier (an archive left without members is retracted);
5. records each step and finally ``repair-summary`` (which closes the intent), with the cause
   (marker seq, source kind) and the outcome.

Everything is get-before-write and idempotent: running it twice, or after a crash, converges.
What a resumed repair finds its work by is removed last: a work unit's entry goes before its
edges, its ``derivedFrom`` edges (how a repair finds the units of a summary) after the others;
the ``summary`` edges of archives to members that left them (how a repair climbs from a summary
through every tier of archives) go only once every archive of the pass is written; a summary
that was deleted is found again by its open intent.
``tests/faults/test_withdrawal_crash_points.py`` and ``…/test_rewrite_crash_points.py`` kill a
repair before each of its store writes.
Without a model route the text cannot be regenerated, so affected summaries and archives are
retracted instead (one warning). ``forget`` never waits for a model (``owe_archives``): an
archive above a forgotten summary that keeps other members is *owed* — the intent
``archive-owed`` is recorded, then its entry is deleted while its ``summary`` edges to the members
left stay — and :mod:`worker.jobs.owed_archives` regenerates it under the same name once a model
answers (its ``repair-archive`` outcome closes the intent). A store without delete cannot be
repaired (one warning, the failure audited).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager

from dsh_memory_worker.memory import constants as C
from dsh_memory_worker.memory.consolidation.archive import members_of, write_archive_text
from dsh_memory_worker.memory.consolidation.extraction import Extraction, extract
from dsh_memory_worker.memory.entries import (
    LOG_EDGE_POLICY,
)
from dsh_memory_worker.memory.store.base import KnowledgeEntry
from dsh_memory_worker.worker.jobs.archive_lease import hold_archive_lease
from dsh_memory_worker.worker.jobs.provenance import record_derived, record_written
from dsh_memory_worker.worker.jobs.repair_base import RepairBase, RepairReport, ask_model
from dsh_memory_worker.worker.jobs.repair_plan import SummaryRepair, rebuilt_transcript
from dsh_memory_worker.worker.jobs.storeview import (
    archive_level,
    archives_above,
    derived_units,
    edges,
    summary_members,
    unit_sources,
)
from dsh_memory_worker.worker.jobs.withdrawals import SessionLog, Withdrawn
from dsh_memory_worker.worker.jobs.work_units import (
    WorkUnitOptions,
    WorkUnitOutcome,
    extract_work_units,
)
from dsh_memory_worker.worker.observability import REPAIRS
from dsh_memory_worker.worker.state.audit import (
    ACTION_ARCHIVE,
    ACTION_ARCHIVE_OWED,
    ACTION_INTENT,
    ACTION_SUMMARY,
    ACTION_UNIT,
)

__all__ = ["RepairReport", "Repairer"]


class Repairer(RepairBase):
    """Carries out repairs for one session under its lease (see the module docstring)."""

    def repair(
        self, log_: SessionLog, repairs: list[SummaryRepair], archives: Iterable[str] = ()
    ) -> RepairReport:
        """Repair ``repairs`` and every archive above them; ``archives`` are re-derived too
        (with the archives above them) even when no member changed."""
        extra = sorted(set(archives))
        if not repairs and not extra:
            return self.report
        if not self.usable():
            for item in repairs:
                self._audit(
                    ACTION_SUMMARY,
                    "failed",
                    item.ref.name,
                    item.cause,
                    "store has no knowledge-delete",
                )
                self.report.failed.append(item.ref.name)
            return self.report
        with self.ctx.state() as repos:
            for item in repairs:
                if not item.resumed:
                    why = "points at " + ", ".join(item.dirty) if item.dirty else "resumed"
                    self._audit(
                        ACTION_INTENT, "pending", item.ref.name, item.cause, why, repos=repos
                    )
        affected = {item.ref.name for item in repairs}
        for item in repairs:
            self.ctx.heartbeat()
            self._cause[item.ref.name] = item.cause
            self.repair_summary(log_, item, affected)
        self.repair_archives(extra)
        with self.ctx.state() as repos:
            for item in repairs:
                removed = self._changed.get(item.ref.name, False)
                outcome = "retracted" if removed else "regenerated"
                edges_to = ("removed edges to " + ", ".join(item.dirty)) if item.dirty else None
                self._audit(
                    ACTION_SUMMARY, outcome, item.ref.name, item.cause, edges_to, repos=repos
                )
        return self.report

    # ---- summaries

    def repair_summary(self, log_: SessionLog, item: SummaryRepair, affected: set[str]) -> None:
        ref = item.ref
        kept = log_.kept_names(ref.from_seq, ref.to_seq)
        transcript = rebuilt_transcript(self.ctx.runtime, log_, ref)
        extraction = None
        if kept and not transcript.empty:
            extraction = self._extract(transcript.text, ref.name)
        self.repair_units(ref.name, affected)
        if extraction is None:
            self.retract_summary(ref.name)
            return
        self._rewrite(ref.name, extraction.summary, 1)
        for tail in summary_members(self.store, ref.name):
            if tail not in kept:
                self._unlink(ref.name, C.REL_SUMMARY, tail)
        for name in kept:
            self.store.statement_create(
                ref.name, C.REL_SUMMARY, name, scopes=self.scopes, embed=LOG_EDGE_POLICY.embed
            )
        units = self.write_units(ref.name, extraction)
        record_derived(
            self.ctx.runtime, self.ctx.shelf, ref.name, units, self.writer, self.ctx.session_id
        )
        self._changed[ref.name] = False
        self.report.regenerated.append(ref.name)
        REPAIRS.labels("summary", "regenerated").inc()

    def retract_summary(self, name: str) -> None:
        """Remove a span summary, its ``summary`` edges and its work units' links."""
        for row in edges(self.store, C.REL_SUMMARY, head=name):
            self._unlink(row.head, row.relation, row.tail)
        self._count_removal("summary", name, self._delete(name))
        self._changed[name] = True

    def _extract(self, transcript: str, name: str) -> Extraction | None:
        client = self.client
        if client is None:
            return None
        max_units = self.ctx.runtime.settings.max_work_units_per_run
        return ask_model(
            lambda: extract(client, transcript, 0, max_units=max_units),
            f"regenerating {name}",
            "regenerating %s failed (%s); it is removed instead",
            name,
        )

    # ---- work units

    def repair_units(self, summary: str, affected: set[str]) -> None:
        """Units derived only from affected summaries are retracted; others lose this link."""
        for unit in derived_units(self.store, summary):
            others = [s for s in unit_sources(self.store, unit) if s not in affected]
            if others:
                self._unlink(unit, C.REL_DERIVED_FROM, summary)
                self.report.unlinked.append(unit)
                REPAIRS.labels("work-unit", "unlinked").inc()
                self._audit(
                    ACTION_UNIT,
                    "unlinked",
                    unit,
                    self._cause.get(summary),
                    f"derivedFrom {summary} removed; kept for {', '.join(others)}",
                )
            else:
                self.retract_unit(unit, summary)

    def retract_unit(self, unit: str, summary: str) -> None:
        # The entry goes first, then its edges, its ``derivedFrom`` edges last: those are how
        # the next repair finds the unit, so after a crash anywhere in between it finds it
        # again and finishes. (The other order left an unreachable unit, or edge, for good.)
        named = edges(self.store, head=unit) + edges(self.store, tail=unit)
        named.sort(key=lambda row: row.relation == C.REL_DERIVED_FROM)
        removed = self._delete(unit)
        for row in named:
            self._unlink(row.head, row.relation, row.tail)
        self._audit(
            ACTION_UNIT,
            self._count_removal("work-unit", unit, removed),
            unit,
            self._cause.get(summary),
            f"derived only from {summary}",
        )

    def write_units(self, summary: str, extraction: Extraction) -> list[WorkUnitOutcome]:
        """The work units of the cleaned span, written like consolidation writes them
        (adjudicated; ``is_a`` and ``derivedFrom`` re-asserted)."""
        if self.client is None:
            return []
        outcomes = extract_work_units(
            self.store,
            self.client,
            extraction.work_units,
            summary_name=summary,
            project=self.project,
            attempt=0,
            recorded=self.ctx.runtime.now(),
            options=WorkUnitOptions.of(self.ctx.runtime.settings),
        )
        self.report.units += [o.name for o in outcomes if o.verdict != "duplicate"]
        for outcome in outcomes:
            if outcome.stored:
                self.report.written.append(outcome.name)
                self._audit(
                    ACTION_UNIT,
                    "re-extracted",
                    outcome.name,
                    self._cause.get(summary),
                    f"from the cleaned {summary} ({outcome.verdict})",
                )
        return outcomes

    # ---- archives

    def forget_summary(self, name: str) -> None:
        """Count ``name`` as leaving every archive above it (it is deleted afterwards)."""
        self._changed[name] = True

    def repair_archives(self, extra: Iterable[str] = ()) -> None:
        """Regenerate (or retract) every archive above a changed summary (and the ``extra``
        archives), lowest tier first.

        The ``summary`` edges from an archive to the members that left it are what lead a
        resumed repair from a changed summary up through every tier, so none of them is removed
        until every archive of the pass is written: a crash before that leaves the whole path,
        and the next repair walks it again.

        Archives are shared by the sessions of a project, so this holds the project's archive
        lease: two sessions repaired at once never interleave their rewrites of one archive."""
        todo: dict[str, int] = {}
        for name in self._changed:
            self._queue_parents(name, todo)
        for name in extra:
            level = archive_level(name)
            if level is not None:
                todo[name] = level
        if not todo:
            return
        with self._archive_lease():
            while todo:
                name = min(todo, key=lambda n: (todo[n], n))
                level = todo.pop(name)
                self.ctx.heartbeat()
                self._repair_archive(name, level)
                self._queue_parents(name, todo)
            for head, tail in self._leaving:
                self._unlink(head, C.REL_SUMMARY, tail)
            self._leaving.clear()

    def _archive_lease(self) -> AbstractContextManager[None]:
        wait_s = self.ctx.runtime.settings.lease_ttl_s
        return hold_archive_lease(self.ctx, self.project, wait_s=wait_s)

    def _queue_parents(self, name: str, todo: dict[str, int]) -> None:
        for parent in archives_above(self.store, name):
            level = archive_level(parent)
            if level is not None:
                todo[parent] = level
                self._cause.setdefault(parent, self._cause.get(name))

    def _repair_archive(self, name: str, level: int) -> None:
        # Its ``summary`` edges to members that left go at the end of the pass (_leaving).
        present: list[KnowledgeEntry] = []
        gone: list[str] = []
        owed: list[str] = []
        for member in summary_members(self.store, name):
            entry = self.store.knowledge_get(member)
            if self._changed.get(member) is True:
                gone.append(member)
            elif member in self._owed:
                owed.append(member)
            elif entry is None:
                gone.append(member)
            else:
                present.append(entry)
        cause = self._cause.get(name)
        if self.owe_archives and (present or owed):
            self._owe_archive(name, gone, cause)
            return
        present.sort(key=lambda e: (e.created_at, e.name))
        text = self._archive_text(level, present) if present else None
        if text is None:
            removed = self._delete(name)
            self._leaving += [
                (row.head, row.tail) for row in edges(self.store, C.REL_SUMMARY, head=name)
            ]
            self._changed[name] = True
            self._audit(
                ACTION_ARCHIVE,
                self._count_removal("archive", name, removed),
                name,
                cause,
                "no members left" if not present else "could not be regenerated",
            )
            return
        self._rewrite(name, text, level)
        self._leaving += [(name, member) for member in gone]
        record_written(self.ctx.runtime, self.ctx.shelf, "archive", [name], self.writer)
        self._changed[name] = False
        self.report.regenerated.append(name)
        REPAIRS.labels("archive", "regenerated").inc()
        self._audit(ACTION_ARCHIVE, "regenerated", name, cause, f"from {len(present)} members")

    def _owe_archive(self, name: str, gone: list[str], cause: Withdrawn | None) -> None:
        """Drop ``name``'s text now and owe its regeneration: the intent first, then the entry;
        its edges to the members left stay (what it is regenerated from), those to members that
        left go at the end of the pass."""
        self._audit(ACTION_ARCHIVE_OWED, "pending", name, cause, "regenerated when a model answers")
        self._delete(name)
        self._leaving += [(name, member) for member in gone]
        self._owed.add(name)
        self.report.owed.append(name)

    def _archive_text(self, level: int, members: list[KnowledgeEntry]) -> str | None:
        client = self.client
        if client is None:
            return None
        archive = ask_model(
            lambda: write_archive_text(client, level, members_of(members), 0),
            "regenerating an archive",
            "regenerating a tier-%d archive failed (%s); it is removed",
            level,
        )
        return None if archive is None else archive.markdown
