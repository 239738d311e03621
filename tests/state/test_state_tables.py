"""The state tables are Core tables named by classes (worker.state.models): each class attribute
is its table's own column, and the class stands for its table in a statement."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, delete, insert, select, update
from sqlalchemy.dialects import sqlite

from dsh_memory_worker.worker.state.models import Base, ProgressRow, ProvenanceRow, SessionRow


def _sql(statement: Any) -> str:
    return " ".join(str(statement.compile(dialect=sqlite.dialect())).split())


def test_every_column_attribute_is_its_tables_own_column() -> None:
    tables = {cls.__tablename__: cls for cls in Base.__subclasses__()}
    assert sorted(tables) == sorted(Base.metadata.tables)
    for name, cls in tables.items():
        attributes = [value for value in vars(cls).values() if isinstance(value, Column)]
        assert [column.name for column in attributes] == list(cls.__table__.c.keys()), name
        for column in attributes:
            assert column is cls.__table__.c[column.name] and column.table is cls.__table__


def test_a_class_in_a_statement_is_its_table() -> None:
    assert _sql(select(ProvenanceRow)) == _sql(select(ProvenanceRow.__table__))
    assert _sql(select(ProvenanceRow)).startswith(
        "SELECT provenance.shelf, provenance.name, provenance.kind, provenance.session_id,"
    )
    # The column's onupdate (utcnow) comes along, as it did with the ORM's table.
    assert _sql(update(ProgressRow).values(version=1)) == (
        "UPDATE progress SET version=?, updated_at=?"
    )
    assert _sql(delete(SessionRow).where(SessionRow.session_id == "s")) == (
        "DELETE FROM sessions WHERE sessions.session_id = ?"
    )
    assert _sql(insert(SessionRow)).startswith("INSERT INTO sessions (session_id, path,")
    joined = select(SessionRow.session_id).outerjoin(
        ProgressRow, ProgressRow.session_id == SessionRow.session_id
    )
    assert _sql(joined) == (
        "SELECT sessions.session_id FROM sessions LEFT OUTER JOIN progress "
        "ON progress.session_id = sessions.session_id"
    )
