from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The kits the tests share (``pipeline_support``, ``eventkit``, ``model_server``,
#: ``store_contract`` …) import by their own names from every subsystem's folder.
SUPPORT = REPO / "tests" / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
#: The state-database fixtures (SQLite and PostgreSQL), registered here so pytest rewrites the
#: module's asserts before any test module imports its helpers.
pytest_plugins = ["state_db_support"]
FIXTURES = REPO / "tests" / "fixtures" / "dsh"
# `run --once --jobs N` would use fewer processes whenever the suite keeps the cores busy; the
# tests of N processes (kills of a child, identical dumps) need exactly N. The adaptation itself
# is tested with the setting on, in tests/run/test_run_jobs_adapt.py.
os.environ.setdefault("MEMORY_WORKER_JOBS_ADAPT", "false")


class _OldTopLevelNames:
    """The checkout is on ``sys.path`` (pytest's ``pythonpath``), so its folders ``worker/`` and
    ``memory/`` would import as top-level packages: a second copy of every module beside the
    installed ``dsh_memory_worker.worker`` and ``dsh_memory_worker.memory``. Refuse it, naming
    the import to write instead."""

    NAMES = frozenset({"worker", "memory", "dsh_memory_worker_migrations"})

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.NAMES:
            raise ImportError(
                f"import {name!r} from the checkout: write dsh_memory_worker.{name} "
                "(the installed name; setup.py maps the folders)"
            )


sys.meta_path.insert(0, _OldTopLevelNames())


def pytest_configure(config: pytest.Config) -> None:
    # Start the modules in the order `pytest_collection_modifyitems` gives, not xdist's own (by
    # test count, which leaves the long one-test modules for last): tests/support/longest_first.py.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules first, longest first (``tests/longest_first.txt``); the rest after
    them in pytest's order, each module's tests in their own order."""
    from longest_first import ranks

    place = ranks()
    last = len(place)
    order = {id(item): place.get(item.nodeid.split("::", 1)[0], last) for item in items}
    items.sort(key=lambda item: order[id(item)])


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


#: The services the integration tests use (PostgreSQL, Redis, RabbitMQ).
_SERVICE_PORTS = frozenset({5432, 6379, 5672})


@contextlib.contextmanager
def _stay_in_process(item: pytest.Item) -> Iterator[None]:
    """``-m "not integration"`` means no subprocess and no service: while a test without the
    ``integration`` mark sets up (its module and session fixtures included) and runs, starting a
    process (``git``, which the project scope runs, and a program that does not exist aside) or
    connecting to PostgreSQL, Redis or RabbitMQ fails at once, saying to mark it — so the unit
    loop stays quick and honest."""
    if item.get_closest_marker("integration") is not None:
        yield
        return
    import shutil
    import socket
    import subprocess

    test = item.nodeid
    real_init = subprocess.Popen.__init__
    real_connect = socket.socket.connect

    def no_process(self: Any, args: Any, *more: Any, **options: Any) -> None:
        program = args if isinstance(args, str) else (args[0] if args else "")
        if os.path.basename(str(program)) == "git" or not shutil.which(str(program)):
            real_init(self, args, *more, **options)
            return
        raise AssertionError(f"{test} starts a process ({args!r}): mark it `integration`")

    def no_service(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and len(address) >= 2 and address[1] in _SERVICE_PORTS:
            raise AssertionError(
                f"{test} connects to a service at {address!r}: mark it `integration`"
            )
        return real_connect(self, address)

    subprocess.Popen.__init__ = no_process  # type: ignore[method-assign]
    socket.socket.connect = no_service  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real_init  # type: ignore[method-assign]
        socket.socket.connect = real_connect  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _stay_in_process(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _stay_in_process(item):
        return (yield)
