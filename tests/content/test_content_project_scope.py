"""Project scope from the session cwd, using a real ``git`` subprocess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dsh_memory_worker.worker.watch import project_scope as content
from dsh_memory_worker.worker.watch.project_scope import clear_project_cache, project_scope

pytestmark = pytest.mark.integration


def _init(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_repo_subdirectory_takes_the_repo_name(tmp_path: Path) -> None:
    clear_project_cache()
    repo = _init(tmp_path / "my,repo")
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_scope(str(repo / "src" / "deep")) == "my_repo"
    assert project_scope(str(repo)) == "my_repo"


def test_outside_git_uses_the_cwd_name(tmp_path: Path) -> None:
    clear_project_cache()
    plain = tmp_path / "plain" / "sub"
    plain.mkdir(parents=True)
    assert project_scope(str(plain)) == "sub"
    assert project_scope("/") == "/"
    assert project_scope(None) == "/"
    assert project_scope("") == "/"


def test_symlinked_checkout_takes_the_target_name(tmp_path: Path) -> None:
    clear_project_cache()
    repo = _init(tmp_path / "real-name")
    link = tmp_path / "alias"
    link.symlink_to(repo)
    assert project_scope(str(link)) == "real-name"


def test_inherited_git_location_variables_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clear_project_cache()
    other = _init(tmp_path / "other")
    repo = _init(tmp_path / "wanted")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert project_scope(str(repo)) == "wanted"


def test_results_are_cached_per_cwd(tmp_path: Path) -> None:
    clear_project_cache()
    repo = _init(tmp_path / "cached")
    assert project_scope(str(repo)) == "cached"
    os.rename(repo, tmp_path / "moved")
    assert project_scope(str(repo)) == "cached"


def test_a_timeout_falls_back_and_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clear_project_cache()
    slow = tmp_path / "slow-dir"
    slow.mkdir()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nexec sleep 5\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setattr(content, "GIT_TIMEOUT_S", 0.2)
    assert project_scope(str(slow)) == "slow-dir"
    assert str(slow) not in content._project_cache
    monkeypatch.undo()
    assert project_scope(str(slow)) == "slow-dir"
    assert content._project_cache[str(slow)] == "slow-dir"


def test_only_gits_newline_is_cut_and_unicode_edges(tmp_path: Path) -> None:
    clear_project_cache()
    bom = _init(tmp_path / "bom\ufeff")
    assert project_scope(str(bom)) == "bom\ufeff"
    spaced = _init(tmp_path / "\u0085 spaced\u3000")
    assert project_scope(str(spaced)) == "spaced"
    plain_and_git = tmp_path / "same"
    plain_and_git.mkdir()
    assert project_scope(str(plain_and_git)) == "same"
    clear_project_cache()
    _init(plain_and_git)
    assert project_scope(str(plain_and_git)) == "same"
