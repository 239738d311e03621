"""Fixtures for the state tests: a SQLite file and a throwaway PostgreSQL database.

The PostgreSQL server is the real one at 127.0.0.1:5432; each test session creates databases
named ``mw_test_<random>`` through the ``postgres`` database and drops them at the end.
Import the fixtures into a test module: ``from state_db_support import state_db  # noqa: F401``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from dsh_memory_worker.worker.state import StateDB
from dsh_memory_worker.worker.state.models import Base

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"
PG_ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres"


@contextmanager
def throwaway_pg_database() -> Iterator[str]:
    """A new, empty PostgreSQL database; yields its SQLAlchemy URL and drops it afterwards."""
    name = f"mw_test_{secrets.token_hex(6)}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'state.db'}"


@pytest.fixture(scope="session")
def pg_state_url() -> Iterator[str]:
    """One PostgreSQL database per test session, migrated to head."""
    with throwaway_pg_database() as url:
        StateDB.open(url).dispose()
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A state database URL on each dialect that was never migrated (no SQLite file yet; an
    empty PostgreSQL database of its own)."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path)
    else:
        with throwaway_pg_database() as url:
            yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty state database URL on each dialect."""
    if request.param == "sqlite":
        url = sqlite_url(tmp_path)
        StateDB.open(url).dispose()
        yield url
        return
    url = request.getfixturevalue("pg_state_url")
    db = StateDB(url)
    with db.transaction() as repos:
        tables = ", ".join(f'"{table.name}"' for table in Base.metadata.sorted_tables)
        repos.conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY"))
    db.dispose()
    yield url


@pytest.fixture
def state_db(state_url: str) -> Iterator[StateDB]:
    db = StateDB(state_url)
    yield db
    db.dispose()
