"""Redaction benchmark: its share of the end-to-end time, measured in one run.

Generates a DSH home of ``--sessions`` titled sessions × ``--turns`` chat turns whose prompts and
answers are paragraphs of this repository's README and lines of its Python source (ordinary prose
and code), one message in ``--secret-every`` carrying a form of the redaction test table. Then:

1. end to end: the embedded pipeline as ``memory-worker run --once`` runs it (watcher +
   in-process runner + in-process hypatia-lite), with every call of the redaction engine timed in
   place — the printed ratio is redaction seconds / end-to-end seconds;
2. redaction alone over the same message texts (µs per message, MB/s);
3. the one-off cost of importing and loading the rules and compiling every pattern (TOML parse,
   keyword automaton, ~65 regexes; normally each is compiled on first use), in a fresh Python
   process. Steps 1 and 2 run with the rules already compiled.

.venv/bin/python benchmarks/redaction_bench.py [--sessions 40] [--turns 60] [--secret-every 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from redaction_cases import POSITIVE
from worker_bench import embedded_rate
from worker_dshgen import SessionLogWriter

from dsh_memory_worker.memory.redaction import engine
from dsh_memory_worker.memory.redaction.rules import load

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "out"


def corpus() -> list[str]:
    """Ordinary message texts: README paragraphs and 1–12-line runs of Python source."""
    texts = [p.strip() for p in (REPO / "README.md").read_text().split("\n\n") if p.strip()]
    for path in sorted((REPO / "memory").rglob("*.py")):
        lines = path.read_text().splitlines()
        size = 1 + len(texts) % 12
        texts += ["\n".join(lines[i : i + size]) for i in range(0, len(lines), size)]
    return [t for t in texts if t.strip()]


def generate(home: Path, sessions: int, turns: int, secret_every: int) -> list[str]:
    """Write the home; returns every message text written."""
    plain = corpus()
    written: list[str] = []
    n = 0
    for s in range(sessions):
        log = SessionLogWriter(home, f"redact-bench-{s:04d}", f"/home/dev/project-{s % 5}")
        for t in range(turns):
            pair: list[str] = []
            for _ in range(2):
                n += 1
                if n % secret_every == 0:
                    pair.append(f"{plain[n % len(plain)]}\n{POSITIVE[n % len(POSITIVE)][1]}")
                else:
                    pair.append(plain[n % len(plain)])
            seqs = log.turn(pair[0], pair[1])
            if t == 0:
                log.title(f"Benchmark session {s}", seqs.user_seq)
            written += pair
            if t % 4 == 3:
                log.flush()
        log.flush()
    return written


def timed_engine() -> tuple[list[float], Callable[[], None]]:
    """Time every call of the engine's search (all redaction goes through it); returns the
    accumulator and a function that restores the engine."""
    spent = [0.0]
    original = engine.find_secrets

    def find_secrets(*args: Any, **kwargs: Any) -> list[engine.Finding]:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    engine.find_secrets = find_secrets  # type: ignore[assignment]

    def restore() -> None:
        engine.find_secrets = original  # type: ignore[assignment]

    return spent, restore


def load_cost() -> float:
    """Import, load and compile everything in a fresh process (only the redaction package)."""
    code = (
        "import time; t = time.perf_counter(); from dsh_memory_worker.memory.redaction.rules "
        "import load; "
        "load().compile(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--secret-every", type=int, default=20)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="redaction-bench-"))
    try:
        texts = generate(root / "dsh", args.sessions, args.turns, args.secret_every)
        chars = sum(len(t) for t in texts)
        print(f"generated {args.sessions} sessions, {len(texts)} messages, {chars} characters")
        load().compile()  # the one-off cost is measured apart (3.)
        spent, restore = timed_engine()
        try:
            e2e = embedded_rate(root)
        finally:
            restore()
        share = spent[0] / e2e["seconds"]
        print(f"end to end (embedded, hypatia-lite): {e2e['written']} entries in "
              f"{e2e['seconds']:.2f} s, of which redaction {spent[0]:.3f} s; "
              f"ratio redaction / end to end {share:.3f}")  # fmt: skip
        started = time.perf_counter()
        for text in texts:
            engine.redact(text)
        alone = time.perf_counter() - started
        per_message_us = alone / len(texts) * 1e6
        print(f"redaction alone: {len(texts)} messages in {alone:.3f} s = "
              f"{per_message_us:.1f} us/message, {chars / alone / 1e6:.1f} MB/s")  # fmt: skip
        load_s = load_cost()
        print(f"rules load + compiling every rule (fresh process, once): {load_s * 1000:.0f} ms")
        result = {
            "messages": len(texts),
            "characters": chars,
            "end_to_end_seconds": e2e["seconds"],
            "written": e2e["written"],
            "redaction_seconds_in_pipeline": spent[0],
            "ratio_redaction_to_end_to_end": share,
            "redaction_alone_seconds": alone,
            "us_per_message": per_message_us,
            "rules_load_seconds": load_s,
        }
        OUT.mkdir(exist_ok=True)
        (OUT / "redaction_bench.json").write_text(json.dumps(result, indent=2))
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
