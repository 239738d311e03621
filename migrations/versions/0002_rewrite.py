"""Provenance of derived entries: which route, model and prompt version wrote each span summary,
archive and work unit (read by ``reconsolidate --replace`` / ``--stale``).

Revision ID: rewrite_1
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "rewrite_1"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "provenance",
        sa.Column("shelf", sa.String(200), nullable=False),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("route", sa.Text(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt_version", sa.String(40), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("shelf", "name", name=op.f("pk_provenance")),
    )


def downgrade() -> None:
    op.drop_table("provenance")
