"""Which backend serves a shelf: a registered directory is a SQLite shelf, a URL a PostgreSQL one.

Apart from :mod:`hypatia_lite.backend` (the protocol both implement) so that the
implementations can import the protocol's types without a cycle. The PostgreSQL backend is
imported only when a PostgreSQL shelf is opened, so an install without psycopg works.
"""

from __future__ import annotations

from hypatia_lite.backend import Backend
from hypatia_lite.shelves import is_url


def open_backend(shelf: str, location: str) -> Backend:
    """Open the backend of a registered shelf (``ShelfError`` when it cannot be opened)."""
    if is_url(location):
        from hypatia_lite.pg.backend import PgBackend

        return PgBackend.open(shelf, location)
    from hypatia_lite.sqlite_backend import SqliteBackend

    return SqliteBackend.open(shelf, location)
