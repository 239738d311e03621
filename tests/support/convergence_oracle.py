"""The convergence fuzzer's oracle and checks (``tests/convergence``).

The oracle is never the code's own rules: it is a clean ``run --once`` over the **final** logs
(every byte written, minus the sessions the world forgot) in a fresh home, fresh state and fresh
at-rest cache, with the model up. A world has converged when

* its full store dump equals the oracle's: every entry's name and content and every edge, but
  for what the model wrote (summaries, archives, work units: the ``provenance`` rows). A
  session's consolidation is incremental by design — a run that finds 31 events summarises 31,
  the next one the rest — so how that text is cut into entries (and so their names, the archives
  over them, the titles of work units) depends on when the log was read. For those the
  invariants are compared: which messages some summary covers, and every line of each session's
  summaries;
* the state database's columns that hold no message text (watermarks, cuts, titles' seqs, which
  entries were written by the model for which session) equal the oracle's,
* no byte of its store or state files holds a word only withdrawn or forgotten messages held
  (the generator's own record says which: :mod:`corpus`), and
* ``verify-forgetting`` exits 0.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from convergence_world import Model, World
from corpus import SYLLABLES, SessionRecord, files_holding
from pipeline_support import dump

#: The state columns that hold no message text, per table (the key columns first).
STATE_COLUMNS = {
    "sessions": (
        "session_id",
        "generation",
        "project",
        "inherited_cut",
        "durable_end_seq",
        "last_turn_end_seq",
        "last_title_seq",
        "closed_at IS NOT NULL",
        "forgotten",
    ),
    "progress": (
        "shelf",
        "session_id",
        "last_logged_seq",
        "last_consolidated_seq",
        "has_session_node",
    ),
}


def state_rows(root: Path, *, without: set[str] = frozenset()) -> dict[str, list[tuple[Any, ...]]]:  # type: ignore[assignment]
    """Those columns of every row, sorted, leaving out the sessions ``without``."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with sqlite3.connect(root / "data" / "state.db") as conn:
        for table, columns in STATE_COLUMNS.items():
            rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            sid = columns.index("session_id")
            out[table] = sorted(r for r in rows if r[sid] not in without)
    return out


#: The names the model's entries get: ``sum-<session>-<from>-<to>`` (a summary), ``sum2-…``,
#: ``sum3-…`` (archives), ``wu-<slug>-<digest>`` (a work unit).
MODEL_WRITTEN = re.compile(r"^(sum\d*|wu)-")
SUMMARY = re.compile(r"^sum-(.+)-\d+-\d+$")


def provenance(root: Path) -> dict[str, tuple[str, str | None]]:
    """Each ``provenance`` row: the entry the model wrote, its kind and session."""
    with sqlite3.connect(root / "data" / "state.db") as conn:
        rows = conn.execute("SELECT name, kind, session_id FROM provenance").fetchall()
    return {name: (kind, sid) for name, kind, sid in rows}


def consolidated(root: Path, store: dict[str, Any]) -> dict[str, Any]:
    """What the model wrote, as timing cannot change it: the messages some summary covers, the
    lines of each session's summaries, and whether the store's model-written entries and the
    state's provenance rows name the same entries."""
    lines: dict[str, set[str]] = {}
    names = {row["name"] for row in store["knowledge"] if MODEL_WRITTEN.match(row["name"])}
    for row in store["knowledge"]:
        found = SUMMARY.match(row["name"])
        if found:
            text = str(row["content"].get("data", ""))
            lines.setdefault(found.group(1), set()).update(
                x for x in text.splitlines() if x.strip()
            )
    covered = {
        row["tail"]
        for row in store["statements"]
        if row["relation"] == "summary" and row["tail"].startswith("msg-")
    }
    recorded = {_unit_key(name) for name in provenance(root)}
    keys = {_unit_key(name) for name in names}
    return {
        "summarised messages": covered,
        "summary lines": lines,
        "entries without a provenance row": keys - recorded,
        "provenance rows without an entry": recorded - keys,
    }


#: A work unit's entry (``wu-<slug>-<digest>``) and the stable id its provenance row may name
#: instead of the model-made slug (``wu-*-<digest>-<id>``).
_UNIT_ENTRY = re.compile(r"^wu-.*-([0-9a-f]{8})$")
_UNIT_ID = re.compile(r"^wu-\*-([0-9a-f]{8})-[0-9a-f]+$")


def _unit_key(name: str) -> str:
    """The same key for a work unit's entry name and its provenance row's name, either form."""
    found = _UNIT_ID.match(name) or _UNIT_ENTRY.match(name)
    return f"work unit {found.group(1)}" if found else name


def oracle(world: World, root: Path) -> tuple[dict[str, Any], dict[str, list[tuple[Any, ...]]]]:
    """The clean run's store dump and state rows (see the module docstring)."""
    shutil.rmtree(root, ignore_errors=True)
    clean = World(root, world.logs, Model(), world.server)
    world.logs.write_final(clean.dsh, without=frozenset(world.forgotten))
    done = clean.command("run", "--once")
    assert done.returncode == 0, f"the clean run failed:\n{done.stderr[-3000:]}"
    return dump(root), state_rows(root)


def gone_words(records: list[SessionRecord], forgotten: set[str]) -> set[str]:
    """Made-up words (corpus.pseudo_word) only withdrawn messages of kept sessions and messages
    of forgotten sessions held; by their first six letters, none in any text that is kept (the
    full-text index keeps stems: a byte check looks for those six letters)."""
    live = [r for r in records if r.session_id not in forgotten]
    kept = " ".join(m.text for r in live for m in r.kept()).lower()
    gone = [m for r in live for m in r.withdrawn()]
    gone += [m for r in records if r.session_id in forgotten for m in r.said]
    return {
        w.lower()
        for m in gone
        for w in re.findall(r"\w+", m.text)
        if w.isascii()
        and w.isalpha()
        and len(w) >= 6
        and any(w.lower().startswith(s) for s in SYLLABLES)
        and w[:6].lower() not in kept
    }


def _diff_dumps(got: dict[str, Any], want: dict[str, Any], skip: set[str]) -> list[str]:
    """Entries and edges (but those touching ``skip``) that are extra, missing or differ."""
    out = []
    for rows, key in (("knowledge", "name"), ("statements", "triple")):

        def kept(row: dict[str, Any]) -> bool:
            return not {row.get("name"), row.get("head"), row.get("tail")} & skip

        have = {str(row[key]): row for row in got[rows] if kept(row)}
        need = {str(row[key]): row for row in want[rows] if kept(row)}
        for name in sorted(have.keys() | need.keys()):
            if name not in need:
                out.append(f"{rows}: extra {name}")
            elif name not in have:
                out.append(f"{rows}: missing {name}")
            elif have[name] != need[name]:
                out.append(f"{rows}: differs {name}")
    return out


def _delta(got: Any, want: Any) -> str:
    if isinstance(want, set):
        return f"extra {sorted(got - want)[:8]}, missing {sorted(want - got)[:8]}"
    keys = sorted(set(got) | set(want))
    return "; ".join(
        f"{k}: {_delta(got.get(k, set()), want.get(k, set()))}"
        for k in keys
        if got.get(k) != want.get(k)
    )


def columns_holding(database: Path, words: set[str]) -> list[str]:
    """``table.column`` of each state column that holds one of ``words`` (first six letters)."""
    out = []
    with sqlite3.connect(database) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for column in [r[1] for r in conn.execute(f"PRAGMA table_info('{table}')")]:
                held = [
                    w
                    for w in sorted(words)
                    if conn.execute(
                        f'SELECT 1 FROM "{table}" WHERE lower(CAST("{column}" AS TEXT)) LIKE ?',
                        (f"%{w[:6]}%",),
                    ).fetchone()
                ]
                if held:
                    out.append(f"{table}.{column} {held}")
    return out


def problems(world: World) -> dict[str, list[str]]:
    """Every way ``world`` (settled) differs from the oracle or holds what it must not, by kind:
    ``commands`` (a ``forget`` that failed), ``leaks``, ``store``, ``summaries`` (the messages
    summaries cover, their lines), ``state``, ``provenance`` (a row for each model-written entry,
    an entry for each row), ``verify-forgetting``."""
    found: dict[str, list[str]] = {"commands": list(world.failures)}
    clean = world.root.parent / "oracle"
    want_dump, want_state = oracle(world, clean)
    got_dump = dump(world.root)
    words = gone_words(world.logs.records, world.forgotten)
    found["leaks"] = []
    for root, who in ((world.root, "world"), (clean, "clean run")):
        for part in ("lite", "data"):
            for path, held in files_holding(root / part, words).items():
                found["leaks"].append(f"{who} {Path(path).relative_to(root)} holds {held}")
        found["leaks"] += [
            f"{who} state column {c}" for c in columns_holding(root / "data" / "state.db", words)
        ]
    skip = {row["name"] for row in (*got_dump["knowledge"], *want_dump["knowledge"])}
    skip = {name for name in skip if MODEL_WRITTEN.match(name)}
    skip |= set(provenance(world.root)) | set(provenance(clean))
    found["store"] = _diff_dumps(got_dump, want_dump, skip)
    got_state = state_rows(world.root, without=world.forgotten)
    found["state"] = []
    for table, rows in want_state.items():
        found["state"] += [f"{table}: extra {r}" for r in sorted(set(got_state[table]) - set(rows))]
        found["state"] += [
            f"{table}: missing {r}" for r in sorted(set(rows) - set(got_state[table]))
        ]
    got, want = consolidated(world.root, got_dump), consolidated(clean, want_dump)
    for kind, whats in (
        ("summaries", ("summarised messages", "summary lines")),
        ("provenance", ("entries without a provenance row", "provenance rows without an entry")),
    ):
        found[kind] = [
            f"{what} differ: {_delta(got[what], want[what])}"
            for what in whats
            if got[what] != want[what]
        ]
    verify = world.command("verify-forgetting")
    found["verify-forgetting"] = (
        [f"exited {verify.returncode}: {verify.stdout[-1500:]}"] if verify.returncode else []
    )
    return found
