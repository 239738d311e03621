"""The DSH reader refuses what is not a log: frames that expand past the limit (declared or not),
raw lines longer than it, symlinks and non-regular files (checked on the opened descriptor), and
the listing names every entry it does not follow, with why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard
from hostile_support import PROJECT, header, session_path, write_bomb, write_good

from dsh_memory_worker.memory.dsh.frames import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameTooLarge,
    decode_frame,
    set_max_frame_bytes,
)
from dsh_memory_worker.memory.dsh.locate import survey_sessions
from dsh_memory_worker.memory.dsh.openlog import UnsafeLog, open_log
from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.dsh.scanner import LogScan


@pytest.fixture(autouse=True)
def _default_limit() -> object:
    yield
    set_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)


def test_frames_are_bounded_whether_their_size_is_declared_or_not() -> None:
    data = b"".join(b'{"a":%d}\n' % i for i in range(20_000))  # 228 KB
    declared = zstandard.ZstdCompressor().compress(data)
    stream = zstandard.ZstdCompressor().compressobj()
    undeclared = stream.compress(data) + stream.flush()
    assert zstandard.frame_content_size(undeclared) == -1
    for frame in (declared, undeclared):
        assert decode_frame(frame, True, limit=len(data)) == data
        with pytest.raises(FrameTooLarge, match=f"more than {len(data) - 1} bytes"):
            decode_frame(frame, True, limit=len(data) - 1)
    with pytest.raises(FrameTooLarge, match="declares more than 1000 bytes"):
        decode_frame(declared[: len(declared) // 2], False, limit=1000)  # torn, but declared


def test_a_raw_line_longer_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    path.write_bytes(header("long-line") + b'{"type":"x","data":"' + b"a" * (3 << 20))
    set_max_frame_bytes(1 << 20)
    problems = [str(p) for p in read_log(path).problems]
    assert len(problems) == 1 and f"more than {1 << 20} bytes" in problems[0], problems


def test_a_zstd_bomb_is_refused_at_its_byte(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    write_bomb(path, 3 << 20)
    set_max_frame_bytes(1 << 20)
    log = read_log(path)
    assert [p.kind for p in log.problems] == ["corrupt"] and not log.ok
    first = len(zstandard.ZstdCompressor(level=3).compress(header(tmp_path.name)))
    assert log.problems[0].message.endswith(f"at byte {first}")


def test_open_log_opens_regular_files_only(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(header("g"))
    with open_log(good) as handle:
        assert handle.read() == header("g")
    os.symlink(good, tmp_path / "link.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    for name, why in (
        ("link.jsonl", "symbolic link"),
        ("fifo.jsonl", "FIFO"),
        ("dir.jsonl", "directory"),
    ):
        with pytest.raises(UnsafeLog, match=why):
            open_log(tmp_path / name)


def test_a_log_swapped_for_a_symlink_after_the_listing_is_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    log = write_good(home, "swapped", 1)
    [location] = survey_sessions(home / "sessions").sessions
    log.unlink()
    os.symlink("/etc/passwd", log)
    scan = LogScan(location.path)
    assert list(scan) == [] and scan.header is None
    assert [str(p) for p in scan.problems] == [
        f"io: {log} is a symbolic link (not followed); not read"
    ]


def test_the_listing_names_what_it_does_not_follow(tmp_path: Path) -> None:
    home = tmp_path / "dsh"
    write_good(home, "fine", 1)
    project = home / "sessions" / PROJECT
    os.symlink(project / "fine", project / "inside-link")  # inside the home: followed
    os.symlink(project / "nowhere", project / "dangling")
    os.symlink(project / "loop", project / "loop")
    os.mkfifo(session_path(home, "fifo"))
    os.symlink(tmp_path, home / "sessions" / "--out--")
    (home / "sessions" / "stray-file").write_text("not a directory: ignored")
    session_path(home, "starting", "session.lock").write_text("")  # no log yet: no problem
    survey = survey_sessions(home / "sessions")
    assert [loc.session_id for loc in survey.sessions] == ["fine", "inside-link"]
    found = {p.subject: p.reason for p in survey.problems}
    assert found == {
        "--out--/": f"is a symbolic link to {tmp_path}, outside the DSH home; not followed",
        "dangling": "is a dangling symbolic link (No such file or directory); not followed",
        "loop": "is a symbolic link loop; not followed",
        "fifo": "has session.v4.jsonl, which is a FIFO, not a regular log file",
    }
