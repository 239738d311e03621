"""Block flattening, truncation, one-line errors, slugs, tokens, project-scope normalisation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_memory_worker.memory.content.blocks import flatten_blocks
from dsh_memory_worker.memory.content.caps import cap_assistant, estimate_tokens
from dsh_memory_worker.memory.content.dates import iso_utc
from dsh_memory_worker.memory.content.policy import clean_text
from dsh_memory_worker.memory.content.slugs import (
    normalise_project,
    one_line_error,
    slugify,
    trim_like_hypatia,
)


def test_flatten_blocks() -> None:
    blocks = [
        {"type": "text", "text": "hello"},
        {"type": "thinking", "text": "secret thoughts"},
        {"type": "reasoning", "text": "more"},
        {"type": "image", "attachment": {}},
        {"type": "tool-call", "id": "c", "name": "read", "arguments": "{}"},
        {
            "type": "tool-result",
            "toolCallId": "c",
            "content": [{"type": "text", "text": "inner"}, {"type": "image"}],
        },
        {"type": "other"},
    ]
    assert flatten_blocks(blocks) == "hello\n[image]\ninner\n[image]\n[other]"
    assert flatten_blocks([]) == ""
    assert flatten_blocks(None) == ""
    assert flatten_blocks(["junk", {"type": "text", "text": None}]) == ""


def test_cap_assistant_marker() -> None:
    assert cap_assistant("x" * 900, 500) == "x" * 500 + "\n\n[...truncated 400 chars]"
    assert cap_assistant("short", 500) == "short"
    assert cap_assistant("x" * 500, 500) == "x" * 500


def test_redact_before_cap_leaves_no_fragment() -> None:
    text = "a" * 10 + " sk-abcdefghijklmnop tail"
    out = clean_text(text, max_chars=14, base_ms=0)
    assert "sk-" not in out
    assert out == "a" * 10 + " [RE\n\n[...truncated 23 chars]"


def test_one_line_error() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "x.py", line 3, in <module>\n'
        "    boom()\n"
        "ValueError: bad value\n"
    )
    assert one_line_error(trace) == "boom() → ValueError: bad value"
    assert one_line_error("Error: no such file\n    at open (fs.js:1:1)\n") == "Error: no such file"
    assert one_line_error("same\nsame") == "same"
    long = one_line_error("x" * 300)
    assert len(long) == 200 and long.endswith("…")
    assert one_line_error("") == ""


def test_slugify() -> None:
    assert slugify("Rust Arc<Mutex> 模式") == "rust-arc-mutex-模式"
    assert slugify("---") == "memory"
    assert slugify("Use Arc<Mutex<T>> for shared state") == "use-arc-mutex-t-for-shared-state"
    assert slugify("a" * 59 + " b") == "a" * 59
    assert len(slugify("word " * 30)) <= 60


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcde") == 2


def test_iso_utc_matches_javascript() -> None:
    assert iso_utc(1_757_404_800_123) == "2025-09-09T08:00:00.123Z"
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(-1) == "1969-12-31T23:59:59.999Z"
    assert iso_utc(-62_135_596_800_000) == "0001-01-01T00:00:00.000Z"
    assert iso_utc(253_402_300_799_999) == "9999-12-31T23:59:59.999Z"
    for outside in (-62_135_596_800_001, 253_402_300_800_000):
        with pytest.raises(ValueError, match=f"time {outside} ms is outside"):
            iso_utc(outside)


@given(st.integers(min_value=-62_135_596_800_000, max_value=253_402_300_799_999))
def test_iso_utc_agrees_with_datetime(ms: int) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert iso_utc(ms) == moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_project_normalisation() -> None:
    assert normalise_project("") == "/"
    assert normalise_project(None) == "/"
    assert normalise_project("a,b") == "a_b"
    assert normalise_project(" padded ") == "padded"
    assert normalise_project(" , ") == "_"
    assert normalise_project("repo") == "repo"
    assert normalise_project(normalise_project("a,b")) == "a_b"


def test_trim_like_hypatia_unicode_edges() -> None:
    assert trim_like_hypatia("\u0085name\u3000") == "name"
    assert trim_like_hypatia("name\ufeff") == "name\ufeff"
