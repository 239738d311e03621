"""Values a service file cannot carry, refused with one line (:class:`ServiceError`) instead of
a traceback from the writer: text that is not UTF-8 (a variable the shell holds as raw bytes)
goes into neither file, and a control character other than tab, newline and carriage return
cannot go into a launchd property list (XML 1.0 has no way to write it; ``plistlib`` refuses
it). A systemd unit quotes control characters (``\\x01``), so it can carry them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

from dsh_memory_worker.worker.service.spec import ServiceError, ServiceSpec

#: What XML 1.0, and so ``plistlib``, refuses in a string.
_NOT_IN_XML: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _labelled(spec: ServiceSpec, environ: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """Every value the service file is built from, with the name a user gave it."""
    yield "the memory-worker program's path", str(spec.program)
    words = spec.arguments
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        yield (before if before.startswith("--") else f"the argument {word!r}"), word
    for name, value in spec.environment.items():
        label = name if name == "PATH" else f"--env {name}"
        yield label, name
        yield label, value
    yield "HOME", environ.get("HOME", "")


def check_values(
    spec: ServiceSpec, environ: Mapping[str, str], *, property_list: bool = False
) -> None:
    """Raise :class:`ServiceError` naming the first value the file cannot carry."""
    for what, value in _labelled(spec, environ):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ServiceError(
                f"{what}: its value is not UTF-8 text, which a service file cannot carry; "
                "nothing installed"
            ) from None
        found = _NOT_IN_XML.search(value) if property_list else None
        if found is not None:
            raise ServiceError(
                f"{what}: its value holds the control character {found.group()!r}, which a "
                "launchd property list cannot carry; nothing installed"
            )


__all__ = ["check_values"]
