"""Work units named by stable ids in the audit trail and the provenance table.

A work unit's name carries a slug of the model's title, which can quote a message the user later
withdraws or forgets; ``audit.subject`` and ``provenance.name`` kept it after the unit was gone.
They now keep ``wu-*-<digest8>-<hash8>`` (:mod:`worker.state.entry_ids`); this rewrites the rows
an older worker wrote. The old text leaves the files after the upgrade (the state database's
``after_purge``, run by :meth:`worker.state.database.StateDB.open` after an upgrade that rewrote
rows: this revision says how many with :func:`worker.state.migrate.note_rewritten_rows`; on a
database with nothing to rename, a fresh one included, no ``VACUUM FULL`` runs).

Revision ID: stable_unit_ids_1
Revises: shipping_1
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from dsh_memory_worker.worker.state.entry_ids import stable_id
from dsh_memory_worker.worker.state.migrate import note_rewritten_rows

revision: str = "stable_unit_ids_1"
down_revision: str | None = "shipping_1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    conn = op.get_bind()
    audit = sa.table("audit", sa.column("id", sa.Integer), sa.column("subject", sa.Text))
    rows = conn.execute(
        sa.select(audit.c.id, audit.c.subject).where(audit.c.subject.like("wu-%"))
    ).all()
    rewritten = 0
    for row_id, subject in rows:
        if stable_id(subject) != subject:
            rewritten += 1
            conn.execute(
                audit.update().where(audit.c.id == row_id).values(subject=stable_id(subject))
            )
    provenance = sa.table(
        "provenance",
        sa.column("shelf", sa.String),
        sa.column("name", sa.String),
        sa.column("written_at", sa.DateTime),
    )
    found = conn.execute(
        sa.select(provenance.c.shelf, provenance.c.name, provenance.c.written_at).where(
            provenance.c.name.like("wu-%")
        )
    ).all()
    newest: dict[tuple[str, str], object] = {}
    for shelf, name, written_at in found:
        new = stable_id(name)
        if new == name:
            continue
        key = (shelf, new)
        # Two old names with one id (digest and name hash alike: practically never) keep one row.
        rewritten += 1
        if key in newest:
            conn.execute(
                provenance.delete().where(provenance.c.shelf == shelf, provenance.c.name == name)
            )
            continue
        newest[key] = written_at
        conn.execute(
            provenance.update()
            .where(provenance.c.shelf == shelf, provenance.c.name == name)
            .values(name=new)
        )
    note_rewritten_rows(rewritten)


def downgrade() -> None:
    """Nothing to undo: the old names are not recoverable, and the ids are valid names there."""
