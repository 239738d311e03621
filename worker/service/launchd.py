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

from worker.service.manager import Answer, State, call
from worker.service.spec import NAME, RESTART_DELAY_S, ServiceError, ServiceSpec
from worker.service.values import check_values

LABEL: Final = f"local.{NAME}"


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

    def render(self, spec: ServiceSpec, environ: Mapping[str, str]) -> bytes:
        log = str(log_file(environ))
        agent = {
            "Label": LABEL,
            "ProgramArguments": spec.argv,
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
