"""``store_shelf_url`` with the shelf name left at ``default`` (the README's distributed recipe):
the URL backs ``default`` in a fresh hypatia-lite home and in one whose ``default`` is the
unused local directory hypatia-lite registers by itself; a local ``default`` that holds entries
is refused in one line naming the fix, and its registration and its bytes stay as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from state_db_support import throwaway_pg_database

from dsh_memory_worker.memory.store.base import StoreConfigError
from dsh_memory_worker.memory.store.factory import StoreConfig, open_store
from hypatia_lite import shelves
from hypatia_lite.store import LiteStore

pytestmark = pytest.mark.integration


def _registry_file(home: Path) -> dict[str, str]:
    return dict(json.loads((home / "shelves.json").read_text(encoding="utf-8"))["shelves"])


def _write_through_default(home: Path, url: str, name: str, text: str) -> None:
    store = open_store(StoreConfig(shelf="default", lite_home=home, shelf_url=url))
    try:
        assert store.knowledge_create(name, text) is True
    finally:
        store.close()


def test_a_url_backs_default_in_a_fresh_home(tmp_path: Path) -> None:
    home = tmp_path / "lite"
    with throwaway_pg_database() as url:
        _write_through_default(home, url, "msg-s-0", "héllo from host A")
        _write_through_default(tmp_path / "other-host", url, "msg-s-1", "from host B")
        assert _registry_file(home) == {"default": url}
        assert not (home / "default").exists()  # no local shelf was made beside it
        with LiteStore(home=home) as read:  # `hypatia-lite` without -s reads the same shelf
            assert [r["name"] for r in read.dump()["knowledge"]] == ["msg-s-0", "msg-s-1"]


def test_an_unused_local_default_is_repointed(tmp_path: Path) -> None:
    home = tmp_path / "lite"
    shelves.registry(home)  # what any hypatia-lite command does first: a local, empty default
    with LiteStore(home=home) as local:  # opened once (its database file exists), never written
        assert local.dump()["knowledge"] == []
    assert _registry_file(home) == {"default": str(home / "default")}
    with throwaway_pg_database() as url:
        _write_through_default(home, url, "msg-s-0", "kept in PostgreSQL")
        assert _registry_file(home) == {"default": url}
        assert (home / "default").is_dir()  # the old directory is left on disk, unregistered


def test_a_local_default_with_entries_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "lite"
    with LiteStore(home=home) as local:
        assert local.knowledge_create("msg-local-0", "written on this laptop") is True
        assert local.knowledge_create("msg-local-1", "and this too") is True
    before = (home / "shelves.json").read_bytes()
    with throwaway_pg_database() as url:
        with pytest.raises(StoreConfigError) as caught:
            open_store(StoreConfig(shelf="default", lite_home=home, shelf_url=url))
        assert str(caught.value) == (
            f"shelf error: shelf 'default' is registered as {home / 'default'}, a local shelf "
            f"holding 2 entries, not as {url}; choose another shelf name for the URL, or "
            "disconnect the local one (hypatia-lite disconnect default)"
        )
    assert (home / "shelves.json").read_bytes() == before
    with LiteStore(home=home) as local:
        assert [r["name"] for r in local.dump()["knowledge"]] == ["msg-local-0", "msg-local-1"]


def test_a_url_already_connected_under_another_name_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "lite"
    with throwaway_pg_database() as url:
        shelves.connect(home, url, "team")
        with pytest.raises(StoreConfigError) as caught:
            open_store(StoreConfig(shelf="default", lite_home=home, shelf_url=url))
        assert str(caught.value) == f"shelf error: {url} is already connected as 'team'"
        assert _registry_file(home) == {"default": str(home / "default"), "team": url}
