"""``hypatia-lite``: Hypatia's CLI (argv, stdout texts, JSON shapes, exit codes) over LiteStore.

Exit codes as Hypatia: 0 success (also "not found" on ``knowledge-get`` and empty results),
1 runtime error (``Error: <message>`` on stderr), 2 usage error (stderr starts ``error: ``).
Imports stay lazy so a call (the CLI adapter spawns one per operation) starts fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from hypatia_lite import cli_admin

PROG = "hypatia-lite"
NO_RESULTS = "No results found."
_COMMANDS = (
    "knowledge-create",
    "knowledge-get",
    "knowledge-update",
    "knowledge-delete",
    "statement-create",
    "statement-delete",
    "search",
    "similar",
    "query",
    "list",
    "connect",
    "disconnect",
    "backfill",
    "mcp",
    *cli_admin.COMMANDS,
)


class UsageError(Exception):
    """A command line that does not parse (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(
            f"{message}\n\nUsage: {self.format_usage().strip()[7:]}\n\n"
            "For more information, try '--help'."
        )


# ----------------------------------------------------------------------------- list parsing


def parse_tags(raw: str) -> list[str]:
    """``--tags``: split on commas, trim, keep blanks; ``""`` is no tags."""
    return [] if raw == "" else [item.strip() for item in raw.split(",")]


def parse_scopes(raw: str) -> list[str] | None:
    """``--scopes``: trimmed non-blank items, plus ``""`` (global) when the value ends with ','."""
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if raw.endswith(","):
        items.append("")
    return items or None


def parse_list(raw: str | None) -> list[str] | None:
    """``--synonyms``, ``--figures``, ``similar --tags/--exclude-tags``: trimmed, blanks dropped."""
    if raw is None:
        return None
    return [item.strip() for item in raw.split(",") if item.strip()] or None


# ---------------------------------------------------------------------------------- parser


def _build() -> _Parser:
    root = _Parser(
        prog=PROG,
        description="hypatia-lite: a Hypatia-compatible memory store "
        "(SQLite + FTS5) with Hypatia's CLI and MCP server.",
        allow_abbrev=False,
    )
    root.add_argument("-V", "--version", action="store_true", help="Print version")
    sub = root.add_subparsers(dest="command", metavar="<COMMAND>")

    def cmd(name: str, text: str, shelf: bool = True) -> _Parser:
        p: _Parser = sub.add_parser(name, help=text, description=text, allow_abbrev=False)
        if shelf:
            p.add_argument("-s", "--shelf", default="default", help="Shelf name [default: default]")
        return p

    def content_flags(p: _Parser, update: bool) -> None:
        p.add_argument("-d", "--data", help="Content data (use --data=<value> if it starts with -)")
        p.add_argument("-t", "--tags", help="Comma-separated tags (blank items are kept)")
        p.add_argument("--synonyms", help="Comma-separated synonyms")
        p.add_argument("-f", "--figures", help="Comma-separated figure URIs")
        p.add_argument(
            "--scopes", help='Comma-separated scopes; a trailing comma adds the global scope ""'
        )
        if not update:
            p.add_argument(
                "--no-embed",
                action="store_true",
                help="Store without an embedding vector (never found by similar)",
            )

    p = cmd("knowledge-create", "Create a knowledge entry")
    p.add_argument("name")
    content_flags(p, update=False)
    p = cmd("knowledge-get", "Get a knowledge entry")
    p.add_argument("name")
    p = cmd("knowledge-update", "Update fields of a knowledge entry (empty value clears)")
    p.add_argument("name")
    content_flags(p, update=True)
    p = cmd("knowledge-delete", "Delete a knowledge entry (statements are kept)")
    p.add_argument("name")
    p = cmd("statement-create", "Create a statement (idempotent)")
    for field in ("head", "relation", "tail"):
        p.add_argument(field)
    p.add_argument("-d", "--data", help="Content data (use --data=<value> if it starts with -)")
    p.add_argument("--synonyms", help='JSON object, e.g. {"head": ["alias"]}')
    p.add_argument(
        "--scopes", help='Comma-separated scopes; a trailing comma adds the global scope ""'
    )
    p.add_argument(
        "--no-embed",
        action="store_true",
        help="Store without an embedding vector (never found by similar)",
    )
    p = cmd("statement-delete", "Delete a statement")
    for field in ("head", "relation", "tail"):
        p.add_argument(field)
    p = cmd("search", "Full-text search (BM25)")
    p.add_argument("query")
    p.add_argument("-c", "--catalog", help="knowledge or statement (default: both)")
    p.add_argument("--limit", type=int, default=100, help="[default: 100]")
    p.add_argument("--offset", type=int, default=0, help="[default: 0]")
    p = cmd("similar", "Vector similarity search")
    p.add_argument("query")
    p.add_argument(
        "-t", "--target", default="both", help="knowledge, statement or both [default: both]"
    )
    p.add_argument("--limit", type=int, default=100, help="[default: 100]")
    p.add_argument("--tags", help="Only entries carrying at least one of these tags")
    p.add_argument("--exclude-tags", help="Skip entries carrying any of these tags")
    p.add_argument("--where", help="A JSE condition every result must satisfy")
    p = cmd("query", "Run a JSE query")
    p.add_argument("jse")
    cmd("list", "List registered shelves", shelf=False)
    p = cmd("connect", "Register a directory (or a postgresql:// URL) as a shelf", shelf=False)
    p.add_argument("path")
    p.add_argument("-n", "--name", help="Shelf name [default: the directory name]")
    p = cmd("disconnect", "Unregister a shelf", shelf=False)
    p.add_argument("name")
    p = cmd("backfill", "Embed entries still waiting for a vector")
    p.add_argument("--status", action="store_true", help="Report the embedding debt only")
    cmd("mcp", "Run the MCP server on stdio", shelf=False)
    cli_admin.add_parsers(cmd)
    return root


# -------------------------------------------------------------------------------- commands


def _clean(text: str) -> str:
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        from hypatia_lite.rows import well_formed

        return well_formed(text)
    return text


def _out(text: str) -> None:
    sys.stdout.write(_clean(text) + "\n")


def _rows(rows: list[dict[str, Any]]) -> None:
    from hypatia_lite.rows import to_json_text

    _out(to_json_text(rows) if rows else NO_RESULTS)


def _store(args: argparse.Namespace) -> Any:
    from hypatia_lite.store import LiteStore

    return LiteStore(args.shelf)


def _fail(message: str) -> int:
    sys.stderr.write(f"Error: {_clean(message)}\n")
    return 1


def _knowledge(args: argparse.Namespace) -> int:
    from hypatia_lite.store import unique_violation

    if args.command == "knowledge-update" and all(
        getattr(args, f) is None for f in ("data", "tags", "synonyms", "figures", "scopes")
    ):
        return _fail(
            "validation error: nothing to update: pass at least one of --data, "
            "--tags, --synonyms, --figures, --scopes"
        )

    with _store(args) as store:
        name = args.name
        if args.command == "knowledge-get":
            from hypatia_lite.rows import to_json_text

            row = store.knowledge_get_row(name)
            _out(to_json_text(row) if row is not None else f"Knowledge '{name}' not found.")
            return 0
        if args.command == "knowledge-delete":
            if not store.knowledge_delete(name):
                return _fail(f"not found: knowledge '{name}'")
            _out(f"Deleted knowledge: {name}")
            return 0
        if args.command == "knowledge-create":
            created = store.knowledge_create(
                name,
                args.data or "",
                tags=parse_tags(args.tags or ""),
                scopes=parse_scopes(args.scopes or ""),
                synonyms=parse_list(args.synonyms),
                figures=parse_list(args.figures),
                embed=not args.no_embed,
            )
            if not created:
                return _fail(unique_violation())
            _out(f"Created knowledge: {name}")
            return 0
        changed = store.knowledge_update(
            name,
            data=args.data,
            tags=None if args.tags is None else parse_tags(args.tags),
            scopes=None if args.scopes is None else (parse_scopes(args.scopes) or []),
            synonyms=None if args.synonyms is None else (parse_list(args.synonyms) or []),
            figures=None if args.figures is None else (parse_list(args.figures) or []),
        )
        _out(f"{'Updated knowledge' if changed else 'Knowledge unchanged'}: {name}")
        return 0


def _statement(args: argparse.Namespace) -> int:
    import json

    triple = f"({args.head}, {args.relation}, {args.tail})"
    with _store(args) as store:
        if args.command == "statement-delete":
            if not store.statement_delete(args.head, args.relation, args.tail):
                from hypatia_lite.protocol import csv_triple

                return _fail(
                    f"not found: statement '{csv_triple(args.head, args.relation, args.tail)}'"
                )
            _out(f"Deleted statement: {triple}")
            return 0
        synonyms = None
        if args.synonyms:
            try:
                synonyms = json.loads(args.synonyms)
            except ValueError as err:
                return _fail(f"JSE parse error: invalid synonyms JSON: {err}")
            if not isinstance(synonyms, dict):
                return _fail("JSE parse error: invalid synonyms JSON: expected an object")
        created = store.statement_create(
            args.head,
            args.relation,
            args.tail,
            data=args.data or "",
            scopes=parse_scopes(args.scopes or ""),
            synonyms=synonyms,
            embed=not args.no_embed,
        )
        _out(f"{'Created statement' if created else 'Statement already exists'}: {triple}")
        return 0


def _search(args: argparse.Namespace) -> int:
    if args.command == "query":
        with _store(args) as store:
            _rows(store.query_rows(args.jse))
        return 0
    if args.command == "search":
        if args.catalog not in (None, "knowledge", "statement"):
            return _fail(
                f"validation error: invalid catalog '{args.catalog}': must be "
                "'knowledge' or 'statement'"
            )
        with _store(args) as store:
            _rows(
                store.search_rows(
                    args.query, catalog=args.catalog, limit=args.limit, offset=args.offset
                )
            )
        return 0
    if args.target not in ("knowledge", "statement", "both"):
        return _fail(
            f"validation error: invalid target '{args.target}': must be 'knowledge', "
            "'statement', or 'both'"
        )
    where = None
    if args.where is not None:
        import json

        try:
            where = json.loads(args.where)
        except ValueError as err:
            return _fail(f"JSE parse error: invalid --where JSON: {err}")
    with _store(args) as store:
        _rows(
            store.similar_rows(
                args.query,
                target=args.target,
                limit=args.limit,
                tags=parse_list(args.tags) or (),
                exclude_tags=parse_list(args.exclude_tags) or (),
                where=where,
            )
        )
    return 0


def _shelves(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hypatia_lite import shelves

    home = shelves.lite_home()
    if args.command == "list":
        listing = shelves.listing(home)
        width = max((len(name) for name, _, _ in listing), default=0)
        for name, path, ok in listing:
            _out(f"  {name:<{width}}  {path}  [{'connected' if ok else 'disconnected'}]")
        if not listing:
            _out("No shelves registered.")
        return 0
    if args.command == "connect":
        location = args.path if shelves.is_url(args.path) else Path(args.path)
        name = shelves.connect(home, location, args.name)
        _out(f"Shelf '{name}' connected and registered.")
        return 0
    if args.command == "disconnect":
        shelves.disconnect(home, args.name)
        _out(f"Shelf '{args.name}' disconnected and unregistered.")
        return 0
    with _store(args) as store:
        if args.status:
            return _backfill_status(store)
        skipped = store.retract_skipped()  # the shelf's embedding.skip_tags
        created = store.backfill(progress=_backfill_progress)
        errors = sum(store.pending_embeddings().values())
    _out(f"Backfill complete: {created} vectors created, {skipped} skipped, {errors} errors")
    if errors:
        return _fail(f"embedding error: {errors} entries could not be embedded and stay pending")
    return 0


def _backfill_progress(done: int, owed: int) -> None:
    sys.stderr.write(f"Backfill: {done}/{owed} vectors created\n")
    sys.stderr.flush()


def _backfill_status(store: Any) -> int:
    """``backfill --status``: the embedding debt of the shelf, per catalog."""
    model = store.embedder.identity if store.embedder is not None else None
    pending = store.pending_embeddings()
    _out(f"Embedding model: {model or 'none'}")
    for catalog, count in pending.items():
        _out(f"  {catalog}: {count} pending")
    _out(f"  ({sum(pending.values())} pending)")
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    command: str = args.command
    if command == "mcp":
        from hypatia_lite.mcp_server import serve

        return serve()
    if command.startswith("knowledge-"):
        return _knowledge(args)
    if command.startswith("statement-"):
        return _statement(args)
    if command in ("search", "similar", "query"):
        return _search(args)
    if command in cli_admin.COMMANDS:
        with _store(args) as store:
            return cli_admin.run(args, store, _out)
    return _shelves(args)


def _first_command(argv: list[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg in ("-h", "--help", "-V", "--version"):
            return None
    return None


def run(argv: list[str]) -> int:
    """Run one command line; returns the exit code."""
    candidate = _first_command(argv)
    if candidate is not None and candidate not in _COMMANDS:
        sys.stderr.write(
            f"error: unrecognized subcommand '{candidate}'\n\n"
            f"Usage: {PROG} <COMMAND>\n\nFor more information, try '--help'.\n"
        )
        return 2
    parser = _build()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            raise UsageError(f"unexpected argument '{extra[0]}' found")
    except UsageError as err:
        sys.stderr.write(f"error: {err}\n")
        return 2
    if args.version:
        from hypatia_lite import __version__

        _out(f"{PROG} {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from hypatia_lite.protocol import StoreError

    try:
        return _dispatch(args)
    except StoreError as err:
        return _fail(str(err))
    except OSError as err:
        return _fail(f"IO error: {err}")


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point ``hypatia-lite``."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8", errors="replace")
    try:
        code = run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
