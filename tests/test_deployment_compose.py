"""docker-compose.yml and the Dockerfile describe a deployment the worker can actually run.

No Docker engine runs here, but Debian's `docker-compose` (1.29, installed by `.ci/run` when
missing) validates the file for real with `docker-compose config`; the file keeps to the subset
both it and the Compose v2 plugin accept (a `version:` key, no top-level `name:`). The rest
parses the file with PyYAML and checks what only this project knows: every MEMORY_WORKER_*
variable is a real setting with a valid value, roles wait for the migration, and the DSH home
is mounted read-only where logs are read.
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

from worker.settings import ENV_PREFIX, Settings, load_settings

REPO = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
DOCKERFILE = (REPO / "Dockerfile").read_text(encoding="utf-8")

TOP_LEVEL = {"version", "services", "volumes", "networks", "configs", "secrets"}
SERVICE_KEYS = {
    "build", "image", "command", "entrypoint", "environment", "volumes", "ports", "depends_on",
    "healthcheck", "restart", "deploy",
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


def test_docker_compose_config_validates_the_file(tmp_path: Path) -> None:
    binary = shutil.which("docker-compose")
    assert binary is not None, "docker-compose is missing: `apt-get install docker-compose`"
    env = {**os.environ, "DSH_HOME": str(tmp_path)}
    done = subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    services = subprocess.run(
        [binary, "-f", str(REPO / "docker-compose.yml"), "config", "--services"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=True,
    ).stdout.split()
    assert sorted(services) == sorted(_services())


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
    assert set(_services()) == {"redis", "postgres", "migrate", "worker", "watcher", "flower"}


def test_migrate_runs_once_before_the_workers_and_the_watcher() -> None:
    services = _services()
    migrate = services["migrate"]
    assert migrate["command"] == ["migrate", "upgrade"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for role, command in (("worker", ["worker"]), ("watcher", ["daemon"])):
        assert services[role]["command"] == command
        assert services[role]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"}
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
    names = {k[len(ENV_PREFIX):].lower() for k in env if k.startswith(ENV_PREFIX)}
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
    assert settings.migrations_dir == Path("/app/migrations")
    assert settings.store_transport == "lite"
    assert settings.log_json is True
    assert settings.public_dict()["state_url"] == "postgresql://memory:***@postgres:5432/memory_worker"


def test_postgres_credentials_match_the_state_url() -> None:
    services = _services()
    pg = services["postgres"]["environment"]
    url = _resolve(services["worker"]["environment"]["MEMORY_WORKER_STATE_URL"])
    expected = (f"postgresql://{pg['POSTGRES_USER']}:{_resolve(pg['POSTGRES_PASSWORD'])}"
                f"@postgres:5432/{pg['POSTGRES_DB']}")
    assert url == expected
    assert "healthcheck" in services["postgres"] and "healthcheck" in services["redis"]


def test_flower_watches_the_same_broker() -> None:
    services = _services()
    broker = services["worker"]["environment"]["MEMORY_WORKER_BROKER_URL"]
    assert f"--broker={broker}" in services["flower"]["command"]


def test_the_dockerfile_ships_the_migrations_where_settings_point() -> None:
    assert re.search(r"^FROM python:3\.1[1-9]", DOCKERFILE, re.M)
    assert "COPY migrations ./migrations" in DOCKERFILE
    assert re.search(r"^WORKDIR /app$", DOCKERFILE, re.M)
    assert "MEMORY_WORKER_MIGRATIONS_DIR=/app/migrations" in DOCKERFILE
    assert 'ENTRYPOINT ["memory-worker"]' in DOCKERFILE
    for path in ("pyproject.toml", "memory", "worker", "migrations", "alembic.ini"):
        assert (REPO / path).exists(), path
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    assert ".venv" in ignored and ".git" in ignored


def test_the_compose_commands_are_memory_worker_commands() -> None:
    import typer.main

    from worker.cli import _register, app

    _register()
    known = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    for role in ("migrate", "worker", "watcher"):
        command = _services()[role]["command"]
        assert command[0] in known, (role, command, sorted(known))
    assert "config" in known
