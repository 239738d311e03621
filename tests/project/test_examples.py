"""examples/ runs as its README says: the README's block runs from the checkout (a fresh HOME,
``/tmp/`` the test's), the config loads with its DeepSeek routes and the key set, hypatia-lite
embeds through the local endpoint embedding.env names (a test server on a free port), the user
unit is exactly what ``service install --print`` writes from that shell (paths aside) and passes
``systemd-analyze verify``, and the two-host compose file passes ``docker-compose config``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from conftest import REPO
from doc_blocks import blocks

from dsh_memory_worker.worker.settings import ENV_PREFIX, Settings

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples"
BIN = Path(sys.executable).parent
ME = "/home/me"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_WORKER_", "DSH_", "HYPATIA_", "XDG_", "PYTEST"))
    }
    (tmp / "home").mkdir(exist_ok=True)
    return {**keep, "HOME": str(tmp / "home"), "PATH": "/usr/local/bin:/usr/bin:/bin", **extra}


def _block_script(tmp: Path) -> str:
    [block] = blocks(REPO, "examples/README.md")
    return re.sub(r"(?<![\w./~-])/tmp/", f"{tmp}/", block.text)


def test_the_readme_block_prints_the_example_unit(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-ec", _block_script(tmp_path)],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "deepseek-reasoner" in done.stdout  # `config` showed the routes
    printed = (tmp_path / "dsh-memory-worker.service").read_text(encoding="utf-8")
    assert "sk-your-key" not in printed
    assert "carries DEEPSEEK_API_KEY (a secret: in the environment file, 0600)" in done.stderr
    # The example is that unit, with the paths of the user "me".
    normal = printed.replace(str(BIN.parent.parent), f"{ME}/dsh-memory-worker")
    normal = normal.replace(str(REPO), f"{ME}/dsh-memory-worker")
    normal = normal.replace(str(tmp_path / "home"), ME)
    assert normal == (EXAMPLES / "dsh-memory-worker.service").read_text(encoding="utf-8")

    # systemd-analyze verify: the example with this machine's program and environment file.
    checker = shutil.which("systemd-analyze")
    assert checker is not None, "systemd-analyze is missing: apt-get install systemd"
    secrets = tmp_path / "service.env"
    secrets.write_text("DEEPSEEK_API_KEY='sk-your-key'\n", encoding="utf-8")
    unit = tmp_path / "check" / "dsh-memory-worker.service"
    unit.parent.mkdir()
    example = (EXAMPLES / "dsh-memory-worker.service").read_text(encoding="utf-8")
    example = example.replace(f"{ME}/dsh-memory-worker/.venv/bin", str(BIN))
    example = example.replace(f"{ME}/.config/dsh-memory-worker/service.env", str(secrets))
    unit.write_text(example, encoding="utf-8")
    verified = subprocess.run(
        [checker, "verify", "--user", str(unit)],
        env=_env(tmp_path, XDG_RUNTIME_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_config_loads_with_its_routes_and_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "memory-worker"), "config", "--json", "--config", "examples/config.toml"],
        cwd=REPO,
        env=_env(tmp_path, DEEPSEEK_API_KEY="sk-x"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    routes = [(r["base_url"], r["model"], r["api_key_set"]) for r in shown["model_routes"]]
    assert routes == [
        ("https://api.deepseek.com", "deepseek-chat", True),
        ("https://api.deepseek.com", "deepseek-reasoner", True),
    ]
    assert shown["dsh_home"] == str(tmp_path / "home" / ".dsh")
    assert shown["flush_window_s"] == 60


class _Embeddings(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        data = [
            {"index": i, "embedding": [1.0, float(len(t)), 0.5]}
            for i, t in enumerate(body["input"])
        ]
        reply = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_args: Any) -> None:
        return None


@pytest.fixture
def embeddings() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    _Embeddings.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_hypatia_lite_embeds_through_the_endpoint_of_the_env_file(
    tmp_path: Path, embeddings: ThreadingHTTPServer
) -> None:
    port = embeddings.server_address[1]
    values = dict(
        line.split("=", 1)
        for line in (EXAMPLES / "embedding.env").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    assert values["HYPATIA_LITE_EMBED_URL"] == "http://127.0.0.1:8080/v1"
    values["HYPATIA_LITE_EMBED_URL"] = f"http://127.0.0.1:{port}/v1"
    env = _env(tmp_path, **values, LOCAL_EMBED_KEY="k-local", HYPATIA_LITE_HOME=str(tmp_path / "l"))
    lite = str(BIN / "hypatia-lite")
    for argv in (
        [lite, "knowledge-create", "note-1", "--data", "the widget reads config.json"],
        [lite, "similar", "widget config"],
    ):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert "note-1" in done.stdout
    assert [(s["path"], s["model"], s["auth"]) for s in _Embeddings.seen][:2] == [
        ("/v1/embeddings", "nomic-embed-text", "Bearer k-local"),
        ("/v1/embeddings", "nomic-embed-text", "Bearer k-local"),
    ]


def test_the_two_host_compose_file_is_valid_and_splits_the_roles(tmp_path: Path) -> None:
    binary = shutil.which("docker-compose")
    assert binary is not None, "docker-compose is missing: `apt-get install docker-compose`"
    path = EXAMPLES / "compose-two-hosts.yml"
    done = subprocess.run(
        [binary, "-f", str(path), "config"],
        env=_env(tmp_path, CLUSTER_HOST="cluster.example"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(path.read_text(encoding="utf-8"))["services"]
    profiles = {name: service["profiles"] for name, service in services.items()}
    assert profiles == {
        "redis": ["cluster"],
        "postgres": ["cluster"],
        "migrate": ["cluster"],
        "worker": ["cluster"],
        "daemon": ["harness"],
    }
    assert services["daemon"]["volumes"] == ["${DSH_HOME:-~/.dsh}:/dsh:ro"]
    for name, service in services.items():
        names = set(service.get("environment") or {})
        settings = {n for n in names if n.startswith(ENV_PREFIX)}
        assert {n[len(ENV_PREFIX) :].lower() for n in settings} <= set(Settings.model_fields)
        assert ("DSH_HOME" in names) == (name == "daemon"), name
