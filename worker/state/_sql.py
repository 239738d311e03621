"""Dialect helpers shared by the repositories (SQLite and PostgreSQL behave the same).

Statements run on every job are built once per shape and cached, values bound as parameters:
building a statement and its cache key cost more than running it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Connection, Executable, Table, bindparam, delete, update

from dsh_memory_worker.worker.state import prepared


def storable_text(text: str) -> str:
    """``text`` without the NUL characters PostgreSQL refuses in text columns (SQLite keeps
    them), so both state databases store the same string."""
    return text.replace("\x00", "\ufffd")


def insert_ignore(
    conn: Connection, table: Table, values: dict[str, Any], conflict: Sequence[str] = ()
) -> bool:
    """``INSERT … ON CONFLICT (conflict or the primary key) DO NOTHING``; True when inserted."""
    statement = _insert_ignore(conn.dialect.name, table, tuple(values), tuple(conflict))
    return prepared.first(conn, statement, {f"v_{k}": v for k, v in values.items()}) is not None


@cache
def _insert_ignore(
    dialect: str, table: Table, columns: tuple[str, ...], conflict: tuple[str, ...]
) -> Executable:
    """The statement of :func:`insert_ignore` for one table and set of columns, built once
    (values are bound parameters ``v_<column>``)."""
    # Start-up time: only the dialect in use is imported (PostgreSQL's brings asyncio with it).
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    target = list(conflict) or [column.name for column in table.primary_key.columns]
    statement: Executable = (
        insert(table)
        .values({name: bindparam(f"v_{name}", type_=table.c[name].type) for name in columns})
        .on_conflict_do_nothing(index_elements=target)
        .returning(*table.primary_key.columns)
    )
    return statement


def update_by_key(
    conn: Connection, table: Table, key: str, ident: Any, values: dict[str, Any]
) -> bool:
    """``UPDATE table SET values WHERE key = ident``; True when the row exists."""
    statement = _update_by_key(table, key, tuple(values))
    params = {"p_ident": ident, **{f"v_{k}": v for k, v in values.items()}}
    return prepared.first(conn, statement, params) is not None


@cache
def _update_by_key(table: Table, key: str, columns: tuple[str, ...]) -> Executable:
    return (
        update(table)
        .where(table.c[key] == bindparam("p_ident"))
        .values({name: bindparam(f"v_{name}", type_=table.c[name].type) for name in columns})
        .returning(table.c[key])
    )


def delete_where(conn: Connection, table: Any, returning: Any, *where: ColumnElement[bool]) -> bool:
    """``DELETE FROM table WHERE where…``; True when a row was there (``returning`` names one of
    its columns)."""
    result = conn.execute(delete(table).where(*where).returning(returning))
    return result.first() is not None


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
