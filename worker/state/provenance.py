"""Provenance of derived entries: the route, model and prompt version that wrote each span
summary, archive and work unit of a shelf (one row per entry; a rewrite replaces the row)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select

from dsh_memory_worker.worker.state.entry_ids import stable_id
from dsh_memory_worker.worker.state.leases import ClockedRepo
from dsh_memory_worker.worker.state.models import ProvenanceRow

KINDS: tuple[str, ...] = ("summary", "archive", "work-unit")


@dataclass(frozen=True, slots=True)
class Writer:
    """Who writes an entry's text: a route label (``<base_url>/<model>``), its model and the
    prompt version (:func:`memory.consolidation.prompt_version.prompt_version`)."""

    route: str
    model: str
    prompt_version: str

    def describe(self) -> str:
        return f"{self.route} (prompts {self.prompt_version})"


@dataclass(frozen=True, slots=True)
class Provenance:
    shelf: str
    name: str
    kind: str
    session_id: str | None
    writer: Writer
    written_at: dt.datetime


class ProvenanceRepo(ClockedRepo):
    def record(
        self,
        shelf: str,
        names: Iterable[str],
        kind: str,
        writer: Writer,
        session_id: str | None = None,
    ) -> None:
        """``writer`` wrote ``names`` (of ``kind``) now; replaces earlier rows of those names."""
        if kind not in KINDS:
            raise ValueError(f"unknown provenance kind {kind!r}")
        unique = sorted({stable_id(name) for name in names})  # no model-made slug kept
        if not unique:
            return
        self._conn.execute(
            delete(ProvenanceRow).where(
                ProvenanceRow.shelf == shelf, ProvenanceRow.name.in_(unique)
            )
        )
        now = self._clock()
        self._conn.execute(
            insert(ProvenanceRow),
            [
                {
                    "shelf": shelf,
                    "name": name,
                    "kind": kind,
                    "session_id": session_id,
                    "route": writer.route,
                    "model": writer.model,
                    "prompt_version": writer.prompt_version,
                    "written_at": now,
                }
                for name in unique
            ],
        )

    def forget(self, shelf: str, names: Iterable[str]) -> None:
        """Delete the rows of ``names`` (entries about to leave the store)."""
        unique = sorted({stable_id(name) for name in names})
        if unique:
            self._conn.execute(
                delete(ProvenanceRow).where(
                    ProvenanceRow.shelf == shelf, ProvenanceRow.name.in_(unique)
                )
            )

    def get_many(self, shelf: str, names: Iterable[str]) -> dict[str, Provenance]:
        """The rows of ``names`` that exist, by name."""
        by_id = {stable_id(name): name for name in names}
        wanted = sorted(by_id)
        found: dict[str, Provenance] = {}
        for start in range(0, len(wanted), 500):
            query = select(ProvenanceRow).where(
                ProvenanceRow.shelf == shelf, ProvenanceRow.name.in_(wanted[start : start + 500])
            )
            for row in self._conn.execute(query):
                name = by_id[row.name]
                found[name] = dataclasses.replace(_of(row), name=name)
        return found

    def list(self, shelf: str, kind: str | None = None) -> list[Provenance]:
        query = select(ProvenanceRow).where(ProvenanceRow.shelf == shelf)
        if kind is not None:
            query = query.where(ProvenanceRow.kind == kind)
        return [_of(row) for row in self._conn.execute(query.order_by(ProvenanceRow.name))]


def _of(row: Any) -> Provenance:
    return Provenance(
        row.shelf,
        row.name,
        row.kind,
        row.session_id,
        Writer(row.route, row.model, row.prompt_version),
        row.written_at,
    )
