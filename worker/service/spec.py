"""What a service runs, independent of the manager: the command line (an absolute
``memory-worker`` with ``run`` and the options the user chose), the environment, how long a stop
may take, and the name both managers know it by."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dsh_memory_worker.worker.service.carry import carry, is_secret

#: The name of the unit (``NAME.service``) and the suffix of the LaunchAgent's label.
NAME: Final = "dsh-memory-worker"

#: Seconds the manager waits after the stop signal before it kills the worker. A stop (SIGINT or
#: SIGTERM: the current store write finishes, the lease is released) took 0.75-1.15 s here on the
#: demo home, idle or in its first scan (issue 23 saw ~2.4 s); 30 s leaves more than ten times
#: that. A kill past it is still safe (every job is idempotent and crash-safe), it only redoes the
#: interrupted span.
STOP_TIMEOUT_S: Final = 30

#: Seconds between a failed run and its restart (both managers).
RESTART_DELAY_S: Final = 10


class ServiceError(Exception):
    """The service cannot be built or installed; the message is one line."""


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """``program`` and ``arguments`` (argv without the program), the environment to set in the
    unit, the ``secrets`` to set from ``env_file`` (mode 0600; see
    :mod:`worker.service.carry`), what install says it carried, and the stop timeout."""

    program: Path
    arguments: tuple[str, ...]
    environment: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    env_file: Path | None = None
    report: tuple[str, ...] = ()
    stop_timeout_s: int = STOP_TIMEOUT_S

    @property
    def argv(self) -> list[str]:
        return [str(self.program), *self.arguments]


def memory_worker_program() -> Path:
    """The absolute path of this installation's ``memory-worker`` (beside the running Python,
    as pip installs it), else the one on ``PATH``."""
    beside = Path(sys.executable).parent / "memory-worker"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which("memory-worker")
    if found is None:
        raise ServiceError(
            "cannot find the memory-worker program (beside "
            f"{sys.executable} or on PATH); install dsh-memory-worker first"
        )
    return Path(found).absolute()


def documentation() -> Path | None:
    """docs/service.md of the checkout this package runs from (an editable install), if any."""
    page = Path(__file__).resolve().parents[2] / "docs" / "service.md"
    return page if page.is_file() else None


def build_spec(
    *,
    config: Path | None,
    dsh_home: Path | None,
    env_names: list[str],
    environ: dict[str, str],
    store_binary: str | None = None,
    key_names: tuple[str, ...] = (),
    env_file: Path | None = None,
) -> ServiceSpec:
    """The spec of ``memory-worker run [--config FILE] [--dsh-home DIR]``: paths made absolute,
    the variables :func:`worker.service.carry.carry` chooses from ``environ``, and every
    ``env_names`` variable (``NAME=VALUE`` sets one); secrets go to ``env_file``."""
    arguments = ["run"]
    if config is not None:
        config = config.expanduser().absolute()
        if not config.is_file():
            raise ServiceError(f"config file {config} does not exist")
        arguments += ["--config", str(config)]
    if dsh_home is not None:
        arguments += ["--dsh-home", str(dsh_home.expanduser().absolute())]
    program = memory_worker_program()
    carried = carry(
        environ, program=program, store_binary=store_binary, key_names=key_names, cwd=Path.cwd()
    )
    environment, secrets = carried.environment, carried.secrets
    report = list(carried.report)
    for item in env_names:
        name, equals, value = item.partition("=")
        if not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise ServiceError(f"--env {item!r}: not a variable name")
        if not equals:
            if name not in environ:
                raise ServiceError(f"--env {name}: not set in this environment (give {name}=VALUE)")
            value = environ[name]
        environment.pop(name, None)
        secrets.pop(name, None)
        (secrets if is_secret(name, value) else environment)[name] = value
        report.append(f"carries {name} (--env)")
    if secrets and env_file is None:
        raise ServiceError(f"{', '.join(sorted(secrets))}: a secret, and no environment file")
    return ServiceSpec(
        program,
        tuple(arguments),
        environment,
        secrets,
        env_file if secrets else None,
        tuple(report),
    )


def remove_empty_parents(path: Path, stop: Path) -> list[Path]:
    """Remove the empty directories from ``path``'s parent up to (not including) ``stop``: the
    ones an install made, now empty (a directory holding anything else stays). The removed
    ones, deepest first."""
    removed = []
    directory = path.parent
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            break
        removed.append(directory)
        directory = directory.parent
    return removed
