"""A line several times ``log_max_frame_bytes`` long (issue 22 item 6) is refused holding at most
the limit: the peak RSS of ``run --once`` (``wait4`` of a real subprocess) stays within the
baseline of the same run over the good sessions alone plus the limit (and a few read pieces), in a
raw log (the line is measured without being kept) and in a zstd log whose line runs across many
frames. Each bad log is named in one line as over the limit; the good sessions are written."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from hostile_support import env, run_worker, store_dump, write_good

pytestmark = pytest.mark.integration

LIMIT = 24 << 20
#: Read pieces, decoder buffers and allocator slack on top of the one line the limit allows.
SLACK_KB = 8 * 1024


def _good(home: Path) -> None:
    write_good(home, "g-one", 3)
    write_good(home, "g-two", 2, compressed=True)


def _raw_long_line(home: Path) -> None:
    """A raw log whose last line is 4 × the limit (a sparse file: the line is NUL bytes)."""
    path = write_good(home, "h-long-raw", 2)
    with path.open("r+b") as handle:
        handle.seek(4 * LIMIT, 2)
        handle.write(b"\n")


def _zstd_long_line(home: Path) -> None:
    """A zstd log whose last line runs over 5 × the limit in 1 MiB frames, then ends."""
    path = write_good(home, "h-long-zstd", 2, compressed=True)
    compressor = zstandard.ZstdCompressor()
    frame = compressor.compress(b'{"type":"turn/start","data":"' + b"x" * ((1 << 20) - 29))
    with path.open("ab") as handle:
        for _ in range(5 * LIMIT >> 20):
            handle.write(frame)
        handle.write(compressor.compress(b'"}\n'))


def _run(root: Path, home: Path) -> tuple[int, list[str], int]:
    done = run_worker(
        root,
        "run",
        "--once",
        "--dsh-home",
        str(home),
        environ=env(root, MEMORY_WORKER_LOG_MAX_FRAME_BYTES=str(LIMIT)),
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.lines, done.max_rss_kb


@pytest.mark.parametrize("write_long", [_raw_long_line, _zstd_long_line], ids=["raw", "zstd"])
def test_a_line_over_the_limit_costs_at_most_the_limit(tmp_path: Path, write_long: object) -> None:
    base_home = tmp_path / "base" / "dsh"
    _good(base_home)
    code, _, baseline_kb = _run(tmp_path / "base", base_home)
    assert code == 0

    home = tmp_path / "long" / "dsh"
    _good(home)
    assert callable(write_long)
    write_long(home)
    name = write_long.__name__.removeprefix("_").replace("_long_line", "")
    code, lines, peak_kb = _run(tmp_path / "long", home)
    assert peak_kb <= baseline_kb + LIMIT // 1024 + SLACK_KB, (peak_kb, baseline_kb)
    assert code == 0, lines  # bad input, reported: not a failed run
    named = [line for line in lines if f"h-long-{name}" in line]
    assert len(named) == 1, lines
    assert f"more than {LIMIT} bytes" in named[0] and "log_max_frame_bytes" in named[0]
    written = {row["name"] for row in store_dump(tmp_path / "long")["knowledge"]}
    assert {n for n in written if n.startswith("msg-g-")} == (
        {f"msg-g-one-{i}" for i in range(6)} | {f"msg-g-two-{i}" for i in range(4)}
    )
