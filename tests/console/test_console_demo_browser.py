"""The demo home in headless Chromium with consolidation off (no model route): the sessions page
and Health say so instead of showing empty model plots; a session is named by its title; its
compaction checkpoint, which memory never keeps, is folded (label and length shown, text hidden)
until opened."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from canary_support import embedded_runtime
from console_support import chromium, running_console
from pipeline_support import cli_env, process

from dsh_memory_worker.worker.commands.demo_home import demo_session_id, lay_out_fixtures

pytestmark = pytest.mark.integration  # a real subprocess and browser

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "dsh"
OFF = "no model route: set model_routes / MEMORY_WORKER_MODEL_ROUTES"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("console-demo")
    lay_out_fixtures(FIXTURES, root / "dsh")
    runtime = embedded_runtime(root, force_idle=True)
    process(runtime, consolidation=False)
    runtime.close()
    env = {
        **cli_env(root),
        "MEMORY_WORKER_DSH_HOME": str(root / "dsh"),
        "MEMORY_WORKER_LITE_HOME": str(root / "lite"),
    }
    with running_console(env) as console, chromium() as context:
        tab = context.new_page()
        tab.goto(console.url)
        yield tab, console.base


def test_consolidation_off_is_said_not_drawn(page: Any) -> None:
    tab, base = page
    tab.goto(base + "/sessions")
    assert tab.locator("#consolidation-off").inner_text() == (
        f"Consolidation is off ({OFF}): messages are logged, no summaries are written."
    )
    words = tab.locator("#sessions td.cons span.cons").all_inner_texts()
    assert len(words) >= 7 and set(words) == {"off"}
    tab.goto(base + "/health")
    assert tab.locator("#consolidation-off").inner_text() == (
        f"Consolidation off ({OFF}): no model is called, so there are no model plots."
    )
    captions = tab.locator("#plots figcaption").all_inner_texts()
    assert [c.split(" (max")[0] for c in captions] == [
        "Logging lag by last activity (one dot per session)",
        "Retractions, repairs and forgets",
    ]
    assert tab.locator("#liveness").inner_text().startswith("No runner seen since 20")


def test_compaction_checkpoint_is_folded(page: Any) -> None:
    tab, base = page
    sid = demo_session_id("compaction-recovery")
    tab.goto(base + "/sessions")
    row = tab.locator(f"#sessions tr[data-id='{sid}']")
    assert row.locator("td.title").inner_text() == "Establish a durable compaction premise"
    assert row.locator("td.sid").get_attribute("title") == sid
    with tab.expect_navigation():
        row.locator("td.title a").click()
    assert tab.locator("#session-title").inner_text() == "Establish a durable compaction premise"
    assert tab.locator("#no-derived").inner_text().startswith(f"Consolidation is off ({OFF})")
    folded = tab.locator("#messages tr.skipped details.folded")
    assert folded.count() == 1
    label = folded.locator("summary").inner_text()
    assert label.startswith("compaction checkpoint, not kept (") and label.endswith(" characters)")
    assert not folded.locator(".memtext").is_visible()
    checkpoint = folded.locator(".memtext").text_content()
    assert len(checkpoint) == int(label.split("(")[1].split()[0]) and checkpoint
    tab.locator("#messages").scroll_into_view_if_needed()
    shot(tab, "session-log")
    folded.locator("summary").click()
    assert folded.locator(".memtext").is_visible()


def shot(tab: Any, name: str) -> None:
    image = tab.screenshot()
    assert image.startswith(b"\x89PNG")
    if os.environ.get("CONSOLE_SCREENSHOTS") == "1":
        (REPO / "docs" / "console" / f"{name}.png").write_bytes(image)
