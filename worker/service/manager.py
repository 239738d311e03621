"""What the ``service`` command needs from a service manager (:mod:`.systemd`, :mod:`.launchd`):
where its file goes, the file itself, and the calls that load, unload and describe it. A manager
that cannot be reached (``systemctl --user`` without a user bus, as in a container; no
``launchctl``) answers with the reason instead of raising."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dsh_memory_worker.worker.service.spec import ServiceSpec


@dataclass(frozen=True, slots=True)
class Answer:
    """A manager call's outcome: ``ok``, and its one-line reason when not."""

    ok: bool
    line: str = ""


@dataclass(frozen=True, slots=True)
class State:
    """Whether the loaded service runs (``None``: the manager cannot be asked) and what the
    manager said, in one line."""

    running: bool | None
    line: str


class Manager(Protocol):
    name: str

    def file(self, environ: Mapping[str, str]) -> Path: ...

    def base(self, environ: Mapping[str, str]) -> Path:
        """The directory the install may create directories under (never removed)."""
        ...

    def render(self, spec: ServiceSpec, environ: Mapping[str, str]) -> bytes: ...

    def env_file(self, environ: Mapping[str, str]) -> Path:
        """Where the service's secrets go (mode 0600; written only when there are some)."""
        ...

    def command(self, path: Path) -> list[str]:
        """The command line the installed file at ``path`` runs (the worker's, after any
        wrapper)."""
        ...

    def environment(self, path: Path) -> dict[str, str]:
        """The environment the installed file at ``path`` gives the service (its env file's
        secrets included)."""
        ...

    def log_directory(self, environ: Mapping[str, str]) -> Path | None:
        """A directory the service logs into that install must create (``None``: none)."""
        ...

    def load(self, path: Path) -> Answer: ...

    def unload(self, path: Path) -> Answer: ...

    def reload_after_removal(self) -> Answer: ...

    def state(self, path: Path) -> State: ...

    def load_hint(self, path: Path) -> str:
        """The commands that load ``path`` by hand."""
        ...

    def log_hint(self, environ: Mapping[str, str]) -> str:
        """The command that shows the service's log."""
        ...


def call(argv: list[str], timeout_s: float = 60.0) -> Answer:
    """Run a manager command; a missing program, a failure or a time-out is a one-line reason."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        return Answer(False, f"{argv[0]} not found")
    except subprocess.TimeoutExpired:
        return Answer(False, f"`{' '.join(argv)}` did not answer in {timeout_s:.0f} s")
    if done.returncode != 0:
        said = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        return Answer(False, said[-1] if said else f"`{' '.join(argv)}` exited {done.returncode}")
    return Answer(True, done.stdout.strip())
