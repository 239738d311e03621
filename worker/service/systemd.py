"""The ``systemd --user`` unit: ``$XDG_CONFIG_HOME/systemd/user/dsh-memory-worker.service``
(``~/.config`` when unset), enabled for ``default.target`` (the user's login), restarted on
failure, stopped with SIGINT within :data:`~worker.service.spec.STOP_TIMEOUT_S`, logging to the
journal (stdout and stderr, identifier ``memory-worker``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from dsh_memory_worker.worker.service import envfile
from dsh_memory_worker.worker.service.manager import Answer, State, call
from dsh_memory_worker.worker.service.spec import (
    NAME,
    RESTART_DELAY_S,
    ServiceError,
    ServiceSpec,
    documentation,
)
from dsh_memory_worker.worker.service.values import check_values

UNIT: Final = f"{NAME}.service"


def quote(word: str, *, command: bool) -> str:
    """``word`` as one systemd word: double-quoted, C escapes, ``%`` doubled (specifiers) and,
    in a command line, ``$`` doubled (variable expansion)."""
    if any(ch in word for ch in "\n\r\0"):
        raise ServiceError(f"{word!r}: a unit file cannot hold a newline or NUL")
    text = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    return f'"{text}"'


def unquote(word: str) -> str:
    """The value of one word :func:`quote` wrote (``command=False``)."""
    text = word[1:-1] if len(word) >= 2 and word[0] == word[-1] == '"' else word
    out, escaped = [], False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out).replace("%%", "%")


class Systemd:
    name = "systemd"

    def base(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("XDG_CONFIG_HOME")
        if configured and Path(configured).is_absolute():
            return Path(configured)
        return Path(environ.get("HOME") or Path.home()) / ".config"

    def file(self, environ: Mapping[str, str]) -> Path:
        return self.base(environ) / "systemd" / "user" / UNIT

    def env_file(self, environ: Mapping[str, str]) -> Path:
        return self.base(environ) / NAME / "service.env"

    def command(self, path: Path) -> list[str]:
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key == "ExecStart":
                words = re.findall(r'"(?:[^"\\]|\\.)*"', value)
                return [unquote(word).replace("$$", "$") for word in words]
        return []

    def environment(self, path: Path) -> dict[str, str]:
        found: dict[str, str] = {}
        files = []
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key == "Environment":
                name, _, setting = unquote(value).partition("=")
                found[name] = setting
            elif key == "EnvironmentFile":
                files.append(Path(value.lstrip("-").replace("%%", "%")))
        for file in files:
            if file.is_file():
                found.update(envfile.parse(file.read_text(encoding="utf-8")))
        return found

    def render(self, spec: ServiceSpec, environ: Mapping[str, str]) -> bytes:
        page = documentation()
        lines = [
            "# Written by `memory-worker service install`; `memory-worker service uninstall`",
            "# removes it. Logs: journalctl --user -u dsh-memory-worker",
            "[Unit]",
            "Description=dsh-memory-worker: DSH session logs into Hypatia memory",
            *([f"Documentation={page.as_uri().replace('%', '%%')}"] if page is not None else []),
            # Up to 5 failed starts in 10 minutes, then it stays failed (status says so).
            "StartLimitIntervalSec=600",
            "StartLimitBurst=5",
            "",
            "[Service]",
            "Type=exec",
            "ExecStart=" + " ".join(quote(word, command=True) for word in spec.argv),
            *(
                f"Environment={quote(f'{k}={v}', command=False)}"
                for k, v in sorted(spec.environment.items())
            ),
            *(
                [f"EnvironmentFile={str(spec.env_file).replace('%', '%%')}"]
                if spec.env_file is not None
                else []
            ),
            "Restart=on-failure",
            f"RestartSec={RESTART_DELAY_S}",
            # The worker stops cleanly on SIGINT (as on Ctrl-C); only the main process gets it.
            "KillSignal=SIGINT",
            "KillMode=mixed",
            f"TimeoutStopSec={spec.stop_timeout_s}",
            "SyslogIdentifier=memory-worker",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
        check_values(spec, environ)
        return "\n".join(lines).encode()

    def log_directory(self, environ: Mapping[str, str]) -> Path | None:
        return None  # the journal

    def load(self, path: Path) -> Answer:
        reloaded = call(["systemctl", "--user", "daemon-reload"])
        if not reloaded.ok:
            return reloaded
        enabled = call(["systemctl", "--user", "enable", UNIT])
        if not enabled.ok:
            return enabled
        return call(["systemctl", "--user", "restart", UNIT])  # starts it, or runs the new file

    def unload(self, path: Path) -> Answer:
        return call(["systemctl", "--user", "disable", "--now", UNIT])

    def reload_after_removal(self) -> Answer:
        return call(["systemctl", "--user", "daemon-reload"])

    def state(self, path: Path) -> State:
        active = call(["systemctl", "--user", "is-active", UNIT])
        if active.ok:
            return State(True, f"active ({UNIT})")
        shown = call(
            [
                "systemctl",
                "--user",
                "show",
                UNIT,
                "--property=ActiveState,SubState,Result,NRestarts",
                "--no-pager",
            ]
        )
        if not shown.ok:
            return State(None, f"systemctl --user is not reachable here ({shown.line})")
        fields = dict(line.partition("=")[::2] for line in shown.line.splitlines())
        return State(
            False,
            f"{fields.get('ActiveState', '?')} ({fields.get('SubState', '?')}, "
            f"result {fields.get('Result', '?')}, "
            f"{fields.get('NRestarts', '0')} restarts)",
        )

    def load_hint(self, path: Path) -> str:
        return f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT}"

    def log_hint(self, environ: Mapping[str, str]) -> str:
        return f"journalctl --user -u {NAME} -f"
