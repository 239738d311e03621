"""``hypatia-lite`` CLI as a real subprocess: Hypatia's argv, stdout texts, JSON and exit codes.

Each command is a separate process with its own argv, environment, working directory, stdout,
stderr and exit status; :class:`Cli` starts it through the fork server's launcher (``cli_fork``:
the command forked from a parent that imported hypatia-lite once, its standard streams the
launcher's pipes). ``--version`` and the invalid UTF-8 argv run the installed console script as a
fresh interpreter, so the entry point and the interpreter's own argv decoding stay covered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import launcher

from hypatia_lite.store import LiteStore

BIN = Path(sys.executable).parent / "hypatia-lite"
pytestmark = pytest.mark.integration


class Cli:
    def __init__(self, home: Path, command: str | None = None) -> None:
        self.home = home
        self.command = command or launcher("hypatia-lite")
        self.env = {**os.environ, "HYPATIA_LITE_HOME": str(home)}
        self.env.pop("HYPATIA_LITE_EMBEDDER", None)
        self.env.pop("HYPATIA_LITE_EMBED_URL", None)

    def __call__(self, *argv: str | bytes, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.command, *argv],
            capture_output=True,
            text=True,
            env={**self.env, **env},
            cwd=self.home.parent,
            timeout=60,
            check=False,
        )

    def json(self, *argv: str) -> object:
        done = self(*argv)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "home")


def test_version_and_lazy_imports(cli: Cli) -> None:
    done = Cli(cli.home, str(BIN))("--version")  # the installed console script, a fresh process
    assert done.returncode == 0
    assert done.stdout.startswith("hypatia-lite ")
    probe = (
        "import sys; from hypatia_lite.cli import run; run(['--version']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'mcp', 'openai', 'pydantic', 'httpx2', 'sqlite3', 'sqlean', 'anyio'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=cli.env
    ).stdout
    assert out.splitlines()[-1] == "[]"


def test_knowledge_create_get_and_duplicate(cli: Cli) -> None:
    done = cli(
        "knowledge-create",
        "msg-s-1",
        "--shelf",
        "default",
        "--data=-starts with dash",
        "--tags",
        "message, summary 1",
        "--scopes",
        "proj,",
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "Created knowledge: msg-s-1\n", "")
    dup = cli("knowledge-create", "msg-s-1", "--shelf", "default", "--data=other")
    assert dup.returncode == 1
    assert dup.stdout == ""
    assert (
        dup.stderr == "Error: storage error: SQLite error: UNIQUE constraint failed: "
        "knowledge.name\n"
    )
    got = cli("knowledge-get", "msg-s-1", "--shelf", "default")
    assert got.returncode == 0
    row = json.loads(got.stdout)
    assert row["content"] == {
        "format": "markdown",
        "data": "-starts with dash",
        "tags": ["message", "summary 1"],
        "synonyms": None,
        "figures": None,
        "scopes": ["proj", ""],
    }
    assert list(row) == ["content", "created_at", "name"]
    assert got.stdout.startswith('{\n  "content": {\n    "data": "-starts with dash",\n')
    missing = cli("knowledge-get", "nope", "--shelf", "default")
    assert (missing.returncode, missing.stdout) == (0, "Knowledge 'nope' not found.\n")


@pytest.mark.parametrize(
    ("tags", "scopes", "want_tags", "want_scopes"),
    [
        (",", ",", ["", ""], [""]),
        ("a,,b", "p", ["a", "", "b"], ["p"]),
        ("", "", [], None),
        (" x ", "p, ", ["x"], ["p"]),
        ("x", "p,q,", ["x"], ["p", "q", ""]),
    ],
)
def test_list_parsing_rules(
    cli: Cli, tags: str, scopes: str, want_tags: list[str], want_scopes: list[str] | None
) -> None:
    assert cli("knowledge-create", "k", "--tags", tags, "--scopes", scopes).returncode == 0
    content = cli.json("knowledge-get", "k")["content"]  # type: ignore[index]
    assert (content["tags"], content["scopes"]) == (want_tags, want_scopes)


def test_large_data_argument(cli: Cli) -> None:
    data = "x" * (96 * 1024 - 10) + "é"
    assert cli("knowledge-create", "big", f"--data={data}").returncode == 0
    assert cli.json("knowledge-get", "big")["content"]["data"] == data  # type: ignore[index]


def test_usage_errors_exit_2(cli: Cli) -> None:
    done = cli("xyz")
    assert done.returncode == 2
    assert done.stderr.startswith("error: unrecognized subcommand 'xyz'\n")
    done = cli("knowledge-create", "k", "--bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("error: unexpected argument '--bogus' found")
    done = cli("knowledge-create", "k", "--data", "-x")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    done = cli("search", "q", "--limit", "many")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert cli("knowledge-get").returncode == 2


def test_help_probes_advertise_features(cli: Cli) -> None:
    for command, flag in (
        ("knowledge-create", "--no-embed"),
        ("statement-create", "--no-embed"),
        ("similar", "--exclude-tags"),
    ):
        done = cli(command, "--help")
        assert done.returncode == 0
        assert flag in done.stdout
    assert cli("mcp", "--help").returncode == 0
    assert "knowledge-update" in cli("--help").stdout


def test_statements(cli: Cli) -> None:
    done = cli(
        "statement-create",
        "Alice, Jr.",
        "knows",
        "Bob",
        "--shelf",
        "default",
        "--data=d",
        "--scopes",
        "p",
    )
    assert (done.returncode, done.stdout) == (0, "Created statement: (Alice, Jr., knows, Bob)\n")
    again = cli("statement-create", "Alice, Jr.", "knows", "Bob", "--data=other")
    assert (again.returncode, again.stdout) == (
        0,
        "Statement already exists: (Alice, Jr., knows, Bob)\n",
    )
    rows = cli.json("query", '["$statement", ["$triple", "Alice, Jr.", "knows", "Bob"]]')
    assert rows == [
        {
            "triple": '"Alice, Jr.",knows,Bob',
            "head": "Alice, Jr.",
            "relation": "knows",
            "tail": "Bob",
            "created_at": rows[0]["created_at"],
            "content": {
                "format": "markdown",
                "data": "d",
                "tags": [],
                "synonyms": None,
                "figures": None,
                "scopes": ["p"],
            },
        }
    ]
    bad = cli("statement-create", "a", "b", "c", "--synonyms", "{nope")
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: JSE parse error: invalid synonyms JSON: ")
    assert cli("statement-create", "a", "b", "c", "--synonyms", '{"head": ["A"]}').returncode == 0
    syn = cli.json("query", '["$statement", ["$eq", "head", "a"]]')[0]["content"]  # type: ignore
    assert syn["synonyms"] == {"head": ["A"]}
    gone = cli("statement-delete", "Alice, Jr.", "knows", "Bob")
    assert (gone.returncode, gone.stdout) == (0, "Deleted statement: (Alice, Jr., knows, Bob)\n")
    missing = cli("statement-delete", "Alice, Jr.", "knows", "Bob")
    assert (missing.returncode, missing.stderr) == (
        1,
        "Error: not found: statement '\"Alice, Jr.\",knows,Bob'\n",
    )


def test_update_and_delete_texts(cli: Cli) -> None:
    cli("knowledge-create", "k", "--data=one", "--tags", "a")
    nothing = cli("knowledge-update", "k")
    assert (nothing.returncode, nothing.stderr) == (
        1,
        (
            "Error: validation error: nothing to update: pass at least one of --data, --tags, "
            "--synonyms, --figures, --scopes\n"
        ),
    )
    assert cli("knowledge-update", "k", "--data=two").stdout == "Updated knowledge: k\n"
    assert cli("knowledge-update", "k", "--data=two").stdout == "Knowledge unchanged: k\n"
    assert cli("knowledge-update", "k", "-t", "", "--scopes", "").stdout == "Updated knowledge: k\n"
    content = cli.json("knowledge-get", "k")["content"]  # type: ignore[index]
    assert (content["data"], content["tags"], content["scopes"]) == ("two", [], None)
    missing = cli("knowledge-update", "nope", "--data=x")
    assert (missing.returncode, missing.stderr) == (1, "Error: not found: knowledge 'nope'\n")
    assert cli("knowledge-delete", "k").stdout == "Deleted knowledge: k\n"
    again = cli("knowledge-delete", "k")
    assert (again.returncode, again.stderr) == (1, "Error: not found: knowledge 'k'\n")


def test_search_similar_query_outputs(cli: Cli) -> None:
    cli("knowledge-create", "zebra", "--data=striped animal", "--tags", "animal")
    cli("knowledge-create", "tax", "--data=quarterly filing", "--tags", "work", "--no-embed")
    rows = cli.json("search", "zebra", "-c", "knowledge", "--limit", "5", "--shelf", "default")
    assert rows == [
        {
            "id": 1,
            "catalog": "knowledge",
            "key": "zebra",
            "rank": rows[0]["rank"],
            "content": '{"format":"markdown","data":"striped animal","tags":["animal"],'
            '"synonyms":null,"figures":null,"scopes":null}',
        }
    ]
    assert cli("search", "unicorn", "-c", "knowledge").stdout == "No results found.\n"
    sim = cli.json(
        "similar", "striped", "-t", "knowledge", "--limit", "5", "--exclude-tags", "work"
    )
    assert [r["name"] for r in sim] == ["zebra"]  # "tax" was written with --no-embed
    assert set(sim[0]) == {"name", "content", "distance"}
    both = cli.json("similar", "striped")
    assert [(r["catalog"], r["name"]) for r in both] == [("knowledge", "zebra")]
    assert cli("similar", "x", "--exclude-tags", "animal,work").stdout == "No results found.\n"
    off = cli("similar", "striped", HYPATIA_LITE_EMBEDDER="none")
    assert (off.returncode, off.stderr) == (
        1,
        "Error: model unavailable: no embedding provider configured\n",
    )
    bad_target = cli("similar", "x", "-t", "all")
    assert bad_target.returncode == 1
    assert bad_target.stderr == (
        "Error: validation error: invalid target 'all': must be "
        "'knowledge', 'statement', or 'both'\n"
    )
    query = cli.json("query", '{"$knowledge": [["$like", "name", "ZEB%"]], "limit": 1}')
    with LiteStore(home=cli.home) as store:
        assert query == store.query_rows(["$knowledge", ["$eq", "name", "zebra"]])
    assert cli("query", '["$knowledge", ["$eq", "name", "x"]]').stdout == "No results found.\n"
    broken = cli("query", "not json")
    assert broken.returncode == 1
    assert broken.stderr.startswith("Error: JSE parse error: invalid JSON: ")
    trailing = cli("query", '["$not-summaried", "message", {"limit": 1}]')
    assert trailing.returncode == 1
    assert "unexpected node in condition context" in trailing.stderr


def test_shelves(cli: Cli, tmp_path: Path) -> None:
    unknown = cli("knowledge-get", "k", "--shelf", "nope")
    assert (unknown.returncode, unknown.stderr) == (
        1,
        "Error: shelf error: shelf 'nope' is not connected\n",
    )
    done = cli("connect", str(tmp_path / "proj-shelf"), "-n", "proj")
    assert (done.returncode, done.stdout) == (0, "Shelf 'proj' connected and registered.\n")
    again = cli("connect", str(tmp_path / "other"), "-n", "proj")
    assert (again.returncode, again.stderr) == (
        1,
        "Error: shelf error: shelf 'proj' is already connected\n",
    )
    assert cli("knowledge-create", "k", "-s", "proj", "--data=p").returncode == 0
    assert cli("knowledge-get", "k").stdout == "Knowledge 'k' not found.\n"
    assert cli.json("knowledge-get", "k", "-s", "proj")["content"]["data"] == "p"  # type: ignore
    assert cli("list").stdout == (
        f"  default  {cli.home / 'default'}  [connected]\n"
        f"  proj     {tmp_path / 'proj-shelf'}  [connected]\n"
    )
    assert cli("disconnect", "proj").stdout == "Shelf 'proj' disconnected and unregistered.\n"
    assert cli("disconnect", "proj").stderr == "Error: shelf error: shelf 'proj' is not connected\n"


def test_invalid_utf8_argv_is_stored_as_replacement_characters(cli: Cli) -> None:
    done = subprocess.run(
        [str(BIN), "knowledge-create", b"bad\xff", b"--data=x\xfey"],
        capture_output=True,
        env=cli.env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8") == "Created knowledge: bad\ufffd\n"
    row = cli.json("knowledge-get", "bad\ufffd")
    assert row["content"]["data"] == "x\ufffdy"  # type: ignore[index]


def test_embedder_settings_only_affect_similar_and_backfill(cli: Cli) -> None:
    bad = {"HYPATIA_LITE_EMBEDDER": "openai"}
    assert cli("knowledge-create", "k", "--data=zebra", **bad).returncode == 0
    off = cli("similar", "zebra", **bad)
    assert (off.returncode, off.stderr) == (
        1,
        "Error: model unavailable: HYPATIA_LITE_EMBEDDER=openai needs HYPATIA_LITE_EMBED_URL\n",
    )
    none = cli("knowledge-create", "later", "--data=zebra", HYPATIA_LITE_EMBEDDER="none")
    assert none.returncode == 0
    filled = cli("backfill")
    assert (filled.returncode, filled.stdout) == (
        0,
        "Backfill complete: 2 vectors created, 0 skipped, 0 errors\n",
    )
    names = sorted(r["name"] for r in cli.json("similar", "zebra", "-t", "knowledge"))
    assert names == ["k", "later"]
