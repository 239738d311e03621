"""docker-compose.yml and the Dockerfile describe a deployment the worker can actually run.

No Docker engine runs here, but Debian's `docker-compose` (1.29, installed by `.ci/run` when
missing) validates the file for real with `docker-compose config`; the file keeps to the subset
both it and the Compose v2 plugin accept (no obsolete `version:` key, no top-level `name:`). The
rest parses the file with PyYAML and checks what only this project knows: every MEMORY_WORKER_*
variable is a real setting with a valid value, roles wait for the migration, the DSH home is
mounted read-only where logs are read, every service has a healthcheck, Flower and Prometheus
listen on 127.0.0.1 only (Flower with basic auth), and Prometheus scrapes the workers and the
watcher on the metrics port the Grafana dashboard's queries read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsh_memory_worker.worker.settings import ENV_PREFIX, Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
DOCKERFILE = (REPO / "Dockerfile").read_text(encoding="utf-8")

TOP_LEVEL = {"services", "volumes", "networks", "configs", "secrets"}
SERVICE_KEYS = {
    "build",
    "image",
    "command",
    "entrypoint",
    "environment",
    "volumes",
    "ports",
    "depends_on",
    "healthcheck",
    "restart",
    "deploy",
}
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def _resolve(text: str, values: dict[str, str] | None = None) -> str:
    """Compose-style ``${VAR:-default}`` interpolation with the defaults (or ``values``)."""
    values = values or {}

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(3) or ""
        return values.get(name, default)

    return re.sub(r"\$\{([A-Z_]+)(:-([^}]*))?\}", sub, text)


def _services() -> dict[str, dict[str, Any]]:
    services = COMPOSE["services"]
    assert isinstance(services, dict)
    return services


@pytest.mark.integration
def test_docker_compose_config_validates_the_file(tmp_path: Path) -> None:
    binary = shutil.which("docker-compose")
    assert binary is not None, "docker-compose is missing: `apt-get install docker-compose`"
    env = {**os.environ, "DSH_HOME": str(tmp_path), "FLOWER_BASIC_AUTH": "admin:pw"}
    done = subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    services = subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "config", "--services"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=True,
    ).stdout.split()
    assert sorted(services) == sorted(_services())
    unset = {k: v for k, v in env.items() if k != "FLOWER_BASIC_AUTH"}
    refused = subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        env=unset,
        cwd=REPO,
        timeout=60,
    )
    assert refused.returncode != 0  # Flower never runs without authentication
    assert "set FLOWER_BASIC_AUTH=user:password" in refused.stderr


def test_top_level_and_service_keys_are_compose_keys() -> None:
    extra = {k for k in COMPOSE if not k.startswith("x-")} - TOP_LEVEL
    assert extra == set()
    for name, service in _services().items():
        assert set(service) <= SERVICE_KEYS, name
        assert "image" in service or "build" in service, name
        for dependency, spec in service.get("depends_on", {}).items():
            assert dependency in _services(), (name, dependency)
            assert spec["condition"] in CONDITIONS, (name, dependency)
    declared = set(COMPOSE["volumes"])
    for service in _services().values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith(("/", ".", "~", "$")):
                assert source in declared, volume


def test_the_services_are_exactly_the_deployment_roles() -> None:
    assert set(_services()) == {
        "redis",
        "postgres",
        "migrate",
        "worker",
        "watcher",
        "flower",
        "prometheus",
    }


def test_every_service_has_a_healthcheck() -> None:
    for name, service in _services().items():
        test = service.get("healthcheck", {}).get("test")
        assert isinstance(test, list) and test[0] in ("CMD", "CMD-SHELL"), name
    worker = " ".join(_services()["worker"]["healthcheck"]["test"][1:])
    assert worker.startswith("celery -A dsh_memory_worker inspect ping -d worker@$$HOSTNAME")
    assert _services()["worker"]["command"][1:] == ["--name", "worker@%h"]


def test_flower_and_prometheus_listen_on_localhost_only() -> None:
    flower = _services()["flower"]
    assert flower["ports"] == ["127.0.0.1:${FLOWER_PORT:-5555}:5555"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    assert _services()["prometheus"]["ports"] == ["127.0.0.1:${PROMETHEUS_PORT:-9090}:9090"]
    assert not [
        s
        for s in _services().values()
        if any(not str(p).startswith("127.0.0.1:") for p in s.get("ports", []))
    ]


def test_prometheus_scrapes_workers_and_watcher_and_the_dashboard_reads_its_metrics() -> None:
    import json

    port = _services()["worker"]["environment"]["MEMORY_WORKER_METRICS_PORT"]
    config = yaml.safe_load((REPO / "deploy" / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["memory-worker"]["dns_sd_configs"] == [
        {"names": ["worker"], "type": "A", "port": int(port)}
    ]
    assert jobs["memory-worker-daemon"]["static_configs"] == [{"targets": [f"watcher:{port}"]}]
    mount = "./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro"
    assert mount in _services()["prometheus"]["volumes"]
    dashboard = json.loads((REPO / "deploy" / "grafana" / "memory-worker.json").read_text())
    exprs = " ".join(t["expr"] for panel in dashboard["panels"] for t in panel["targets"])
    import dsh_memory_worker.worker.observability as obs

    exported = {m._name for m in vars(obs).values() if hasattr(m, "_name")}
    exported |= {
        "memory_worker_lag_events",
        "memory_worker_consolidation_lag_events",
        "memory_worker_retractions_pending",
        "memory_worker_model_calls",
        "memory_worker_model_tokens",
    }
    used = set(re.findall(r"memory_worker_[a-z_]+", exprs))
    used = {re.sub(r"_(total|bucket)$", "", name) for name in used}
    assert used <= {re.sub(r"_total$", "", name) for name in exported}, used
    titles = {panel["title"] for panel in dashboard["panels"]}
    assert {
        "Lag (events)",
        "Throughput (jobs/s)",
        "Failures (jobs/s)",
        "Retractions",
        "Model calls",
    } <= titles


def test_migrate_runs_once_before_the_workers_and_the_watcher() -> None:
    services = _services()
    migrate = services["migrate"]
    assert migrate["command"] == ["migrate", "upgrade"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for role, command in (("worker", ["worker", "--name", "worker@%h"]), ("watcher", ["daemon"])):
        assert services[role]["command"] == command
        assert services[role]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        assert services[role]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert int(_resolve(str(services["worker"]["deploy"]["replicas"]))) == 2


def test_log_readers_mount_the_dsh_home_read_only() -> None:
    for role in ("worker", "watcher"):
        service = _services()[role]
        assert service["environment"]["DSH_HOME"] == "/dsh"
        mounts = [v for v in service["volumes"] if ":/dsh" in v]
        assert mounts == ["${DSH_HOME:-~/.dsh}:/dsh:ro"]


def test_every_worker_variable_is_a_valid_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _services()["worker"]["environment"]
    names = {k[len(ENV_PREFIX) :].lower() for k in env if k.startswith(ENV_PREFIX)}
    assert names <= set(Settings.model_fields), names - set(Settings.model_fields)
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    for key, value in env.items():
        monkeypatch.setenv(key, _resolve(str(value), {"POSTGRES_PASSWORD": "pw"}))
    settings = load_settings()
    assert settings.effective_state_url == "postgresql://memory:pw@postgres:5432/memory_worker"
    assert settings.broker_url == "redis://redis:6379/0"
    assert settings.sessions_root == Path("/dsh/sessions")
    assert settings.migrations_dir is None  # the packaged revisions
    assert settings.metrics_port == 9400
    assert settings.store_transport == "lite"
    assert settings.log_json is True
    assert (
        settings.public_dict()["state_url"] == "postgresql://memory:***@postgres:5432/memory_worker"
    )


def test_postgres_credentials_match_the_state_url() -> None:
    services = _services()
    pg = services["postgres"]["environment"]
    url = _resolve(services["worker"]["environment"]["MEMORY_WORKER_STATE_URL"])
    expected = (
        f"postgresql://{pg['POSTGRES_USER']}:{_resolve(pg['POSTGRES_PASSWORD'])}"
        f"@postgres:5432/{pg['POSTGRES_DB']}"
    )
    assert url == expected
    assert "healthcheck" in services["postgres"] and "healthcheck" in services["redis"]


def test_flower_watches_the_same_broker() -> None:
    services = _services()
    broker = services["worker"]["environment"]["MEMORY_WORKER_BROKER_URL"]
    assert f"--broker={broker}" in services["flower"]["command"]


def test_the_dockerfile_installs_the_package_with_its_data() -> None:
    assert re.search(r"^FROM python:3\.1[1-9]", DOCKERFILE, re.M)
    assert "pip install --no-deps ." in DOCKERFILE  # dependencies: test_dockerfile_layers.py
    assert "MIGRATIONS_DIR" not in DOCKERFILE  # the revisions are package data
    assert re.search(r"^WORKDIR /app$", DOCKERFILE, re.M)
    assert 'ENTRYPOINT ["memory-worker"]' in DOCKERFILE
    for path in ("pyproject.toml", "memory", "worker", "alembic.ini"):
        assert (REPO / path).exists(), path
    assert (REPO / "migrations" / "env.py").is_file()
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    assert ".venv" in ignored and ".git" in ignored


def test_the_compose_commands_are_memory_worker_commands() -> None:
    import typer.main

    from dsh_memory_worker.worker.cli import _register, app

    _register()
    known = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    for role in ("migrate", "worker", "watcher"):
        command = _services()[role]["command"]
        assert command[0] in known, (role, command, sorted(known))
    assert "config" in known
