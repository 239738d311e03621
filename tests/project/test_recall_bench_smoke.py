"""The recall and adjudication benchmarks run end to end on small data made here (not performance
tests): the LoCoMo protocol's entries, questions and hit counting on a two-conversation file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

SPEAKERS = {"speaker_a": "Ann", "speaker_b": "Bob"}
PAIRS = [
    ("kitten", "tea"),
    ("puppy", "coffee"),
    ("parrot", "juice"),
    ("turtle", "cocoa"),
    ("hamster", "lemonade"),
    ("goldfish", "milk"),
]


def conversation(sid: str, topic: str, other: str) -> dict[str, object]:
    return {
        "sample_id": sid,
        "conversation": {
            **SPEAKERS,
            "session_1_date_time": "1 May 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": f"I adopted a {topic} last week."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": f"I prefer {other} honestly."},
            ],
        },
        "event_summary": {"events_session_1": {"Ann": [f"Ann adopts a {topic}."]}},
        "observation": {"session_1_observation": {"Bob": [[f"Bob likes {other}", "D1:2"]]}},
        "session_summary": {"session_1_summary": "not stored, as in Hypatia's protocol"},
        "qa": [
            {"question": f"What did Ann adopt, a {topic}?", "answer": topic, "category": 4,
             "evidence": ["D1:1"]},
            {"question": f"Does Bob like {other}?", "answer": "yes", "category": 1,
             "evidence": ["D1:2"]},
            {"question": "Adversarial", "adversarial_answer": "x", "category": 5,
             "evidence": ["D1:1"]},
        ],
    }  # fmt: skip


@pytest.mark.integration
def test_recall_bench_runs_the_protocol(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([conversation(f"conv-{i}", t, o) for i, (t, o) in enumerate(PAIRS)]))
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/recall_bench.py"), "--data", str(data)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HYPATIA_LITE_EMBEDDER": "hash"},
    ).stdout
    lines = out.splitlines()
    assert lines[0] == "embedder: hypatia-lite/hash-ngram-384"
    assert lines[1].startswith("ingest: 24 entries in ")  # 2 turns + events + observation, x6
    assert "24 entries: 12 questions" in lines
    table = {line[:18].strip(): line[18:].split() for line in lines if line.startswith("  ")}
    # every question holds its evidence's rare word: found among the first five, counted per
    # group (first comes the event summary or observation, which holds the word too)
    assert table["all"] == ["0.0%", "100.0%", "100.0%", "12"]
    assert table["multi-hop"] == ["0.0%", "100.0%", "100.0%", "6"]
    assert table["single-hop"] == ["0.0%", "100.0%", "100.0%", "6"]
    assert "temporal" not in table  # no question of that category
    assert table["half A (0-4)"][-1] == "10"
    assert table["half B (5-9)"][-1] == "2"
    assert "similar latency: p50" in out and "similar CPU time: p50" in out


@pytest.mark.integration
def test_adjudication_bench_compares_both_orders() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/adjudication_bench.py"), "--topics", "20"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HYPATIA_LITE_EMBEDDER": "hash"},
    ).stdout
    lines = out.splitlines()
    assert lines[0] == "embedder: hypatia-lite/hash-ngram-384; 100 entries"
    assert lines[1] == "40 new units (20 refine a stored one, the rest nothing)"
    assert lines[3].split()[:3] == ["before", "(cosine", "only)"]
    assert lines[4].split()[:2] == ["after", "(fused)"]
