"""The `--help` texts say what the commands do: `worker` runs every queued job (not only log /
session-node), `--shelf` is not only for writing (status reads), and `inspect` accepts a
sessions root as the README says."""

from __future__ import annotations

from typer.testing import CliRunner

from dsh_memory_worker.worker.cli import _register, app


def _help(*command: str) -> str:
    _register()
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    return " ".join(result.output.split())


def test_worker_help_names_every_job_kind() -> None:
    assert (
        "Run a Celery worker that executes the queued jobs (log, session node, consolidate, "
        "cascade, retract, rewrite)."
    ) in _help("worker")


def test_shelf_help_is_not_write_only() -> None:
    text = _help("status")
    assert "Store shelf to use (default: setting `store_shelf`, `default`)." in text
    assert "shelf to write" not in text


def test_inspect_help_lists_a_sessions_root() -> None:
    assert "A session log, session directory, sessions root, or DSH home." in _help("inspect")
