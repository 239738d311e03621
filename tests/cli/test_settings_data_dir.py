"""The default ``data_dir`` comes from platformdirs: on Linux exactly the old rule
(``$XDG_DATA_HOME`` honoured, else ``~/.local/share``); on macOS ``~/Library/Application
Support/dsh-memory-worker``, unless the old ``~/.local/share`` (or ``$XDG_DATA_HOME``) directory
already holds a state database, which then stays in use and ``config`` says why. macOS is
faked: platformdirs' own macOS class through worker/data_dir.py's seam, and a temporary HOME."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from platformdirs.macos import MacOS
from platformdirs.unix import Unix

from dsh_memory_worker.worker import data_dir as data_dir_module
from dsh_memory_worker.worker.settings import load_settings

_OLD_SOURCE = "default (old location: it holds the state database)"


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("MEMORY_WORKER_") or name in ("DSH_HOME", "XDG_DATA_HOME"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def mac(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_dir_module, "_platform_dirs", MacOS)


def _old_home(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "state.db").write_bytes(b"SQLite format 3\x00")


def test_linux_keeps_the_xdg_rule(
    monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(data_dir_module, "_platform_dirs", Unix)
    plain = load_settings()
    assert plain.data_dir == home / ".local" / "share" / "dsh-memory-worker"
    assert plain.value_sources["data_dir"] == "default"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    xdg = load_settings()
    assert xdg.data_dir == tmp_path / "xdg" / "dsh-memory-worker"
    assert xdg.value_sources["data_dir"] == "env XDG_DATA_HOME"
    monkeypatch.setenv("XDG_DATA_HOME", "~/data")  # honoured as before (platformdirs ignores it)
    assert load_settings().data_dir == home / "data" / "dsh-memory-worker"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the platform's own class")
def test_this_linux_machine_gets_the_same_without_the_seam(home: Path) -> None:
    assert load_settings().data_dir == home / ".local" / "share" / "dsh-memory-worker"


@pytest.mark.usefixtures("mac")
def test_a_fresh_mac_home_uses_application_support(home: Path) -> None:
    s = load_settings()
    expected = home / "Library" / "Application Support" / "dsh-memory-worker"
    assert s.data_dir == expected
    assert s.effective_state_url == f"sqlite:///{expected}/state.db"
    assert s.value_sources["data_dir"] == "default"


@pytest.mark.usefixtures("mac")
def test_a_mac_home_made_in_local_share_keeps_it(home: Path) -> None:
    old = home / ".local" / "share" / "dsh-memory-worker"
    _old_home(old)
    s = load_settings()
    assert s.data_dir == old
    assert s.value_sources["data_dir"] == _OLD_SOURCE
    assert not (home / "Library").exists()  # nothing is made in the new place


@pytest.mark.usefixtures("mac")
def test_a_mac_home_under_xdg_data_home_keeps_it(
    monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    _old_home(tmp_path / "xdg" / "dsh-memory-worker")
    assert load_settings().data_dir == tmp_path / "xdg" / "dsh-memory-worker"


@pytest.mark.usefixtures("mac")
def test_an_empty_old_directory_is_no_home(home: Path) -> None:
    (home / ".local" / "share" / "dsh-memory-worker").mkdir(parents=True)
    assert load_settings().data_dir == home / "Library" / "Application Support" / (
        "dsh-memory-worker"
    )


@pytest.mark.usefixtures("mac")
def test_a_home_in_both_places_uses_the_new_one(home: Path) -> None:
    _old_home(home / ".local" / "share" / "dsh-memory-worker")
    new = home / "Library" / "Application Support" / "dsh-memory-worker"
    _old_home(new)
    s = load_settings()
    assert s.data_dir == new and s.value_sources["data_dir"] == "default"


@pytest.mark.usefixtures("mac")
def test_an_explicit_data_dir_wins_over_an_old_home(
    monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path
) -> None:
    _old_home(home / ".local" / "share" / "dsh-memory-worker")
    monkeypatch.setenv("MEMORY_WORKER_DATA_DIR", str(tmp_path / "mine"))
    s = load_settings()
    assert s.data_dir == tmp_path / "mine" and s.value_sources["data_dir"] == "env"


@pytest.mark.usefixtures("mac")
def test_the_launchd_env_file_beside_it_does_not_move_an_old_home(home: Path) -> None:
    """``service install`` writes ``service.env`` into the Application Support directory: only
    a state database there makes it the home."""
    old = home / ".local" / "share" / "dsh-memory-worker"
    _old_home(old)
    support = home / "Library" / "Application Support" / "dsh-memory-worker"
    support.mkdir(parents=True)
    (support / "service.env").write_text("MEMORY_WORKER_FLUSH_WINDOW_S=60\n")
    assert load_settings().data_dir == old
