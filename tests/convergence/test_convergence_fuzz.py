"""Convergence whatever the timing (issue 32): whatever happens while the worker runs — what it
reads half-written, which fast path answers, which outage or crash comes, what the user forgets
or withdraws meanwhile — the store ends exactly as a clean run over the final logs leaves it, and
nothing withdrawn or forgotten survives in any byte.

Hypothesis draws a world (the overlapping, multilingual corpus with a seeded fork, a late marker,
raw and zstd logs, now and then the shipped DSH fixtures of a real fork and a compaction) and a
plan: logs made visible up to any byte (inside a line, a seed, a zstd frame), ``run --once`` by
every path (full; the at-rest answer; the empty-home first run, when a run comes before any log;
``--jobs 2``), runs killed before their N-th store write, model outages and recoveries, the clock
moved past back-offs, ``forget``, ``retract --all`` and ``reconsolidate``. Then time and cron
settle the world (:meth:`World.settle`) and :func:`convergence_oracle.problems` compares it with
a clean run in a fresh home (``tests/support/convergence_*.py``).

CI runs a few derandomized examples (no example database, so the outcome is the code's, not the
machine's history); ``MW_CONVERGENCE_EXAMPLES=N`` runs N and shrinks a failure to its minimal
plan (docs/development.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from convergence_logs import grow
from convergence_oracle import problems
from convergence_world import Model, World
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from model_server import ModelServer

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("MW_CONVERGENCE_EXAMPLES", "0") or 0)
#: The kinds of failure asserted (convergence_oracle.problems); by hand, while one kind is known
#: and open, ``MW_CONVERGENCE_KINDS=store,leaks`` looks for the others.
KINDS = {k for k in os.environ.get("MW_CONVERGENCE_KINDS", "").split(",") if k} or {
    "commands",
    "leaks",
    "store",
    "summaries",
    "state",
    "provenance",
    "verify-forgetting",
}
settings.register_profile(
    "convergence",
    max_examples=EXAMPLES or 4,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # CI reports the drawn plan as it failed; by hand (MW_CONVERGENCE_EXAMPLES) it is shrunk.
    phases=[Phase.explicit, Phase.generate, *([Phase.shrink] if EXAMPLES else [])],
)

RUN = st.tuples(st.just("run"), st.sampled_from(("plain", "full", "jobs2")))
EVENTS = st.one_of(
    RUN,
    RUN,
    RUN,  # thrice: most moments end in a run
    st.tuples(st.just("kill"), st.integers(1, 40), st.booleans()),
    st.tuples(st.just("outage"), st.booleans()),
    # a store that hangs, or alternately hangs and answers (bounded by the breaker's window)
    st.tuples(st.just("store"), st.sampled_from(("hang", "flap"))),
    st.tuples(st.just("clock"), st.sampled_from((1.5, 90.0, 4000.0))),
    st.tuples(st.just("forget"), st.integers(0, 5)),
    st.tuples(st.just("retract")),
    st.tuples(st.just("reconsolidate"), st.integers(0, 5)),
)
REVEAL = st.tuples(st.just("reveal"), st.integers(0, 5), st.floats(0, 1))
#: A plan is moments: mostly more of one log made visible, then something happens.
MOMENTS = st.lists(
    st.tuples(st.one_of(REVEAL, REVEAL, REVEAL, st.just(("reveal_all",)), st.none()), EVENTS),
    min_size=1,
    max_size=8,
)
WORLDS = st.fixed_dictionaries({"seed": st.integers(0, 2**16), "fixtures": st.booleans()})


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    started = ModelServer().start()
    yield started
    started.stop()


Plan = list[tuple[tuple[Any, ...] | None, tuple[Any, ...]]]


def converge(server: ModelServer, world: dict[str, Any], plan: Plan) -> None:
    """Grow the world, play the plan, settle, and fail with every problem found."""
    base = Path(tempfile.mkdtemp(prefix="mw-convergence-"))
    try:
        model = Model()
        server.responder = model
        logs = grow(base / "staging", world["seed"], fixtures=world["fixtures"])
        live = World(base / "world", logs, model, server)
        for reveal, event in plan:
            if reveal is not None:
                live.apply(reveal)
            live.apply(event)
        live.settle()
        found = problems(live)
        report = "\n".join(
            f"{kind}:\n  " + "\n  ".join(lines[:40]) for kind, lines in found.items() if lines
        )
        report += "\nwhat ran:\n  " + "\n  ".join(live.journal)
        # One assertion per kind: hypothesis tells different failures apart by where they fail.
        checked = {kind: lines if kind in KINDS else [] for kind, lines in found.items()}
        assert not checked["commands"], report
        assert not checked["leaks"], report
        assert not checked["store"], report
        assert not checked["summaries"], report
        assert not checked["state"], report
        assert not checked["provenance"], report
        assert not checked["verify-forgetting"], report
    finally:
        shutil.rmtree(base, ignore_errors=True)


@settings(settings.get_profile("convergence"))
@given(world=WORLDS, plan=MOMENTS)
# Found on the code of 2026-12-04 (issue 32), kept as regressions.
# 1: a fork child read inside its seed keeps the parent's messages as its own, for good.
@example(world={"seed": 0, "fixtures": False}, plan=[(("reveal", 2, 0.3), ("run", "plain"))])
# 2: a run during a consolidation back-off records the home at rest, and the at-rest answer
# then skips the consolidation owed once the back-off is over.
@example(
    world={"seed": 0, "fixtures": False},
    plan=[(("reveal_all",), ("outage", True)), (None, ("run", "plain"))],
)
# 9: ``forget`` while the model is down exits 1 and removes nothing; 3: once forgotten, the
# work unit's model-made name (it quotes the transcript) stays in audit.subject and
# provenance.name.
@example(
    world={"seed": 0, "fixtures": False},
    plan=[(("reveal_all",), ("run", "plain")), (None, ("outage", True)), (None, ("forget", 0))],
)
# A run killed between a summary's store write and its provenance row: the row never comes.
# (Found with the fixes of seedrest and robust merged:) a --jobs 2 run killed before its first
# store write leaves the fork child's progress without has_session_node, which a clean run sets.
@example(
    world={"seed": 0, "fixtures": False},
    plan=[(("reveal", 0, 0.0), ("run", "plain")), (("reveal_all",), ("kill", 1, True))],
)
@example(world={"seed": 9751, "fixtures": False}, plan=[(("reveal_all",), ("kill", 35, False))])
def test_every_timing_converges_to_the_clean_run(
    server: ModelServer, world: dict[str, Any], plan: Plan
) -> None:
    converge(server, world, plan)
