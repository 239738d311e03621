"""The worker's way to a PostgreSQL shelf: ``store_shelf_url`` (``MEMORY_WORKER_STORE_SHELF_URL``)
registers ``store_shelf`` in hypatia-lite's home when the store opens — in process and for a
``hypatia-lite`` CLI / MCP binary — accepts it when it is already registered so, refuses a shelf
registered elsewhere in one line, and ``config`` shows the URL without its password."""

from __future__ import annotations

from pathlib import Path

import pytest
from state_db_support import throwaway_pg_database
from store_contract.transports import lite_binary

from dsh_memory_worker.memory.store.base import FatalStoreError, KnowledgeEntry
from dsh_memory_worker.memory.store.factory import StoreConfig, open_store
from dsh_memory_worker.worker.jobs.runtime import Runtime
from dsh_memory_worker.worker.settings import load_settings
from dsh_memory_worker.worker.state import StateDB
from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def test_open_store_registers_the_shelf_url(tmp_path: Path) -> None:
    home = tmp_path / "lite"
    with throwaway_pg_database() as url:
        config = StoreConfig(transport="lite", shelf="team", lite_home=home, shelf_url=url)
        store = open_store(config)
        try:
            assert store.knowledge_create("msg-s-1", "from the worker") is True
        finally:
            store.close()
        assert shelves.registry(home)["team"] == url
        for transport in ("lite", "cli", "mcp"):  # registered already: accepted as it is
            again = open_store(
                StoreConfig(
                    transport=transport,
                    binary=lite_binary(),
                    shelf="team",
                    lite_home=home,
                    shelf_url=url,
                )
            )
            try:
                entry = again.knowledge_get("msg-s-1")
                assert isinstance(entry, KnowledgeEntry)
                assert entry.content.data == "from the worker"
            finally:
                again.close()
        other = url.rsplit("/", 1)[0] + "/elsewhere"
        with pytest.raises(FatalStoreError) as caught:
            open_store(StoreConfig(shelf="team", lite_home=home, shelf_url=other))
        assert str(caught.value) == (
            f"shelf error: shelf 'team' is registered as {url}, not as {other}; disconnect it "
            "or choose another shelf name"
        )
        with pytest.raises(FatalStoreError) as caught:
            open_store(StoreConfig(shelf="default", lite_home=home, shelf_url=url))
        assert str(caught.value) == f"shelf error: {url} is already connected as 'team'"
        with pytest.raises(FatalStoreError, match=r"^invalid shelf URL 'mysql://x': it must start"):
            open_store(StoreConfig(shelf="x", lite_home=home, shelf_url="mysql://x"))


def test_the_setting_reaches_the_worker_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "lite"
    with throwaway_pg_database() as url:
        secret = url.replace("postgres@", "postgres:pw9@")
        monkeypatch.setenv("MEMORY_WORKER_STORE_SHELF_URL", secret)
        monkeypatch.setenv("MEMORY_WORKER_STORE_SHELF", "team")
        monkeypatch.setenv("MEMORY_WORKER_LITE_HOME", str(home))
        monkeypatch.setenv("MEMORY_WORKER_DATA_DIR", str(tmp_path / "data"))
        settings = load_settings()
        assert settings.public_dict()["store_shelf_url"] == url.replace(
            "postgres@", "postgres:***@"
        )
        state = StateDB.open(settings.effective_state_url)
        runtime = Runtime(settings=settings, state=state, owner="test")
        try:
            store = runtime.store("team")
            assert isinstance(store, LiteStore) and store.location == secret
            assert store.knowledge_create("msg-w-1", "written through the runtime") is True
            other = runtime.store("default")  # another shelf: not the URL's
            assert isinstance(other, LiteStore) and other.location == str(home / "default")
        finally:
            runtime.drop_store("team")
            runtime.drop_store("default")
            state.dispose()
        with LiteStore("team", home=home) as direct:
            assert [r["name"] for r in direct.dump()["knowledge"]] == ["msg-w-1"]
