"""Every path by which log text is stored or sent to the model goes through the one redaction
function: message bodies, the tool ledger's failure line, the session node's title and compaction
summary, and the consolidation transcript. Each is checked with the whole case table."""

from __future__ import annotations

from datetime import UTC

from eventkit import T0, assistant, other, tool_call, tool_result, user
from redaction_cases import NEGATIVE, POSITIVE, expected, secrets_of

from dsh_memory_worker.memory.consolidation.transcript import transcript_lines
from dsh_memory_worker.memory.entries import session_node_text
from dsh_memory_worker.memory.span import SpanOptions, plan_span

RAW = [raw for _, raw, _ in POSITIVE]
WANT = [expected(template) for _, _, template in POSITIVE]
SECRETS = [s for _, raw, template in POSITIVE for s in secrets_of(raw, template)]


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_message_bodies_are_their_exact_redaction() -> None:
    events = [user(2 * i + 1, raw) for i, raw in enumerate(RAW)]
    plan = plan_span(events, events, session_id="s1", project="demo", options=SpanOptions(),
                     span_from=1)  # fmt: skip
    bodies = [item.markdown.split("## Content\n", 1)[1] for item in plan.items]
    assert bodies == WANT


def test_a_failed_tool_s_error_line_is_redacted_before_it_is_cut() -> None:
    events = [assistant(1, "running", step=1)]
    for i, raw in enumerate(RAW):
        events.append(tool_call(2 + 2 * i, f"c{i}", "bash"))
        one_line = raw.replace("\n", " ")
        events.append(tool_result(3 + 2 * i, f"c{i}", f"fatal: {one_line}", time=T0 + 3 + 2 * i,
                                  error={"name": "Error", "code": "E1"}))  # fmt: skip
    plan = plan_span(events, events, session_id="s1", project="demo",
                     options=SpanOptions(tool_ledger=True, tz=UTC), span_from=1)  # fmt: skip
    (item,) = plan.items
    _no_secret(item.markdown)
    assert "❌" in item.markdown
    assert "Error (E1) — fatal: [REDACTED:secret:" in item.markdown


def test_titles_and_compaction_summaries_are_redacted() -> None:
    for raw, want in zip(RAW, WANT, strict=True):
        title = other(9, "session/title", {"title": raw})
        assert session_node_text(title, UTC) == want.strip()
        summary = other(9, "compaction/summary", {"summary": [{"type": "text", "text": raw}]})
        assert session_node_text(summary, UTC) == want.strip()


def test_the_transcript_sent_to_the_model_is_redacted() -> None:
    events = []
    for i, raw in enumerate(RAW):
        events.append(user(2 * i + 1, raw))
        events.append(assistant(2 * i + 2, NEGATIVE[i % len(NEGATIVE)]))
    lines = [line.text for line in transcript_lines(events, tz=UTC)]
    text = "\n".join(lines)
    _no_secret(text)
    for want in WANT:
        assert f"U: {want}".strip() in text
    for neutral in NEGATIVE:
        assert f"A: {neutral}" in text
