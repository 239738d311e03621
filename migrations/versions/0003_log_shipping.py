"""Log shipping: shipped log generations and their byte segments (``worker.shipping``).

Revision ID: shipping_1
Revises: rewrite_1
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "shipping_1"
down_revision: str | None = "rewrite_1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "shipped_logs",
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("log_name", sa.Text(), nullable=False),
        sa.Column("header", sa.JSON(), nullable=False),
        sa.Column("header_sha256", sa.String(64), nullable=False),
        sa.Column("shipped_end", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "generation", name=op.f("pk_shipped_logs")),
    )
    op.create_table(
        "log_segments",
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("byte_offset", sa.BigInteger(), nullable=False),
        sa.Column("length", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("shipped_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(
            "session_id", "generation", "byte_offset", name=op.f("pk_log_segments")
        ),
    )


def downgrade() -> None:
    op.drop_table("log_segments")
    op.drop_table("shipped_logs")
