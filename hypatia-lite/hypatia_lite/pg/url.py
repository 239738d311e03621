"""PostgreSQL shelf locations: ``postgresql://user@host:port/database[?schema=name]``.

``schema`` is hypatia-lite's own parameter (the PostgreSQL schema holding the shelf's tables,
default ``hypatia_lite``): it is removed before the rest of the URL reaches libpq, so one
database can hold several shelves (and the worker's state tables) side by side. Every other
query parameter is libpq's (``sslmode``, ``connect_timeout``, …).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_SCHEMA = "hypatia_lite"
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class LocationError(ValueError):
    """A PostgreSQL shelf URL that cannot be used."""


def split(location: str) -> tuple[str, str]:
    """``(libpq URL, schema)`` of a PostgreSQL shelf location."""
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA.match(schema):
        raise LocationError(
            f"invalid schema {schema!r} in {redact(location)}: use lowercase "
            "letters, digits and '_'"
        )
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def default_name(location: str) -> str:
    """The shelf name ``connect`` gives a URL without ``-n``: its schema if the URL names one,
    else its database name."""
    parts = urlsplit(location)
    if any(k == "schema" for k, _ in parse_qsl(parts.query)):
        return split(location)[1]
    return parts.path.strip("/") or "default"


def redact(location: str) -> str:
    """The URL without its password (for listings and error messages)."""
    parts = urlsplit(location)
    if parts.password is None:
        return location
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
