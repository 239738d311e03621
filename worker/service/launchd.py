"""The launchd LaunchAgent: ``~/Library/LaunchAgents/local.dsh-memory-worker.plist``, loaded
into the user's GUI domain (``gui/<uid>``), started at load (login), restarted when it exits
unsuccessfully (``KeepAlive.SuccessfulExit = false``), logging stdout and stderr to
``~/Library/Logs/dsh-memory-worker/worker.log``. launchd always stops a job with SIGTERM (it has
no stop-signal key); the worker stops on SIGTERM exactly as on SIGINT. ``ExitTimeOut`` is the
stop timeout."""

from __future__ import annotations

import os
import plistlib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from dsh_memory_worker.worker.service import envfile
from dsh_memory_worker.worker.service.manager import Answer, State, call
from dsh_memory_worker.worker.service.spec import NAME, RESTART_DELAY_S, ServiceError, ServiceSpec
from dsh_memory_worker.worker.service.values import check_values

LABEL: Final = f"local.{NAME}"

#: launchd has no environment-file key: with secrets the agent runs ``sh``, which exports the
#: file's variables (``set -a``; ``$0`` is the file) and then execs the worker (``"$@"``).
SOURCE_AND_EXEC: Final = 'set -a && . "$0" && set +a && exec "$@"'


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def log_file(environ: Mapping[str, str]) -> Path:
    return _home(environ) / "Library" / "Logs" / NAME / "worker.log"


def _domain() -> str:
    return f"gui/{os.getuid()}"


class Launchd:
    name = "launchd"

    def base(self, environ: Mapping[str, str]) -> Path:
        return _home(environ)

    def file(self, environ: Mapping[str, str]) -> Path:
        return _home(environ) / "Library" / "LaunchAgents" / f"{LABEL}.plist"

    def env_file(self, environ: Mapping[str, str]) -> Path:
        return _home(environ) / "Library" / "Application Support" / NAME / "service.env"

    def command(self, path: Path) -> list[str]:
        argv = [str(word) for word in plistlib.loads(path.read_bytes()).get("ProgramArguments", [])]
        return argv[4:] if argv[:3] == ["/bin/sh", "-c", SOURCE_AND_EXEC] else argv

    def environment(self, path: Path) -> dict[str, str]:
        agent = plistlib.loads(path.read_bytes())
        found = {str(k): str(v) for k, v in dict(agent.get("EnvironmentVariables", {})).items()}
        argv = list(agent.get("ProgramArguments", []))
        if argv[:3] == ["/bin/sh", "-c", SOURCE_AND_EXEC] and Path(argv[3]).is_file():
            found.update(envfile.parse(Path(argv[3]).read_text(encoding="utf-8")))
        return found

    def render(self, spec: ServiceSpec, environ: Mapping[str, str]) -> bytes:
        log = str(log_file(environ))
        argv = spec.argv
        if spec.env_file is not None:
            argv = ["/bin/sh", "-c", SOURCE_AND_EXEC, str(spec.env_file), *argv]
        agent = {
            "Label": LABEL,
            "ProgramArguments": argv,
            "EnvironmentVariables": dict(sorted(spec.environment.items())),
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ThrottleInterval": RESTART_DELAY_S,
            "ExitTimeOut": spec.stop_timeout_s,
            "ProcessType": "Background",
            "StandardOutPath": log,
            "StandardErrorPath": log,
        }
        check_values(spec, environ, property_list=True)
        try:
            return plistlib.dumps(agent, sort_keys=False)
        except (ValueError, UnicodeEncodeError) as exc:  # a value check_values does not know
            raise ServiceError(f"a value a launchd property list cannot carry: {exc}") from None

    def log_directory(self, environ: Mapping[str, str]) -> Path | None:
        return log_file(environ).parent  # launchd creates the file, not its directory

    def load(self, path: Path) -> Answer:
        return call(["launchctl", "bootstrap", _domain(), str(path)])

    def unload(self, path: Path) -> Answer:
        return call(["launchctl", "bootout", f"{_domain()}/{LABEL}"])

    def reload_after_removal(self) -> Answer:
        return Answer(True)

    def state(self, path: Path) -> State:
        printed = call(["launchctl", "print", f"{_domain()}/{LABEL}"])
        if not printed.ok:
            if printed.line.endswith("not found"):  # launchctl itself is missing
                return State(None, f"launchctl is not reachable here ({printed.line})")
            return State(False, f"not loaded ({printed.line})")
        fields: dict[str, str] = {}
        for line in printed.line.splitlines():
            key, sep, value = line.strip().partition(" = ")
            if sep:
                fields.setdefault(key, value)
        running = fields.get("state") == "running"
        return State(
            running,
            f"{fields.get('state', 'unknown')} (pid {fields.get('pid', '-')}, "
            f"last exit {fields.get('last exit code', '-')})",
        )

    def load_hint(self, path: Path) -> str:
        return f"launchctl bootstrap gui/$(id -u) {path}"

    def log_hint(self, environ: Mapping[str, str]) -> str:
        return f"tail -f {log_file(environ)}"
