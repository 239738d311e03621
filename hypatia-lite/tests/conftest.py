"""hypatia-lite's own tests: they import only ``hypatia_lite`` (and pytest, psycopg, numpy), so
they run on an install of the ``hypatia-lite`` distribution alone (the lite-alone stage of
``.ci/run``) as well as in the repository's suite.

PostgreSQL: a throwaway database of the server at ``HYPATIA_LITE_TEST_PG`` (an admin URL; by
default the local server, user ``postgres``, trust authentication), made for one test and
dropped after it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

ADMIN_URL = os.environ.get("HYPATIA_LITE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def pytest_report_header() -> str:
    """Which ``hypatia_lite`` the run tests (the lite-alone stage checks it is the wheel's)."""
    import hypatia_lite

    return f"hypatia_lite {hypatia_lite.__version__} from {os.path.dirname(hypatia_lite.__file__)}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped (connections and all) afterwards."""
    import psycopg

    name = f"lite_test_{secrets.token_hex(6)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(ADMIN_URL)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
