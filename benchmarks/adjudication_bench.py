"""Are work-unit adjudication's candidates at least as right with the fused ``similar``?

    .venv/bin/python benchmarks/adjudication_bench.py [--topics 300] [--seed 7]

A generated corpus, as the worker leaves it on a shelf: per topic one work unit
``wu-<topic>`` (embedded), a span summary ``sum-…`` (tags ``summary``, embedded) and raw log
messages ``msg-…`` (tags ``message``, ``embed: false``) that repeat the topic's words. Then one
new unit per topic that refines it (other wording, the same subject), and as many new units about
nothing stored (their right answer: no candidate). For each new unit the worker's own functions
pick the candidates: ``similar_query_text`` → ``similar(limit=similar_limit(5, True),
exclude_tags=similar_exclude_tags())`` → ``filter_candidates`` (distance ceiling 0.45, at most 3).

"Before" is ``similar`` as it was: the same rows ordered by cosine distance alone (the fused
``similar`` over every row, re-sorted by ``distance``, which is the same cosine distance as
before). It prints, for both: how often the refined unit's own topic is among the candidates,
how often it is the first, the share of candidates that are right, and how often a unit about
nothing stored still gets a candidate. The model call that follows (with the echo model: always
``unrelated``) does not change which candidates are shown, so it is not run.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from dsh_memory_worker.memory.consolidation.adjudication import (
    DEFAULT_CANDIDATES,
    filter_candidates,
    similar_exclude_tags,
    similar_limit,
    similar_query_text,
)
from hypatia_lite import shelves
from hypatia_lite.protocol import EntryWrite
from hypatia_lite.store import LiteStore

MODULES = [
    "parser",
    "scheduler",
    "exporter",
    "cache",
    "auth",
    "billing",
    "search",
    "upload",
    "mailer",
    "queue",
]
PARTS = [
    "config",
    "timeout",
    "retry",
    "index",
    "session",
    "token",
    "schema",
    "worker",
    "socket",
    "batch",
]
SYMPTOMS = [
    ("deadlock", "threads wait on each other", "hangs forever"),
    ("leak", "memory grows without bound", "keeps allocating"),
    ("race", "two writers interleave", "loses updates"),
    ("crash", "segfault on startup", "dies at once"),
    ("slowness", "latency climbs past a second", "takes too long"),
    ("corruption", "bytes on disk are mangled", "writes garbage"),
]
FIXES = [
    "added a lock around",
    "rewrote the loop in",
    "capped the buffer of",
    "validated the input to",
    "moved the call out of",
]
NOISE = [
    "the",
    "team",
    "met",
    "on",
    "tuesday",
    "to",
    "discuss",
    "roadmap",
    "hiring",
    "and",
    "the",
    "offsite",
    "agenda",
]


def topic_text(rng: random.Random, module: str, part: str, symptom: Any, fix: str) -> str:
    name, cause, effect = symptom
    return (
        f"The {module} {part} had a {name}: {cause}, so the {module} {effect}. "
        f"We {fix} the {part} of the {module}. " + " ".join(rng.sample(NOISE, 5))
    )


def refined_text(module: str, part: str, symptom: Any) -> tuple[str, str]:
    name, cause, _ = symptom
    title = f"{module.title()} {part} {name} follow-up"
    content = (
        f"Another look at the {name} in the {part} handling of {module}: {cause} again "
        f"under load; the earlier fix holds but needs a regression test."
    )
    return title, content


def build(rng: random.Random, topics: int) -> tuple[list[EntryWrite], list[tuple[str, str, str]]]:
    combos = [(m, p, s) for m in MODULES for p in PARTS for s in range(len(SYMPTOMS))]
    rng.shuffle(combos)
    used, unused = combos[:topics], combos[topics : 2 * topics]
    entries: list[EntryWrite] = []
    probes: list[tuple[str, str, str]] = []  # (title, content, right answer or "")
    for i, (module, part, s) in enumerate(used):
        text = topic_text(rng, module, part, SYMPTOMS[s], rng.choice(FIXES))
        wu = f"wu-{module}-{part}-{SYMPTOMS[s][0]}-{i:04d}"
        entries.append(EntryWrite(wu, text, tags=("work-unit", module), scopes=("demo",)))
        entries.append(EntryWrite(f"sum-s{i}-0-4", text, tags=("summary",), scopes=("demo",)))
        for n in range(3):
            entries.append(
                EntryWrite(
                    f"msg-s{i}-{n}",
                    f"## Role\n\nuser\n\n## Content\n\n{text}",
                    tags=("message",),
                    scopes=("demo",),
                    embed=False,
                )
            )
        probes.append((*refined_text(module, part, SYMPTOMS[s]), wu))
    for module, part, s in unused:
        probes.append((*refined_text(module, part, SYMPTOMS[s]), ""))
    return entries, probes


def score(candidate_lists: list[tuple[list[Any], str]]) -> dict[str, float]:
    related = [(c, right) for c, right in candidate_lists if right]
    unrelated = [c for c, right in candidate_lists if not right]
    shown = sum(len(c) for c, _ in related)
    return {
        "found": sum(any(x.name == right for x in c) for c, right in related) / len(related),
        "first": sum(bool(c) and c[0].name == right for c, right in related) / len(related),
        "precision": sum(x.name == right for c, right in related for x in c) / max(shown, 1),
        "false alarm": sum(bool(c) for c in unrelated) / max(len(unrelated), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    entries, probes = build(rng, args.topics)
    limit = similar_limit(DEFAULT_CANDIDATES, True)
    exclude = similar_exclude_tags()
    with tempfile.TemporaryDirectory(prefix="adjudication-bench-") as home:
        shelves.connect(Path(home), Path(home) / "s", "s")
        with LiteStore("s", home=Path(home)) as store:
            assert store.embedder is not None
            print(f"embedder: {store.embedder.identity}; {len(entries)} entries")
            for i in range(0, len(entries), 256):
                store.write_batch(entries[i : i + 256])
            before, after = [], []
            for title, content, right in probes:
                query = similar_query_text(title, content)
                rows = store.similar(query, limit=limit, exclude_tags=exclude)
                after.append((filter_candidates(rows, "wu-new"), right))
                every = store.similar(query, limit=len(entries), exclude_tags=exclude)
                nearest = sorted(every, key=lambda r: r.distance)[:limit]
                before.append((filter_candidates(nearest, "wu-new"), right))
    print(f"{len(probes)} new units ({args.topics} refine a stored one, the rest nothing)")
    print(f"  {'':<22}{'found':>8}{'first':>8}{'precision':>11}{'false alarm':>13}")
    for label, lists in (("before (cosine only)", before), ("after (fused)", after)):
        s = score(lists)
        print(
            f"  {label:<22}{100 * s['found']:>7.1f}%{100 * s['first']:>7.1f}%"
            f"{100 * s['precision']:>10.1f}%{100 * s['false alarm']:>12.1f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
