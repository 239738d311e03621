"""The daemon configures Celery with its first hint, not at start: a daemon at rest sends no hint
and never loads Celery or kombu (issue 16: idle RSS); the first hint still goes out configured."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dsh_memory_worker.worker.settings import load_settings


@pytest.mark.integration
def test_the_follow_path_of_the_daemon_loads_no_celery() -> None:
    probe = (
        "import sys\n"
        "from dsh_memory_worker.worker.commands.daemon import BrokerHints\n"
        "import dsh_memory_worker.worker.watch.watcher, dsh_memory_worker.worker.jobs.runtime\n"
        "hints = BrokerHints(setup=lambda: None)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'celery', 'kombu'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert out == "[]"


def test_setup_runs_once_before_the_first_hint() -> None:
    from dsh_memory_worker.worker.commands.daemon import BrokerHints
    from dsh_memory_worker.worker.run import tasks

    calls: list[str] = []

    def setup() -> None:
        calls.append(str(tasks.app.conf.task_default_queue))
        tasks.configure(load_settings(None, broker_url="redis://127.0.0.1:1/0"), queue="q-lazy")

    hints = BrokerHints(retry_after_s=60, setup=setup)
    assert calls == []
    for n in range(3):
        hints("log_span", f"s-{n}", "default")
    assert len(calls) == 1  # once, before the first send
    assert tasks.app.conf.task_default_queue == "q-lazy"
    assert (hints.sent, hints.dropped) == (0, 3)  # nothing listens on port 1
