"""Every relative link in README.md, CONTRIBUTING.md, SECURITY.md and docs/*.md resolves: the file
exists and a `#anchor` names a heading of the target (GitHub's heading-slug rule); the README
stays short and links every page."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from conftest import REPO

_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fence = [], ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        lines.append(_CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(
        ch
        for ch in text
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    lines, fence = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.lstrip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        lines.append(line)
    for line in lines:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path, root: Path) -> list[str]:
    problems = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        for match in _LINK.finditer(line):
            target = match.group(1).strip("<>")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: …
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
            where = f"{path.relative_to(root)}: {target}"
            if not resolved.is_relative_to(root.resolve()):
                problems.append(f"{where} (outside the repository)")
            elif not resolved.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where} (no heading with anchor #{anchor})")
    return problems


def _documents() -> list[Path]:
    return [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        REPO / "SECURITY.md",
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "benchmarks" / "results.md",
        REPO / "examples" / "README.md",
    ]


def test_every_relative_link_and_anchor_resolves() -> None:
    assert len(_documents()) >= 9
    problems = [problem for doc in _documents() for problem in broken_links(doc, REPO)]
    assert problems == []


def test_the_readme_is_short_and_links_every_docs_page() -> None:
    readme = REPO / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 150  # a front door
    linked = {
        m.group(1).partition("#")[0]
        for line in _prose_lines(readme.read_text(encoding="utf-8"))
        for m in _LINK.finditer(line)
    }
    pages = {f"docs/{page.name}" for page in (REPO / "docs").glob("*.md")}
    assert pages - linked == set()


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## Rewriting memory: `reconsolidate --replace` and `relog`\n\n## Tests\n\n"
        "### Tests\n\n```sh\n## not a heading\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "README.md").write_text(
        "[ok](docs/page.md#rewriting-memory-reconsolidate---replace-and-relog) "
        "[ok](docs/page.md#tests-1) [web](https://example.com/x#y) `[code](nowhere.md)`\n"
        "[gone](docs/missing.md) [bad anchor](docs/page.md#not-a-heading) [self](#page)\n"
        "```\n[in a fence](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(tmp_path / "README.md", tmp_path) == [
        "README.md: docs/missing.md (no such file)",
        "README.md: docs/page.md#not-a-heading (no heading with anchor #not-a-heading)",
        "README.md: #page (no heading with anchor #page)",
    ]
    assert (
        slug("Consolidation: summaries, work units and archive tiers")
        == "consolidation-summaries-work-units-and-archive-tiers"
    )
    assert (
        slug("Distributed mode: `memory-worker daemon` + `memory-worker worker`")
        == "distributed-mode-memory-worker-daemon--memory-worker-worker"
    )
