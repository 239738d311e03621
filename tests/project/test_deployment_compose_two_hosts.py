"""docker-compose.harness.yml and docker-compose.cluster.yml (two hosts with log shipping) are
valid for Debian's docker-compose 1.29 (`config`), and they split the roles as docs/deployment.md
says: the harness host runs the daemon alone with the DSH home read-only; the cluster runs the
broker, PostgreSQL, the migration, the workers, Flower and Prometheus, and nothing there mounts
or names a DSH home. Every MEMORY_WORKER_* variable is a real setting; shipping is on for all."""

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
HARNESS = REPO / "docker-compose.harness.yml"
CLUSTER = REPO / "docker-compose.cluster.yml"


def _services(path: Path) -> dict[str, dict[str, Any]]:
    services = yaml.safe_load(path.read_text(encoding="utf-8"))["services"]
    assert isinstance(services, dict)
    return services


def _config(path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("docker-compose")
    assert binary is not None, "docker-compose is missing: `apt-get install docker-compose`"
    return subprocess.run(
        [binary, "-f", str(path), "config", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.integration
def test_docker_compose_config_validates_both_files(tmp_path: Path) -> None:
    harness = _config(HARNESS, {"DSH_HOME": str(tmp_path), "CLUSTER_HOST": "cluster"}, "--services")
    assert harness.returncode == 0, harness.stderr
    assert harness.stdout.split() == ["daemon"]
    refused = _config(HARNESS, {"DSH_HOME": str(tmp_path), "CLUSTER_HOST": ""}, "-q")
    assert refused.returncode != 0 and "set CLUSTER_HOST" in refused.stderr
    cluster = _config(CLUSTER, {"FLOWER_BASIC_AUTH": "admin:pw"}, "--services")
    assert cluster.returncode == 0, cluster.stderr
    assert sorted(cluster.stdout.split()) == [
        "flower",
        "migrate",
        "postgres",
        "prometheus",
        "redis",
        "worker",
    ]


def test_only_the_daemon_reads_the_dsh_home_and_read_only() -> None:
    daemon = _services(HARNESS)["daemon"]
    assert daemon["command"] == ["daemon"]
    assert daemon["volumes"] == ["${DSH_HOME:-~/.dsh}:/dsh:ro"]
    assert daemon["environment"]["DSH_HOME"] == "/dsh"
    text = CLUSTER.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert "DSH_HOME" not in body and "/dsh" not in body


@pytest.mark.parametrize(
    "path,role", [(HARNESS, "daemon"), (CLUSTER, "worker"), (CLUSTER, "migrate")]
)
def test_every_variable_is_a_setting_and_shipping_is_on(
    path: Path, role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _services(path)[role]["environment"]
    names = {k[len(ENV_PREFIX) :].lower() for k in env if k.startswith(ENV_PREFIX)}
    assert names <= set(Settings.model_fields), names - set(Settings.model_fields)
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    values = {"POSTGRES_PASSWORD": "pw", "CLUSTER_HOST": "cluster.example"}
    for key, value in env.items():
        monkeypatch.setenv(
            key,
            re.sub(
                r"\$\{([A-Z_]+)(:[-?]([^}]*))?\}",
                lambda m: values.get(m.group(1), m.group(3) or ""),
                str(value),
            ),
        )
    settings = load_settings()
    host = "cluster.example" if role == "daemon" else "postgres"
    broker = "cluster.example" if role == "daemon" else "redis"
    assert settings.shipping is True
    assert settings.effective_state_url == f"postgresql://memory:pw@{host}:5432/memory_worker"
    assert settings.store_shelf_url == f"postgresql://memory:pw@{host}:5432/memory_store"
    assert settings.broker_url == f"redis://{broker}:6379/0"


def test_the_cluster_creates_the_store_database_and_scrapes_its_workers() -> None:
    services = _services(CLUSTER)
    init = "./deploy/postgres-store-db.sql:/docker-entrypoint-initdb.d/10-store.sql:ro"
    assert init in services["postgres"]["volumes"]
    assert "CREATE DATABASE memory_store" in (REPO / "deploy" / "postgres-store-db.sql").read_text()
    config = yaml.safe_load((REPO / "deploy" / "prometheus-cluster.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["memory-worker"]["dns_sd_configs"] == [
        {"names": ["worker"], "type": "A", "port": 9400}
    ]
    assert services["worker"]["depends_on"]["migrate"] == {
        "condition": "service_completed_successfully"
    }
    for name, service in services.items():
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
        for port in service.get("ports", []):
            if name in ("flower", "prometheus"):
                assert str(port).startswith("127.0.0.1:"), (name, port)
