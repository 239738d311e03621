"""A JSON line nested deeper than any DSH row (issue 22 item 4): the reader refuses it as damage
before decoding it, so it never reaches Python's recursion limit. In committed history it is a
corrupt log like any other: ``run --once`` names it in one line and exits as for any corrupt log,
records one permanent failure (``status``), and writes the good sessions beside it; ``inspect``
says it in one line. Plain JSONL and zstd alike; a second run exits the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from hostile_support import run_worker, store_dump, write_good

from dsh_memory_worker.memory.dsh.depth import MAX_JSON_DEPTH, too_deep
from dsh_memory_worker.memory.dsh.reader import read_log

pytestmark = pytest.mark.integration

#: Far past Python's recursion limit (the json decoder raised RecursionError at ~1,000).
DEEP = 200_000


def _deep_row(seq: int, depth: int) -> bytes:
    nested = b"[" * depth + b"]" * depth
    return b'{"type":"turn/start","seq":%d,"time":1700000009000,"data":{"turn":9,"x":%s}}\n' % (
        seq,
        nested,
    )


def _turn_end(seq: int) -> bytes:
    return b'{"type":"turn/end","seq":%d,"time":1700000009001,"data":{"turn":9}}\n' % seq


def _home(root: Path) -> Path:
    home = root / "dsh"
    write_good(home, "g-fine", 2)
    plain = write_good(home, "h-deep", 2)
    with plain.open("ab") as handle:  # inside committed history: a turn/end follows
        handle.write(_deep_row(100, DEEP) + _turn_end(101))
    packed = write_good(home, "h-deep-zstd", 2, compressed=True)
    with packed.open("ab") as handle:  # one complete frame holding the deep row
        handle.write(zstandard.ZstdCompressor().compress(_deep_row(100, DEEP) + _turn_end(101)))
    return home


def test_a_deep_line_is_one_corrupt_log_in_run_status_and_inspect(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = run_worker(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr  # bad input is not a failed run (as any corrupt log)
    for name in ("h-deep", "h-deep-zstd"):
        named = [
            line
            for line in done.lines
            if f"{name} " in line or f"{name}:" in line or line.rstrip().endswith(name)
        ]
        assert len(named) == 1, (name, done.lines)
        assert f"nested more than {MAX_JSON_DEPTH} levels" in named[0], named[0]
    names = {row["name"] for row in store_dump(tmp_path)["knowledge"]}
    fine = {f"msg-g-fine-{i}" for i in range(4)}
    assert {n for n in names if n.startswith("msg-g-fine-")} == fine
    assert not {n for n in names if n.startswith("msg-h-deep")}  # a corrupt log is not written

    shown = run_worker(tmp_path, "status", "--json", "--dsh-home", str(home))
    assert shown.returncode == 0, shown.stderr
    rows = {row["session_id"]: row for row in json.loads(shown.stdout)["sessions"]}
    for name in ("h-deep", "h-deep-zstd"):
        failure = rows[name]["last_failure"]
        assert failure is not None, rows[name]
        assert failure["permanent"] is True
        assert f"nested more than {MAX_JSON_DEPTH} levels" in failure["error"], failure
    assert rows["g-fine"]["recorded"] and rows["g-fine"]["lag"] == 0

    again = run_worker(tmp_path, "run", "--once", "--dsh-home", str(home))
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr

    for name in ("h-deep", "h-deep-zstd"):
        looked = run_worker(
            tmp_path,
            "inspect",
            str(home / "sessions" / next((home / "sessions").iterdir()).name / name),
        )
        assert "Traceback" not in looked.stderr, looked.stderr
        said = [
            line
            for line in (looked.stdout + looked.stderr).splitlines()
            if f"nested more than {MAX_JSON_DEPTH} levels" in line
        ]
        assert len(said) == 1, (looked.stdout, looked.stderr)


def test_the_depth_bound_is_exact_and_ignores_brackets_inside_strings(tmp_path: Path) -> None:
    at_bound = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert not too_deep(at_bound)
    assert too_deep(b"[" + at_bound + b"]")
    assert too_deep(b"{" * DEEP)  # unbalanced: still refused, without decoding
    text = json.dumps({"code": "{[" * 5000, "list": [[1], [2]], "q": 'a\\"[[[['}).encode()
    assert not too_deep(text)
    # A deep row at the tail, with no turn/end after it: the damaged tail is dropped, as any.
    home = tmp_path / "dsh"
    plain = write_good(home, "h-tail", 1)
    with plain.open("ab") as handle:
        handle.write(_deep_row(100, DEEP))
    log = read_log(plain)
    assert len(log.events) == 6 and log.ok
    assert [p.kind for p in log.problems] == ["damaged"]
    assert f"nested more than {MAX_JSON_DEPTH} levels" in str(log.problems[0])
