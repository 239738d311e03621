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


def model_written(root: Path) -> dict[str, tuple[str, str | None]]:
    """Each entry the model wrote: its kind (summary, archive, work-unit) and session."""
    with sqlite3.connect(root / "data" / "state.db") as conn:
        rows = conn.execute("SELECT name, kind, session_id FROM provenance").fetchall()
    return {name: (kind, sid) for name, kind, sid in rows}


def consolidated(root: Path, store: dict[str, Any]) -> dict[str, Any]:
    """What the model wrote, as timing cannot change it: the messages some summary covers, and
    the lines of each session's summaries."""
    written = model_written(root)
    lines: dict[str, set[str]] = {}
    for row in store["knowledge"]:
        kind, sid = written.get(row["name"], ("", None))
        if kind == "summary":
            text = str(row["content"].get("data", ""))
            lines.setdefault(str(sid), set()).update(x for x in text.splitlines() if x.strip())
    covered = {
        row["tail"]
        for row in store["statements"]
        if row["relation"] == "summary" and row["tail"].startswith("msg-")
    }
    return {"summarised messages": covered, "summary lines": lines}


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


def problems(world: World) -> list[str]:
    """Every way ``world`` (settled) differs from the oracle, or holds what it must not."""
    found: list[str] = list(world.failures)
    clean = world.root.parent / "oracle"
    want_dump, want_state = oracle(world, clean)
    got_dump = dump(world.root)
    skip = set(model_written(world.root)) | set(model_written(clean))
    found += [f"store {line}" for line in _diff_dumps(got_dump, want_dump, skip)]
    got, want = consolidated(world.root, got_dump), consolidated(clean, want_dump)
    for what in want:
        if got[what] != want[what]:
            found.append(f"model-written {what} differ: {_delta(got[what], want[what])}")
    got_state = state_rows(world.root, without=world.forgotten)
    for table, rows in want_state.items():
        extra = sorted(set(got_state[table]) - set(rows))
        missing = sorted(set(rows) - set(got_state[table]))
        found += [f"state {table}: extra {row}" for row in extra]
        found += [f"state {table}: missing {row}" for row in missing]
    words = gone_words(world.logs.records, world.forgotten)
    for root, who in ((world.root, "world"), (world.root.parent / "oracle", "clean run")):
        for part in ("lite", "data"):
            for path, held in files_holding(root / part, words).items():
                found.append(f"{who} {Path(path).relative_to(root)} holds gone words {held}")
    verify = world.command("verify-forgetting")
    if verify.returncode != 0:
        found.append(f"verify-forgetting exited {verify.returncode}: {verify.stdout[-1500:]}")
    return found
