"""``--dry-run`` says what the run will do: on a 16-session project with work units and
adjudication on, the exact figure (summaries and archives) equals the run's non-adjudication
calls and the stated bound ("at most N") is never exceeded — counted as the requests the
scripted model server really received, an oracle independent of the worker's own counting.
``--max-calls`` counts the same way: the run stays within it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from crash_point_support import restore
from model_server import ModelServer, Reply, module_model_server_fixture  # noqa: F401
from rewrite_support import CWD, archive_or_verdict, consolidate_with_a, env_for, tag_of
from typer.testing import CliRunner
from worker_dshgen import SessionLogWriter

from dsh_memory_worker.worker.cli import _register, app

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SESSIONS = tuple(f"p-{n:02d}" for n in range(16))
#: each session's two prompts: the same request worded alike across sessions, so work units
#: are similar and adjudication has candidates
TOPICS = ("the flaky login test", "the build cache", "the release notes", "the login page")


def responder(request: dict[str, Any]) -> Reply:
    """Consolidation: a summary and two units, one shared by every session of a topic (its
    name exists after the first: no adjudication) and one of the session's own; cascade: one
    line per member; judge: ``unrelated``."""
    tag = tag_of(request)
    text = request["messages"][-1]["content"]
    if "memory consolidation engine" in text:
        body = text.split("<transcript>\n", 1)[1].split("\n</transcript>", 1)[0]
        first = body.splitlines()[0]
        sid = re.search(r"p-\d\d", first)
        topic = next(t for t in TOPICS if t in first)
        units = [
            {
                "title": f"{tag} lesson on {topic}",
                "classification": "bug-fix",
                "content": f"## Context\n{tag} fixed {topic}\n## Solution\nretry the step",
                "tags": ["ci"],
            },
            {
                "title": f"{tag} note on {topic} in {sid.group(0) if sid else '?'}",
                "classification": "one-shot",
                "content": f"## Context\n{tag} fixed {topic} in {first}\n## Solution\nretry",
                "tags": ["ci"],
            },
        ]
        return Reply(content=json.dumps({"summary": f"- {tag}: {first}", "workUnits": units}))
    return archive_or_verdict(tag, text)


def kind(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    if "memory consolidation engine" in text:
        return "summary"
    return "archive" if "memory archivist" in text else "judge"


def write_project(root: Path) -> None:
    for index, sid in enumerate(SESSIONS):
        log = SessionLogWriter(
            root / "dsh", sid, CWD, created_at=1_764_000_000_000 + index * 60_000
        )
        topic = TOPICS[index % len(TOPICS)]
        log.turn(f"fix {topic} again in {sid}, {topic} fails", f"fixed {topic}")
        log.turn(f"thanks, {topic} passes", "welcome")
        log.flush()


def cli(root: Path, server: ModelServer, *args: str) -> tuple[int, str, str]:
    _register()
    env = env_for(
        root,
        server,
        "model-b",
        MEMORY_WORKER_ADJUDICATE="true",
        MEMORY_WORKER_CASCADE_BATCH_SIZE="4",
    )
    result = CliRunner().invoke(app, [*args], env=env)
    return result.exit_code, result.stdout, result.stderr


def dry_figures(out: str) -> tuple[int, int]:
    last = out.splitlines()[-1]
    found = re.match(r"dry run: (\d+) model calls?(?:, at most (\d+) with adjudication)?", last)
    assert found, last
    return int(found.group(1)), int(found.group(2) or found.group(1))


def requests_since(server: ModelServer, start: int) -> dict[str, int]:
    counts = {"summary": 0, "archive": 0, "judge": 0}
    for recorded in server.requests[start:]:
        counts[kind(recorded.json)] += 1
    return counts


@pytest.fixture(scope="module")
def consolidated(
    tmp_path_factory: pytest.TempPathFactory, model_server: ModelServer
) -> tuple[Path, Path]:
    """The project consolidated with route A once for the module: ``(work, snapshot)``."""
    base = tmp_path_factory.mktemp("estimates")
    work, snapshot = base / "work", base / "consolidated"
    model_server.responder = responder
    write_project(work)
    consolidate_with_a(work, model_server, adjudicate=True, cascade_batch_size=4)
    shutil.copytree(work, snapshot)
    return work, snapshot


@pytest.fixture
def project(consolidated: tuple[Path, Path]) -> Path:
    """Each test's own copy of the consolidated project, laid where it was made (the state
    database and the shelf registry hold its paths): what consolidating it again would give."""
    work, snapshot = consolidated
    restore(snapshot, work)
    return work


@pytest.mark.parametrize(
    ("selection", "current"), [(["--all"], []), (["--stale"], ["p-00", "p-05", "p-10"])]
)
def test_dry_run_is_exact_for_summaries_and_archives_and_bounds_the_run(
    project: Path, model_server: ModelServer, selection: list[str], current: list[str]
) -> None:
    if current:  # sessions route B already rewrote: --stale leaves their summaries alone
        code, out, err = cli(
            project, model_server, "reconsolidate", "--replace", *current, "--wait"
        )
        assert code == 0, out + err
    code, out, err = cli(
        project, model_server, "reconsolidate", "--replace", *selection, "--dry-run"
    )
    assert code == 0, err
    exact, bound = dry_figures(out)
    assert bound > exact  # adjudication may add calls: the line says how many at most

    start = len(model_server.requests)
    code, out, err = cli(project, model_server, "reconsolidate", "--replace", *selection, "--wait")
    assert code == 0, out + err
    made = requests_since(model_server, start)
    print(f"{selection}: dry run {exact} calls (at most {bound}); run {made}")
    assert made["summary"] == 16 - len(current)
    assert made["summary"] + made["archive"] == exact
    assert made["judge"] > 0  # the scenario does adjudicate
    assert sum(made.values()) <= bound


def test_max_calls_counts_like_the_dry_run_and_is_never_exceeded(
    project: Path, model_server: ModelServer
) -> None:
    budget = 10
    start = len(model_server.requests)
    code, out, err = cli(
        project,
        model_server,
        "reconsolidate",
        "--replace",
        "--all",
        "--wait",
        "--max-calls",
        str(budget),
    )
    assert code == 0, out + err
    made = requests_since(model_server, start)
    assert 0 < sum(made.values()) <= budget, made
    assert "stopped at the --max-calls budget" in out

    code, out, _ = cli(project, model_server, "reconsolidate", "--replace", "--all", "--dry-run")
    left, _ = dry_figures(out)
    assert left > 0  # what the budget left stays stale for the next run
