"""Dialect helpers shared by the repositories (SQLite and PostgreSQL behave the same)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, delete
from sqlalchemy.dialects import postgresql, sqlite


def insert_ignore(
    conn: Connection, table: Table, values: dict[str, Any], conflict: Sequence[str] = ()
) -> bool:
    """``INSERT … ON CONFLICT (conflict or the primary key) DO NOTHING``; True when inserted."""
    dialect = conn.dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    target = list(conflict) or [column.name for column in table.primary_key.columns]
    statement = module.insert(table).values(**values).on_conflict_do_nothing(
        index_elements=target
    )
    result = conn.execute(statement.returning(*table.primary_key.columns))
    return result.first() is not None


def delete_where(
    conn: Connection, table: Any, returning: Any, *where: ColumnElement[bool]
) -> bool:
    """``DELETE FROM table WHERE where…``; True when a row was there (``returning`` names one of
    its columns)."""
    result = conn.execute(delete(table).where(*where).returning(returning))
    return result.first() is not None


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
