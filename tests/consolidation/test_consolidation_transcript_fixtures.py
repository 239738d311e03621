"""Transcripts of the real DSH fixture logs, read through ``memory.dsh``: exact lines."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from dsh_memory_worker.memory.consolidation.transcript import Transcript, build_transcript
from dsh_memory_worker.memory.dsh.reader import read_log
from dsh_memory_worker.memory.withdrawal import withdrawn_seqs

V4 = "v4-example/session.v4.jsonl.zstd"


def transcript_of(
    fixtures_dir: Path, name: str, from_seq: int = 0, to_seq: int | None = None
) -> Transcript:
    log = read_log(fixtures_dir / name)
    assert log.problems == []
    end = log.events[-1].seq + 1 if to_seq is None else to_seq
    span = [e for e in log.events if from_seq <= e.seq < end]
    marker_window = [e for e in log.events if e.seq >= from_seq]
    return build_transcript(
        span,
        withdrawn=withdrawn_seqs(marker_window),
        inherited_cut=log.inherited,
        tz=UTC,
        now_ms=0,
    )


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        (
            "fs-read/session.jsonl",
            [
                "U: Use the read tool (NOT bash) to read the file greeting.txt in the current "
                "directory, then reply with exactly the single word DONE.",
                "T: read ✅",
                "A: DONE",
            ],
        ),
        (
            "cancel/session.jsonl",
            ["U: Start a long task; this turn will be cancelled mid-stream.", "A: partial"],
        ),
        (
            "inline-image-prompt/session.jsonl",
            [
                "U: Inspect this image, then reply with exactly ",
                "[image]",
                "the single word DONE.",
                "A: DONE",
            ],
        ),
        ("error-finish/session.jsonl", ["U: This prompt triggers a recorded provider error."]),
        (
            "subagent-fork-in-process/session.1.jsonl",
            [
                "U: What is the project codeword mentioned earlier in this conversation? Reply "
                "with exactly that one word and nothing else.",
                "A: MARMALADE",
            ],
        ),
    ],
)
def test_fixture_transcripts(fixtures_dir: Path, name: str, lines: list[str]) -> None:
    result = transcript_of(fixtures_dir, name)
    assert result.text.split("\n") == lines
    assert result.complete is True


def test_a_compaction_checkpoint_is_not_shown(fixtures_dir: Path) -> None:
    text = transcript_of(fixtures_dir, "compaction-recovery/session.jsonl").text
    assert text.startswith("U: Establish a durable compaction premise before continuing.")
    assert text.endswith("\nT: bash ✅\nA: COMPACTION RECOVERED")
    assert text.count("\n") == 2
    assert "automatically generated checkpoint" not in text


def test_the_v4_example_without_its_withdrawn_turn(fixtures_dir: Path) -> None:
    result = transcript_of(fixtures_dir, V4)
    assert result.text.split("\n") == [
        "U: Read config.json and tell me which port the service uses.",
        "T: read ✅",
        "A: The service listens on port 8080.",
        "U: Change the port to 9090.",
        "T: edit ✅",
        "A: Done — config.json now sets port 9090.",
        "U: Which port is configured now?",
        "A: Port 9090.",
    ]
    assert [line.seq for line in result.lines] == [5, 12, 15, 23, 27, 36, 63, 65]


def test_a_span_ending_before_the_marker_still_leaves_the_withdrawn_turn_out(
    fixtures_dir: Path,
) -> None:
    result = transcript_of(fixtures_dir, V4, from_seq=39, to_seq=52)
    assert result.text == ""
    assert result.covered_to(52) == 52
