"""The backend seam of hypatia-lite: where a shelf's rows live (SQLite file or PostgreSQL).

The protocol logic (:mod:`hypatia_lite.store`, ``batch``, ``vectors``, ``jse``) is written
once against a :class:`Backend`: a DB-API-like connection (``execute`` / ``executemany`` with
``?`` placeholders), short write transactions that keep other writers out, a runner that retries
transient lock / connection failures and turns database errors into one-line ``StoreError`` s,
the full-text document writer, and the :class:`~hypatia_lite.dialect.Dialect` for the SQL
that differs. :func:`hypatia_lite.backends.open_backend` picks one from a shelf's registered
location: a directory is a SQLite shelf (:mod:`hypatia_lite.sqlite_backend`), a
``postgresql://`` URL a PostgreSQL shelf (:mod:`hypatia_lite.pg`, imported only then, so an
install without psycopg works).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from hypatia_lite.dialect import Dialect

T = TypeVar("T")
#: ``(catalog, key, content)`` of one full-text document.
Doc = tuple[str, str, Mapping[str, Any]]


class Rows(Protocol):
    """What a query returns: a DB-API cursor."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """``execute`` / ``executemany`` with ``?`` placeholders (the sqlite3 spelling)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Rows: ...

    def executemany(self, sql: str, parameters: Any, /) -> Rows: ...


class Backend(Protocol):
    """One open shelf database."""

    dialect: Dialect
    #: ``"SQLite"`` or ``"PostgreSQL"``: the word in ``storage error: <word> error: …``.
    label: str

    @property
    def conn(self) -> Connection: ...

    def write(self, *, purge_text: bool = False) -> AbstractContextManager[None]:
        """A write transaction (committed on success, rolled back on error); ``purge_text``: it
        removes stored text, which must then be gone from the database files too. SQLite runs
        one at a time; PostgreSQL runs them in parallel (row locks and unique keys decide)."""
        ...

    def run(self, action: Callable[[], T]) -> T:
        """Run ``action`` (reads or one ``write``), retrying transient failures; database errors
        surface as one-line ``StoreError`` s."""
        ...

    def insert_new(self, sql: str, rows: list[tuple[Any, ...]], key: str) -> set[str]:
        """Run ``INSERT … ON CONFLICT DO NOTHING`` for ``rows`` (first column: the ``key``
        column's value); return the keys this call inserted."""
        ...

    def put_docs(self, docs: Iterable[Doc]) -> None:
        """Create or replace full-text documents (inside the write that writes the entries)."""
        ...

    def put_doc_rows(self, rows: list[tuple[str, ...]]) -> None:
        """:meth:`put_docs` for ``docs`` rows built already (``fts.doc_row``)."""
        ...

    def close(self) -> None: ...


def first_line(err: BaseException) -> str:
    """An exception's message on one line (drivers add DETAIL / HINT lines)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


__all__: Sequence[str] = ("Backend", "Connection", "Doc", "Rows", "first_line")
