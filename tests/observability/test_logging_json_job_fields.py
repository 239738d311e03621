"""With ``log_json`` every log line is one JSON object, whichever module logged it (the
``memory.*`` loggers included, at INFO too), and every line emitted inside a job carries the
job's ``session``, ``job``, ``shelf`` and ``attempt``."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from cli_fork import run_cli

from dsh_memory_worker.worker import logs
from dsh_memory_worker.worker.logs import JOB_FIELDS, job_context, setup_logging


def test_memory_and_worker_loggers_write_json_with_the_job_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup_logging("INFO", json_lines=True)
    try:
        logging.getLogger("dsh_memory_worker.memory.llm").info("outside any job")
        with job_context("consolidate", "s-1", "work", 2):
            logging.getLogger("dsh_memory_worker.memory.store.mcp").info("inside: %s", "store")
            logging.getLogger("dsh_memory_worker.memory.consolidation.adjudication").warning(
                "inside: model"
            )
            logging.getLogger("dsh_memory_worker.worker.jobs.guard").info("inside: guard")
        logging.getLogger("some.library").info("a library's INFO line is not ours")
    finally:
        root = logging.getLogger()
        root.handlers[:] = [h for h in root.handlers if h.get_name() != "memory-worker"]
        logs._json_lines[0] = False  # JSON mode is process-wide: later tests in this process
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(r["logger"], r["level"], r["message"]) for r in lines] == [
        ("dsh_memory_worker.memory.llm", "INFO", "outside any job"),
        ("dsh_memory_worker.memory.store.mcp", "INFO", "inside: store"),
        ("dsh_memory_worker.memory.consolidation.adjudication", "WARNING", "inside: model"),
        ("dsh_memory_worker.worker.jobs.guard", "INFO", "inside: guard"),
    ]
    assert not set(JOB_FIELDS) & set(lines[0])
    for record in lines[1:]:
        assert {k: record[k] for k in JOB_FIELDS} == {
            "session": "s-1",
            "job": "consolidate",
            "shelf": "work",
            "attempt": 2,
        }
        assert record["time"].endswith("+00:00")


@pytest.mark.integration
def test_the_json_lines_of_a_run_parse_and_job_lines_carry_the_four_fields(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_WORKER_")}
    env.update(
        MEMORY_WORKER_DATA_DIR=str(tmp_path / "data"),
        MEMORY_WORKER_CONFIG="",
        HYPATIA_LITE_HOME=str(tmp_path / "lite"),
        MEMORY_WORKER_LOG_JSON="true",
        MEMORY_WORKER_LOG_LEVEL="DEBUG",
    )
    laid = run_cli(["demo-home", str(tmp_path / "dsh")], env=env, timeout=120)
    assert laid.returncode == 0, laid.stderr
    run = run_cli(["run", "--once", "--dsh-home", str(tmp_path / "dsh")], env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "28 entries written, 0 retracted, 19 edges; 24 jobs done" in run.stderr
    records = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    done = [r for r in records if r["logger"] == "dsh_memory_worker.worker.jobs.guard"]
    # One line per job that did work: a log_span per session (8) and a session node per titled
    # session (7); the 9 consolidate runs were skipped (consolidation off) and say so once.
    assert sorted({r["job"] for r in done}) == ["log_span", "session_node"]
    assert [r["job"] for r in done].count("log_span") == 8
    assert [r["job"] for r in done].count("session_node") == 7
    for record in done:
        job, session = record["message"].split()[:2]
        assert (record["job"], record["session"], record["shelf"], record["attempt"]) == (
            job,
            session,
            "default",
            0,
        )
    # Every other line a job emitted (the consolidation notice) has the four fields too.
    in_jobs = [r for r in records if r["logger"].startswith("dsh_memory_worker.worker.jobs.")]
    assert len(in_jobs) > len(done)
    assert all(set(JOB_FIELDS) <= set(r) for r in in_jobs)
    # Nothing else went to stderr but the progress bar and the summary.
    other = [line for line in run.stderr.splitlines() if line.strip() and line[0] != "{"]
    assert len(other) <= 3, other
