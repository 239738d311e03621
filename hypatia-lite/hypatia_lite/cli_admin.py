"""The operator verbs of ``hypatia-lite`` that the reference plugin's README tells users to run:
``scope list [--count]``, ``model register|show|unregister`` (the embedding model of a shelf) and
``shelf-config get|set|unset embedding.skip_tags`` (Hypatia keeps that key in ``shelf.toml``).
``backfill --status`` lives with ``backfill`` in :mod:`hypatia_lite.cli`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from hypatia_lite import shelf_settings as settings

COMMANDS = ("scope", "model", "shelf-config")
#: ``model register <name>``: these names pick a built-in embedder; any other is a model served
#: by the OpenAI-compatible endpoint given with ``--url``.
BUILT_IN = ("semantic", "hash")


def add_parsers(cmd: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the verbs to ``hypatia-lite``'s parser (``cmd`` adds one with ``--shelf``)."""
    p = cmd("scope", "Scopes in use on a shelf (scope list [--count])")
    p.add_argument("action", choices=["list"])
    p.add_argument("--count", action="store_true", help="How many entries carry each scope")
    p = cmd("model", "The embedding model registered for a shelf")
    p.add_argument("action", choices=["register", "show", "unregister"])
    p.add_argument("name", nargs="?", help="semantic, hash, or a model served at --url")
    p.add_argument("--url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--key-env", help="Environment variable holding the API key (never the key)")
    p = cmd("shelf-config", "Shelf settings (embedding.skip_tags)")
    p.add_argument("action", choices=["get", "set", "unset"])
    p.add_argument("key", choices=[settings.SKIP_TAGS_KEY])
    p.add_argument("value", nargs="?", help="Comma-separated tags (set)")


def run(args: argparse.Namespace, store: Any, out: Callable[[str], None]) -> int:
    """Run one verb on an open store; returns the exit code (errors raise ``StoreError``)."""
    from hypatia_lite.protocol import StoreError

    if args.command == "scope":
        counts = store.run_admin(lambda conn: settings.scope_counts(conn, store.dialect))
        for scope, count in counts:
            shown = scope if scope else '"" (global)'
            out(f"  {shown}  {count}" if args.count else f"  {shown}")
        out(f"  ({len(counts)} scopes)")
        return 0
    if args.command == "model":
        return _model(args, store, out)
    if args.action == "get":
        value = store.run_admin(lambda conn: settings.read(conn, args.key))
        out(json.dumps(value if value is not None else [], ensure_ascii=False))
        return 0
    if args.action == "set":
        tags = [t.strip() for t in (args.value or "").split(",") if t.strip()]
        if not tags:
            raise StoreError(f"validation error: {args.key} needs at least one tag")
        store.set_setting(args.key, tags)
        out(f"{args.key} = {json.dumps(tags, ensure_ascii=False)}")
        out("Run `hypatia-lite backfill` to retract the vectors of entries carrying them.")
        return 0
    store.set_setting(args.key, None)
    out(f"{args.key} unset")
    return 0


def _model(args: argparse.Namespace, store: Any, out: Callable[[str], None]) -> int:
    from hypatia_lite.protocol import StoreError

    if args.action == "show":
        spec = store.run_admin(lambda conn: settings.read(conn, settings.MODEL_KEY))
        out(f"Registered: {json.dumps(spec, sort_keys=True) if spec else 'none'}")
        identity = store.embedder.identity if store.embedder is not None else "none"
        out(f"In use here: {identity}")
        return 0
    if args.action == "unregister":
        store.set_setting(settings.MODEL_KEY, None)
        out(f"Model unregistered from shelf '{store.shelf}'")
        return 0
    if not args.name:
        raise StoreError("validation error: model register needs a model name")
    if args.name in BUILT_IN:
        if args.url:
            raise StoreError(f"validation error: '{args.name}' is built in: it takes no --url")
        spec = settings.model_spec(args.name)
    elif not args.url:
        raise StoreError(
            f"validation error: '{args.name}' is not built in ({', '.join(BUILT_IN)}):"
            " give the --url of the OpenAI-compatible server that serves it"
        )
    else:
        spec = settings.model_spec("openai", args.url, args.name, args.key_env or "")
    store.set_setting(settings.MODEL_KEY, spec)
    out(f"Registered model '{args.name}' for shelf '{store.shelf}'")
    out("Run `hypatia-lite backfill` to embed the shelf with it.")
    return 0
