"""The service's environment file: the secrets a unit must not hold inline, one ``NAME='value'``
a line, written with mode 0600. Single quotes read the same to ``systemd``'s
``EnvironmentFile=`` and to ``sh``'s ``.`` (the LaunchAgent sources it): inside them nothing is
special, and a quote is written ``'\\''`` (close, an escaped quote, reopen)."""

from __future__ import annotations

from collections.abc import Mapping

from dsh_memory_worker.worker.service.spec import ServiceError

HEADER = (
    "# Written by `memory-worker service install` (mode 0600): the service's secrets.\n"
    "# `memory-worker service uninstall` removes it.\n"
)


def check_value(name: str, value: str) -> None:
    """A value a unit, a plist or this file can hold: no control character but a tab."""
    bad = sorted({ch for ch in value if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F})
    if bad:
        shown = ", ".join(f"0x{ord(ch):02x}" for ch in bad)
        raise ServiceError(f"{name}: its value holds a control character ({shown}); remove it")


def render(secrets: Mapping[str, str]) -> bytes:
    lines = [HEADER]
    for name, value in sorted(secrets.items()):
        check_value(name, value)
        lines.append(f"{name}='" + value.replace("'", "'\\''") + "'\n")
    return "".join(lines).encode()


def parse(text: str) -> dict[str, str]:
    """The variables of a file :func:`render` wrote (comments and blank lines skipped)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, rest = line.partition("=")
        value, quoted, escaped = [], False, False
        for ch in rest:
            if escaped:
                value.append(ch)
                escaped = False
            elif ch == "'":
                quoted = not quoted
            elif ch == "\\" and not quoted:
                escaped = True
            else:
                value.append(ch)
        found[name.strip()] = "".join(value)
    return found
