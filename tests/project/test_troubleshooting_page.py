"""docs/troubleshooting.md answers every configuration error line the CLI can print: the
messages are collected from the code (each ``raise SettingsError / ServiceError / ValueError``
of worker/settings.py and worker/service/, and the ``invalid configuration`` lines), not listed
here by hand, so a new one fails this test until the page has it. Each message is written on
the page as its template (a formatted value is ``…``), under a heading of its own with its
cause and fix."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

SOURCES = [REPO / "worker" / "settings.py", *sorted((REPO / "worker" / "service").glob("*.py"))]
RAISED = {"SettingsError", "ServiceError", "ValueError"}


def _template(node: ast.expr) -> str | None:
    """The message of a string or f-string, a formatted value as ``…``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = "".join(
            part.value if isinstance(part, ast.Constant) else "…" for part in node.values
        )
        return re.sub("…+", "…", text)
    return None


def configuration_errors(paths: list[Path]) -> set[str]:
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and isinstance(node.exc.func, ast.Name)
                and node.exc.func.id in RAISED
                and node.exc.args
            ):
                message = _template(node.exc.args[0])
                if message is not None:
                    found.add(message)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.startswith("invalid configuration"):
                    found.add(node.value.strip())
            elif isinstance(node, ast.JoinedStr):
                text = _template(node)
                if text is not None and text.startswith("invalid configuration"):
                    found.add(text)
    return found


def _page() -> str:
    return (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")


def test_the_collector_finds_the_known_lines() -> None:
    errors = configuration_errors(SOURCES)
    assert "config file … does not exist" in errors
    assert "invalid configuration:" in errors
    assert "--env …: not set in this environment (give …=VALUE)" in errors
    assert len(errors) >= 15, sorted(errors)


def test_every_configuration_error_line_is_on_the_page() -> None:
    page = _page()
    missing = sorted(
        e for e in configuration_errors(SOURCES) if not re.search(rf"`\s?{re.escape(e)}", page)
    )
    assert missing == [], "add to docs/troubleshooting.md:\n" + "\n".join(missing)


def test_each_entry_has_a_cause_and_a_fix() -> None:
    entries = re.split(r"^### ", _page(), flags=re.M)[1:]
    assert len(entries) >= 15
    for entry in entries:
        heading = entry.splitlines()[0]
        assert heading.startswith("`"), heading
        assert "**Cause**" in entry and "**Fix**" in entry, heading
