"""The time of a session's newest message, from its log (``sessions.last_message_at``).

Revision ID: last_message_1
Revises: stable_unit_ids_1
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "last_message_1"
down_revision: str | None = "stable_unit_ids_1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "sessions", sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("last_message_at")
