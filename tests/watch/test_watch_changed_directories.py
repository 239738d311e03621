"""Notified paths map to the directories discovery must re-list and the sessions it must scan."""

from __future__ import annotations

from pathlib import Path

from dsh_memory_worker.worker.watch.discovery import changed_directories

ROOT = Path("/home/u/.dsh/sessions")


def test_a_log_write_touches_its_session_only() -> None:
    log = f"{ROOT}/proj/sid-1/session.v4.jsonl.zstd"
    assert changed_directories(ROOT, [log]) == (
        {f"{ROOT}/proj/sid-1"},
        {f"{ROOT}/proj/sid-1"},
        False,
    )


def test_a_new_session_directory_makes_its_project_stale() -> None:
    assert changed_directories(ROOT, [f"{ROOT}/proj/sid-2"]) == (
        {f"{ROOT}/proj", f"{ROOT}/proj/sid-2"},
        {f"{ROOT}/proj/sid-2"},
        False,
    )


def test_a_project_coming_or_going_scans_everything() -> None:
    assert changed_directories(ROOT, [f"{ROOT}/new-proj", str(ROOT)]) == (
        {str(ROOT), f"{ROOT}/new-proj"},
        set(),
        True,
    )


def test_paths_outside_the_root_are_ignored() -> None:
    assert changed_directories(ROOT, ["/etc/passwd"]) == (set(), set(), False)
