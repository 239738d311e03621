"""Model routes: selection by attempt, parsing, output caps, the "no route" message."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from dsh_memory_worker.memory import llm
from dsh_memory_worker.memory.llm import (
    ModelClient,
    ModelRoute,
    ModelsNotConfigured,
    PermanentModelError,
    budget_for_effort,
    output_token_cap,
    parse_routes,
    select_route,
)

A = ModelRoute("https://api.deepseek.com", "deepseek-chat", "DEEPSEEK_API_KEY")
B = ModelRoute("https://api.deepseek.com", "deepseek-reasoner", "DEEPSEEK_API_KEY", "high")
C = ModelRoute("http://127.0.0.1:9/v1", "local", "LOCAL_KEY")


def test_attempt_zero_takes_the_head_each_retry_the_next_and_then_the_last() -> None:
    routes = [A, B, C]
    assert select_route(routes, 0) == (0, A)
    assert select_route(routes, 1) == (1, B)
    assert select_route(routes, 2) == (2, C)
    assert select_route(routes, 5) == (2, C)
    assert select_route(routes, -3) == (0, A)
    assert select_route([], 0) is None


def test_parse_routes_from_json_keeps_order_and_drops_duplicates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = (
        '[{"base_url": "https://api.deepseek.com", "model": "deepseek-chat",'
        ' "api_key_env": "DEEPSEEK_API_KEY"},'
        ' {"base_url": "https://api.deepseek.com/", "model": "deepseek-chat",'
        ' "api_key_env": "OTHER"},'
        ' {"base_url": "https://api.deepseek.com", "model": "deepseek-reasoner",'
        ' "api_key_env": "DEEPSEEK_API_KEY", "reasoning_effort": " high "}]'
    )
    with caplog.at_level(logging.WARNING, logger="dsh_memory_worker.memory.llm"):
        routes = parse_routes(text)
    assert routes == [A, B]
    assert caplog.messages == [
        "dropping duplicate consolidation model route https://api.deepseek.com/deepseek-chat"
    ]
    assert parse_routes("") == []
    assert parse_routes(None) == []


def test_an_inline_key_is_kept_but_never_shown() -> None:
    (route,) = parse_routes([{"base_url": "http://x/v1", "model": "m", "api_key": "sk-inline1"}])
    assert route.api_key == "sk-inline1"
    assert route.api_key_env == ""
    assert "sk-inline1" not in repr(route)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{", "model routes are not valid JSON: Expecting property name enclosed in double quotes"),
        ('{"model": "x"}', "model routes must be a JSON list of route objects"),
        ("[1]", "model route 0 must be an object"),
        ('[{"base_url": " ", "model": "m", "api_key_env": "K"}]', "needs a non-empty `base_url`"),
        ('[{"base_url": "u", "model": "m"}]', "model route 0 needs a non-empty `api_key_env`"),
        (
            '[{"base_url": "u", "model": "m", "api_key_env": "K", "reasoning_effort": ""}]',
            "`reasoning_effort` must be a non-empty string or left out",
        ),
        (
            '[{"base_url": "u", "model": "m", "api_key_env": "K", "provider": "x"}]',
            "model route 0 has unknown key(s): provider",
        ),
    ],
)
def test_bad_routes_are_one_line_errors(value: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_routes(value)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_output_caps_add_the_thinking_allowance_unless_effort_is_off() -> None:
    assert budget_for_effort(2000, "off") == 2000
    assert budget_for_effort(2000, "none") == 2000
    assert budget_for_effort(2000, None) == 6000
    assert budget_for_effort(2000, "high") == 6000
    assert output_token_cap("memory-consolidation", None, 2000) == 6000
    assert output_token_cap("memory-consolidation", "off", 2500) == 2500
    assert output_token_cap("memory-cascade", "off", 2000) == 2000
    assert output_token_cap("memory-adjudication", "off", 2000) == 1024
    assert output_token_cap("memory-adjudication", "high", 2000) == 5024


def test_no_route_means_consolidation_is_off_with_instructions() -> None:
    client = ModelClient([])
    assert client.configured is False
    with pytest.raises(ModelsNotConfigured) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    text = str(caught.value)
    assert text.startswith("consolidation is off: no model route is configured")
    assert "MEMORY_WORKER_MODEL_ROUTES" in text
    assert "`model_routes`" in text
    assert "\n" not in text


def test_the_not_configured_warning_is_logged_once_per_process(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm.client, "_warned_not_configured", False)
    with caplog.at_level(logging.WARNING, logger="dsh_memory_worker.memory.llm"):
        assert llm.warn_models_not_configured() is True
        assert llm.warn_models_not_configured() is False
        assert llm.warn_models_not_configured() is False
    assert caplog.messages == [llm.NOT_CONFIGURED_MESSAGE]


def test_a_missing_key_variable_is_permanent_and_named_not_valued() -> None:
    records: list[llm.ModelCallRecord] = []
    client = ModelClient([A], env={"OTHER": "sk-should-not-appear"}, recorder=records.append)
    with pytest.raises(PermanentModelError) as caught:
        client.complete("memory-consolidation", "s", "u", 0)
    assert str(caught.value) == (
        "consolidation model route 0 (https://api.deepseek.com/deepseek-chat) needs an API key: "
        "environment variable DEEPSEEK_API_KEY is not set"
    )
    assert [(r.outcome, r.route_index, r.error) for r in records] == [
        ("error", 0, "missing API key (environment variable DEEPSEEK_API_KEY is not set)")
    ]


def test_an_unknown_purpose_is_refused() -> None:
    client = ModelClient([A], env={"DEEPSEEK_API_KEY": "k"})
    with pytest.raises(PermanentModelError, match="unknown model purpose 'chat'"):
        client.complete("chat", "s", "u", 0)  # type: ignore[arg-type]


@pytest.mark.integration
def test_the_model_module_does_not_import_the_worker() -> None:
    code = (
        "import sys, dsh_memory_worker.memory.llm, "
        "dsh_memory_worker.memory.consolidation.extraction, "
        "dsh_memory_worker.memory.consolidation.archive, "
        "dsh_memory_worker.memory.consolidation.adjudication, "
        "dsh_memory_worker.memory.consolidation.transcript, "
        "dsh_memory_worker.memory.consolidation.gates; "
        "print(sorted(m for m in sys.modules if m == 'dsh_memory_worker.worker' or "
        "m.startswith('dsh_memory_worker.worker.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
