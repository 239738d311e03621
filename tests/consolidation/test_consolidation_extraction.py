"""The extraction prompt and the strict JSON contract of its reply."""

from __future__ import annotations

import json

import pytest

from dsh_memory_worker.memory.consolidation.extraction import (
    OUTPUT_SHAPE,
    SYSTEM_PROMPT,
    Extraction,
    WorkUnit,
    extraction_prompt,
    max_units_for,
    parse_extraction,
)
from dsh_memory_worker.memory.llm import PermanentModelError, UnusableModelOutput

GOOD = {
    "summary": "  - fixed the build\n- chose uv  ",
    "workUnits": [
        {
            "title": " Use Arc<Mutex<T>> for shared state ",
            "classification": "bug-fix",
            "content": "## Context\nrace\n## Solution\nArc<Mutex<T>>\n",
            "tags": ["rust", 7, "concurrency", "", "a", "b", "c", "d"],
        }
    ],
}


def test_system_prompt_and_reply_shape_are_the_reference_contract() -> None:
    assert SYSTEM_PROMPT == "You produce strict JSON only. You never add prose around it."
    assert OUTPUT_SHAPE == (
        '{ "summary": "<markdown: 3-8 terse bullets: request, what was done, key decisions '
        'with rationale, pending items>",\n'
        '  "workUnits": [ { "title": "<short slug-like title>",\n'
        '                   "classification": "one-shot | correction-chain | bug-fix | '
        'design-decision | exploration",\n'
        '                   "content": "<markdown: ## Context / ## Solution  '
        "(correction-chain: ## Initial Attempt / ## Why It Was Wrong / ## Correct Approach / "
        '## Lesson) / ## Key Detail>",\n'
        '                   "tags": ["<topic>", …] } ] }'
    )


def test_the_prompt_holds_the_instruction_then_the_transcript() -> None:
    prompt = extraction_prompt("U: hi\nA: hello", 3)
    assert prompt.endswith("\n\n<transcript>\nU: hi\nA: hello\n</transcript>")
    assert OUTPUT_SHAPE in prompt
    assert "- At most 3 work units." in prompt
    assert "memory consolidation engine of an AI coding assistant" in prompt


def test_a_retry_asks_for_one_unit() -> None:
    assert max_units_for(0, 3) == 3
    assert max_units_for(1, 3) == 1
    assert max_units_for(4, 7) == 1
    assert "At most 1 work units" in extraction_prompt("U: x", max_units_for(2, 3))


def test_a_valid_reply_is_trimmed_and_tags_are_strings_capped_at_five() -> None:
    assert parse_extraction(json.dumps(GOOD)) == Extraction(
        summary="- fixed the build\n- chose uv",
        work_units=(
            WorkUnit(
                title="Use Arc<Mutex<T>> for shared state",
                classification="bug-fix",
                content="## Context\nrace\n## Solution\nArc<Mutex<T>>",
                tags=("rust", "concurrency", "a", "b", "c"),
            ),
        ),
    )


def test_a_fenced_reply_is_accepted() -> None:
    fenced = "```json\n" + json.dumps({"summary": "- s", "workUnits": []}) + "\n```"
    assert parse_extraction(fenced) == Extraction("- s", ())
    bare_fence = "  ```\n" + json.dumps({"summary": "- t"}) + "\n```  "
    assert parse_extraction(bare_fence) == Extraction("- t", ())


def test_extra_units_are_trimmed_to_the_configured_maximum() -> None:
    units = [{"title": f"t{i}", "content": f"c{i}", "classification": 5} for i in range(6)]
    parsed = parse_extraction(json.dumps({"summary": "- s", "workUnits": units}), max_units=3)
    assert [u.title for u in parsed.work_units] == ["t0", "t1", "t2"]
    assert {u.classification for u in parsed.work_units} == {""}
    assert {u.tags for u in parsed.work_units} == {()}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Sure! Here is the JSON you asked for", "consolidation output is not valid JSON"),
        ("[]", "consolidation output is not a JSON object (got list)"),
        ('{"summary": "  ", "workUnits": []}', "no non-empty `summary` string"),
        ('{"workUnits": []}', "no non-empty `summary` string"),
        ('{"summary": "- s", "workUnits": {}}', "`workUnits` is not a list"),
        ('{"summary": "- s", "workUnits": [{"title": "", "content": "c"}]}', "has an empty title"),
        ('{"summary": "- s", "workUnits": [{"title": "t", "content": 3}]}', "has empty content"),
        ('{"summary": "- s", "workUnits": ["x"]}', "work unit 0 is not an object"),
    ],
)
def test_unusable_replies_fail_permanently_without_quoting_the_reply(
    reply: str, message: str
) -> None:
    with pytest.raises(UnusableModelOutput) as caught:
        parse_extraction(reply)
    assert isinstance(caught.value, PermanentModelError)
    assert message in str(caught.value)
    assert "Sure! Here is" not in str(caught.value)
    assert caught.value.detail == "unusable output"


def test_an_invalid_unit_beyond_the_maximum_is_not_checked() -> None:
    units = [{"title": "ok", "content": "c"}, {"title": "", "content": ""}]
    parsed = parse_extraction(json.dumps({"summary": "- s", "workUnits": units}), max_units=1)
    assert [u.title for u in parsed.work_units] == ["ok"]
