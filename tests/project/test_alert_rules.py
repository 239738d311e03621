"""The Prometheus alert rules in deploy/ (lag growing for 10 minutes, retractions pending for an
hour, jobs failing, no runner heartbeat) are valid (``promtool check rules``, Debian's
``prometheus`` package; ``.ci/run`` installs it), behave as their unit tests say (``promtool
test rules``: each alert fires on its series and not on the look-alikes), are loaded by
deploy/prometheus.yml and mounted by docker-compose.yml, and use only metrics the worker really
exports (collected from worker.observability and a scrape of its state collector)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import get_args

import pytest
import yaml
from conftest import REPO

pytestmark = pytest.mark.integration

DEPLOY = REPO / "deploy"
RULES = DEPLOY / "prometheus-alerts.yml"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool is not None, "promtool is missing: apt-get install prometheus (bash .ci/run)"
    return subprocess.run(
        [tool, *args], cwd=DEPLOY, capture_output=True, text=True, timeout=120, check=False
    )


def test_promtool_checks_the_rules() -> None:
    done = _promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout
    alerts = [r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    assert alerts == [
        "MemoryWorkerLagGrowing",
        "MemoryWorkerRetractionsPending",
        "MemoryWorkerJobsFailing",
        "MemoryWorkerNoRunnerHeartbeat",
        "MemoryWorkerNoRunners",
    ]


def test_promtool_unit_tests_of_the_rules_pass(tmp_path: Path) -> None:
    done = _promtool("test", "rules", "prometheus-alerts.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # Not vacuous: a rule whose threshold is off fails them.
    scratch = tmp_path / "deploy"
    shutil.copytree(DEPLOY, scratch)
    (scratch / RULES.name).write_text(RULES.read_text().replace("for: 1h", "for: 2h"))
    failed = subprocess.run(
        ["promtool", "test", "rules", "prometheus-alerts.test.yml"],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = failed.stdout + failed.stderr
    assert failed.returncode == 1 and "alertname: MemoryWorkerRetractionsPending" in said, said


def test_prometheus_loads_the_rules_and_compose_mounts_them() -> None:
    done = _promtool("check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    assert (
        "./deploy/prometheus-alerts.yml:/etc/prometheus/prometheus-alerts.yml:ro"
        in compose["services"]["prometheus"]["volumes"]
    )


@pytest.fixture
def exported(tmp_path: Path) -> set[str]:
    """The metric names the worker exports: its counters and histograms, and the gauges its
    state collector yields on a real (empty, migrated) state database."""
    import dsh_memory_worker.worker.observability as obs
    from dsh_memory_worker.worker.state.database import StateDB

    names = {m._name for m in vars(obs).values() if hasattr(m, "_name")}
    state = StateDB.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        names |= {family.name for family in obs.StateCollector(state, "default").collect()}
    finally:
        state.dispose()
    return names


def test_the_rules_use_only_exported_metrics_and_labels(exported: set[str]) -> None:
    from dsh_memory_worker.worker.jobs.context import JobStatus

    assert "memory_worker_lag_events" in exported  # the collector really ran
    text = RULES.read_text() + (DEPLOY / "prometheus-alerts.test.yml").read_text()
    used = {
        re.sub(r"_(total|bucket|sum|count)$", "", n) for n in re.findall(r"memory_worker_\w+", text)
    }
    assert used and used <= exported, used - exported
    statuses = set(re.findall(r'status="(\w+)"', text))
    assert statuses and statuses <= set(get_args(JobStatus)), statuses
