"""Dialect helpers shared by the repositories (SQLite and PostgreSQL behave the same)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Table, delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert_ignore(
    session: Session, table: Table, values: dict[str, Any], conflict: Sequence[str] = ()
) -> bool:
    """``INSERT … ON CONFLICT (conflict or the primary key) DO NOTHING``; True when inserted."""
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    target = list(conflict) or [column.name for column in table.primary_key.columns]
    statement = module.insert(table).values(**values).on_conflict_do_nothing(
        index_elements=target
    )
    result = session.execute(statement.returning(*table.primary_key.columns))
    return result.first() is not None


def delete_where(
    session: Session, table: Any, returning: Any, *where: ColumnElement[bool]
) -> bool:
    """``DELETE FROM table WHERE where…``; True when a row was there (``returning`` names one of
    its columns)."""
    result = session.execute(
        delete(table)
        .where(*where)
        .returning(returning)
        .execution_options(synchronize_session=False)
    )
    return result.first() is not None


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
