"""Initial state schema: sessions, progress, leases, retractions, audit, failures, model_calls.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_ZERO = sa.text("0")
_FALSE = sa.text("false")


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("generation", sa.Integer(), server_default=_ZERO, nullable=False),
        sa.Column("project", sa.Text(), server_default="", nullable=False),
        sa.Column("header", sa.JSON(), nullable=False),
        sa.Column("inherited_cut", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("scan_offset", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("scan_seq", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("checkpoints", sa.JSON(), nullable=False),
        sa.Column("durable_end_seq", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("last_turn_end_seq", sa.BigInteger(), nullable=True),
        sa.Column("last_title_seq", sa.BigInteger(), nullable=True),
        sa.Column("title_text", sa.Text(), nullable=True),
        sa.Column("last_activity_at", _TS, nullable=True),
        sa.Column("closed_at", _TS, nullable=True),
        sa.Column("forgotten", sa.Boolean(), server_default=_FALSE, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_sessions")),
    )
    op.create_table(
        "progress",
        sa.Column("shelf", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("last_logged_seq", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("last_consolidated_seq", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("last_belong_to_index", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("has_session_node", sa.Boolean(), server_default=_FALSE, nullable=False),
        sa.Column("pending_tokens", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("last_check_turn", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("version", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("shelf", "session_id", name=op.f("pk_progress")),
    )
    op.create_table(
        "leases",
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("owner", sa.String(300), nullable=True),
        sa.Column("token", sa.BigInteger(), server_default=_ZERO, nullable=False),
        sa.Column("acquired_at", _TS, nullable=True),
        sa.Column("expires_at", _TS, nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_leases")),
    )
    op.create_table(
        "retractions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("shelf", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(200), nullable=False),
        sa.Column("ordinal", sa.BigInteger(), nullable=False),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("marker_seq", sa.BigInteger(), nullable=False),
        sa.Column("source_kind", sa.String(200), nullable=False),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_retractions")),
    )
    op.create_index(
        op.f("ix_retractions_session_id_ordinal"), "retractions", ["session_id", "ordinal"]
    )
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("action", sa.String(80), nullable=False),
        sa.Column("shelf", sa.String(200), nullable=True),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("cause_marker_seq", sa.BigInteger(), nullable=True),
        sa.Column("source_kind", sa.String(200), nullable=True),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit")),
    )
    op.create_index(op.f("ix_audit_session_id"), "audit", ["session_id"])
    op.create_table(
        "failures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task", sa.String(100), nullable=False),
        sa.Column("session_id", sa.String(300), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=_ZERO, nullable=False),
        sa.Column("last_error", sa.Text(), server_default="", nullable=False),
        sa.Column("permanent", sa.Boolean(), server_default=_FALSE, nullable=False),
        sa.Column("first_at", _TS, nullable=False),
        sa.Column("last_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_failures")),
        sa.UniqueConstraint("task", "session_id", name=op.f("uq_failures_task_session_id")),
    )
    op.create_table(
        "model_calls",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", _TS, nullable=False),
        sa.Column("purpose", sa.String(80), nullable=False),
        sa.Column("route_index", sa.Integer(), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("effort", sa.String(40), server_default="", nullable=False),
        sa.Column("outcome", sa.String(40), server_default="pending", nullable=False),
        sa.Column("ms", sa.Integer(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("reasoning_tokens", sa.Integer(), nullable=True),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("detail", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_calls")),
    )
    op.create_index(op.f("ix_model_calls_at"), "model_calls", ["at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_model_calls_at"), table_name="model_calls")
    op.drop_table("model_calls")
    op.drop_table("failures")
    op.drop_index(op.f("ix_audit_session_id"), table_name="audit")
    op.drop_table("audit")
    op.drop_index(op.f("ix_retractions_session_id_ordinal"), table_name="retractions")
    op.drop_table("retractions")
    op.drop_table("leases")
    op.drop_table("progress")
    op.drop_table("sessions")
