"""Shell completion is on and sees every command and each command's options (the CLI registers
only the command it runs; a completing process has no command argument, so it gets them all)."""

from __future__ import annotations

import os

import pytest
from cli_fork import run_cli


def _complete(words: str, index: int) -> list[str]:
    env = {
        **os.environ,
        "_MEMORY_WORKER_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(index),
    }
    done = run_cli([], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.integration
def test_commands_complete() -> None:
    assert _complete("memory-worker re", 1) == ["reconsolidate", "relog", "retract"]


@pytest.mark.integration
def test_a_commands_options_complete() -> None:
    assert {"--json", "--audit", "--session"} <= set(_complete("memory-worker status --", 2))
