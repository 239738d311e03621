"""The hot statements of every job, compiled once and run straight on SQLite's DBAPI connection.

Every job runs the same few statements (session and progress reads, lease acquire and release,
the watermark advance, the failure clear), each built once as a module constant with bound
parameters. On SQLite, :func:`fetch` compiles such a statement once and then runs it on the
transaction's own ``sqlite3`` connection with SQLAlchemy's own value conversions (its bind and
result processors: UTC times, JSON, booleans), skipping the execution machinery around each
``Connection.execute``. The SQL text, the values stored and the values read are the ones
``Connection.execute`` would use; a DBAPI error is raised as the same SQLAlchemy exception
(``OperationalError`` for a locked database, …). Only public API is used: the compiled
statement's ``string``, ``positiontup``, ``binds`` and ``construct_params``, each type's
``dialect_impl`` / ``bind_processor`` / ``result_processor`` and the statement's
``exported_columns`` (``tests/state/test_state_prepared.py`` compares every kind of value with
``Connection.execute``).

Why not ``Connection.execute`` itself (with its compiled cache): on SQLite it costs 2.1x per
job's state round (``benchmarks/state_hot_path_bench.py``, both in one run: 483 → 997 µs for six
statements and the commit) and about 3x per session read (37 → 118 µs), on a shared 2-core
machine.

PostgreSQL, a connection outside a transaction (no ``BEGIN`` was issued yet), and an engine
someone listens on for cursor executions (a tracer, a test recording statements) go through
``Connection.execute`` unchanged, so every statement is seen as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import ClauseElement, ColumnElement, Connection, Dialect, Executable
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ReturnsRows

Row = tuple[Any, ...]
_Processor = Callable[[Any], Any] | None


class _Compiled:
    """One statement compiled for SQLite: its text, its positional parameters with their bind
    processors, and the result processor of each returned column."""

    __slots__ = ("binds", "compiled", "names", "results", "sql")

    def __init__(self, statement: Executable, dialect: Dialect) -> None:
        assert isinstance(statement, ClauseElement)
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler) and compiled.positiontup is not None
        self.compiled = compiled
        self.sql = compiled.string
        self.names = tuple(compiled.positiontup)
        # Each type's own conversions for this dialect (TypeEngine.dialect_impl, bind_processor,
        # result_processor: what Connection.execute applies; public API).
        self.binds: tuple[_Processor, ...] = tuple(
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in self.names
        )
        columns: Sequence[ColumnElement[Any]] = (
            list(statement.exported_columns) if isinstance(statement, ReturnsRows) else []
        )
        results: list[_Processor] = [
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
        ]
        self.results = tuple(results) if any(p is not None for p in results) else None

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        values = self.compiled.construct_params(params)
        return [
            value if processor is None else processor(value)
            for value, processor in zip((values[n] for n in self.names), self.binds, strict=True)
        ]

    def rows(self, raw: list[Row]) -> list[Row]:
        results = self.results
        if results is None:
            return raw
        return [
            tuple(
                value if processor is None else processor(value)
                for value, processor in zip(row, results, strict=True)
            )
            for row in raw
        ]


# Keyed by the statement object (kept alive in the value, so its id is never reused).
_compiled: dict[int, tuple[Executable, _Compiled | None]] = {}
_lock = threading.Lock()


def _for(statement: Executable, dialect: Dialect) -> _Compiled | None:
    """``statement`` compiled for SQLite; ``None`` when its execution computes values of its
    own (column defaults of an ``INSERT`` or ``UPDATE``): those keep ``Connection.execute``."""
    found = _compiled.get(id(statement))
    if found is not None and found[0] is statement:
        return found[1]
    made: _Compiled | None = _Compiled(statement, dialect)
    if made is not None and (made.compiled.insert_prefetch or made.compiled.update_prefetch):
        made = None
    with _lock:
        _compiled[id(statement)] = (statement, made)
    return made


def fetch(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> list[Row]:
    """Run ``statement`` (built once: a module constant or a cached shape) with ``params`` and
    return every row it returns, values converted as ``Connection.execute`` converts them."""
    compiled = (
        _for(statement, conn.dialect)
        if conn.dialect.name == "sqlite" and conn.in_transaction() and not observed(conn)
        else None
    )
    if compiled is None:
        return [tuple(row) for row in conn.execute(statement, params)]
    args = compiled.args(params)
    raw = driver_execute(conn, compiled.sql, args)
    return compiled.rows(raw)


def first(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> Row | None:
    """The first row :func:`fetch` returns, or ``None``."""
    rows = fetch(conn, statement, params)
    return rows[0] if rows else None


def observed(conn: Connection) -> bool:
    """Whether a listener wants to see ``conn``'s cursor executions (they must then go through
    SQLAlchemy's execution, which fires those events)."""
    dispatch = conn.dispatch
    return bool(dispatch.before_cursor_execute or dispatch.after_cursor_execute)


def driver_execute(conn: Connection, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[Row]:
    """Run ``sql`` on ``conn``'s DBAPI connection (in its current transaction); its rows. A DBAPI
    error is raised as the SQLAlchemy exception ``Connection.execute`` would raise."""
    dialect = conn.dialect
    dbapi_conn = conn.connection.dbapi_connection
    assert dbapi_conn is not None
    try:
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(sql, args)
            rows: list[Row] = list(cursor.fetchall())
        finally:
            cursor.close()
    except dialect.loaded_dbapi.Error as exc:
        raise sa_exc.DBAPIError.instance(
            sql, args, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
    return rows
