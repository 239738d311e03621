"""A marker's ``sourceEventSeqs`` range is data, not a list: a ~70-byte marker citing
``[[s, s + 10^7]]`` or ``[[0, 10^12]]`` costs no memory to speak of. Seqs at or after the marker
itself are not in the log when it is written (the format: every cited seq is ``< seq``), so such
a citation is damage: one line for it, and the marker withdraws what it cites of the log before
it — the store ends as with a marker citing only that. Checked in subprocesses under an
address-space limit (``RLIMIT_AS``) far below what the expansion took (2.2 GB for ``10^7``)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from canary_support import SessionLogWriter
from pipeline_support import names

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
LIMIT = 600 * 1024 * 1024  # a run over this small home peaks well under it (~70 MB RSS)


def _home(root: Path, width: int | None) -> Path:
    """A session of three turns whose second answer (seq ``s``) a rewind marker withdraws; the
    marker cites ``[[s, s + width]]`` (``None``: exactly ``[s]``, the well-formed control)."""
    log = SessionLogWriter(root / "dsh", "s-big", "/work/proj")
    log.turn("question one", "answer one")
    log.turn("question two", "answer two")
    shadowed = log.surface[-1]
    seq = log.seq
    data = {
        "id": f"m-rw-{seq}",
        "role": "user",
        "content": [{"type": "text", "text": "(empty message)"}],
        "source": {"kind": "dsh-rewind"},
    }
    cites: list[object] = [shadowed] if width is None else [[shadowed, shadowed + width]]
    op = {"op": "replace", "startSeq": shadowed, "endSeq": shadowed}
    log.event("user/message", data, surfaceOp=op, sourceEventSeqs=cites)
    log.surface[-1] = seq
    log.turn("question three", "answer three")
    log.flush()
    return log.path


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _worker(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        MEMORY_WORKER_DSH_HOME=str(root / "dsh"),
        MEMORY_WORKER_DATA_DIR=str(root / "data"),
        MEMORY_WORKER_LITE_HOME=str(root / "lite"),
        HYPATIA_LITE_HOME=str(root / "lite"),
        COLUMNS="200",
    )
    return subprocess.run(
        [str(BIN / "memory-worker"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited,
        check=False,
    )


@pytest.mark.parametrize("width", [10, 10**7, 10**12], ids=["10", "1e7", "1e12"])
def test_a_marker_citing_past_the_log_is_damage_recorded_once(tmp_path: Path, width: int) -> None:
    control = tmp_path / "control"
    _home(control, None)
    done = _worker(control, "run", "--once")
    assert done.returncode == 0, done.stderr
    expected = names(control)
    assert {n for n in expected if n.startswith("msg-")} == {
        f"msg-s-big-{n}" for n in (0, 1, 2, 4, 5)
    }  # answer two withdrawn; the later turn kept

    home = tmp_path / "damaged"
    path = _home(home, width)
    seen = _worker(home, "inspect", "--json", str(path))
    assert seen.returncode == 0, seen.stderr
    assert "Traceback" not in seen.stderr and "MemoryError" not in seen.stderr
    assert seen.stdout.count("at or after the row itself") == 1, seen.stdout

    for _ in range(2):  # and again: the same answer, never "not scanned"
        done = _worker(home, "run", "--once")
        assert done.returncode == 0, done.stderr
        assert "MemoryError" not in done.stderr and "not scanned" not in done.stderr
        assert names(home) == expected


def test_a_decoded_range_stays_a_range() -> None:
    """Decoding keeps ranges as ranges: membership by comparison, ``len`` without expanding;
    order and equality as written."""
    from dsh_memory_worker.memory.dsh.ranges import (
        CitesPastRow,
        RangeError,
        SeqRanges,
        decode_seq_ranges,
    )

    wide = decode_seq_ranges([3, [5, 10**12], 10**12 + 2])
    assert isinstance(wide, SeqRanges) and wide.pieces == ((3, 3), (5, 10**12), (10**12 + 2,) * 2)
    assert len(wide) == 10**12 - 5 + 1 + 2
    assert 4 not in wide and 10**12 + 1 not in wide and -1 not in wide
    assert all(s in wide for s in (3, 5, 10**9, 10**12, 10**12 + 2))
    assert decode_seq_ranges([19, 20, 4]) == (19, 20, 4)  # a plain list keeps its order
    assert 4 in decode_seq_ranges([19, 20, 4]) and 5 not in decode_seq_ranges([19, 20, 4])
    with pytest.raises(RangeError):
        decode_seq_ranges([[5, 8], 7])
    with pytest.raises(CitesPastRow) as cut:
        decode_seq_ranges([[0, 10**12]], below=12)
    assert cut.value.kept == tuple(range(12))
