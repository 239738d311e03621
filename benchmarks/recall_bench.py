"""Recall of hypatia-lite's ``similar`` on LoCoMo, under the real Hypatia's own protocol.

    .venv/bin/python benchmarks/recall_bench.py --data /path/to/locomo10.json [--scale 8]

The data is public (``locomo10.json`` in the repository ``MarchLiu/hypatia``, from Maharana et
al., ACL 2024); keep it outside this repository. The protocol is Hypatia's ``tests/locomo.rs``:

* every turn of every session is one knowledge entry ``<sample_id>__<dia_id with : as _>``,
  data ``[<speaker>] <text>``, tags ``<sample_id>, session_<n>, <speaker>, <speaker_a>,
  <speaker_b>, <date>``; each session's event summary (``<sid>__events_<n>``, tags ``<sid>,
  session_<n>, events``) and observation (``<sid>__obs_<n>``, ``… observation``) are one entry
  each, their JSON as the data (6,426 entries);
* each question of category 1-4 with an answer (1,540) is sent verbatim as ``similar`` with
  ``--limit 10``; it is a hit at K when one of its evidence entries is among the first K names.

It prints R@1/5/10 per category and for the two halves of the data (conversations 0-4, on which
the ranking was designed, and 5-9, which it was not), p50/p95 of ``similar``, ingest time and
the process's RSS. ``--scale N`` then adds N-1 renamed copies of the corpus (``<sid>#k``: 51k
entries at 8) and measures the latencies again. It prints no recall there: seven near-identical
copies of every right entry crowd the first ten, so the figure would measure the copies.
The embedder is the one the environment selects (``HYPATIA_LITE_EMBEDDER``, as a user gets it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from hypatia_lite import shelves
from hypatia_lite.protocol import EntryWrite
from hypatia_lite.store import LiteStore

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
HALF = 5  # conversations 0-4 are the design half


@dataclass(frozen=True, slots=True)
class Question:
    conversation: int
    text: str
    category: int
    evidence: frozenset[str]


def _json(value: Any) -> str:
    # serde_json's ``to_string`` of a map (sorted keys, no spaces, UTF-8 kept)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def load(path: Path, copy: int = 0) -> tuple[list[EntryWrite], list[Question]]:
    """The entries and questions of ``locomo10.json`` (``copy`` > 0: renamed ``<sid>#copy``)."""
    entries: list[EntryWrite] = []
    questions: list[Question] = []
    for number, conv in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        sid = conv["sample_id"] + (f"#{copy}" if copy else "")
        talk = conv["conversation"]
        a, b = talk["speaker_a"], talk["speaker_b"]
        sessions = sorted(int(k[8:]) for k in talk if k.startswith("session_") and k[8:].isdigit())
        for n in sessions:
            date = talk.get(f"session_{n}_date_time", "unknown date")
            for turn in talk[f"session_{n}"]:
                entries.append(
                    EntryWrite(
                        f"{sid}__{turn['dia_id'].replace(':', '_')}",
                        f"[{turn['speaker']}] {turn['text']}",
                        tags=(sid, f"session_{n}", turn["speaker"], a, b, date),
                    )
                )
            for kind, field, key in (
                ("events", "event_summary", f"events_session_{n}"),
                ("obs", "observation", f"session_{n}_observation"),
            ):
                value = conv.get(field, {}).get(key)
                if value is not None:
                    tag = "events" if kind == "events" else "observation"
                    entries.append(
                        EntryWrite(f"{sid}__{kind}_{n}", _json(value), (sid, f"session_{n}", tag))
                    )
        for qa in conv["qa"]:
            if qa["category"] == 5 or qa.get("answer") in (None, ""):
                continue
            evidence = frozenset(f"{sid}__{e.replace(':', '_')}" for e in qa.get("evidence", []))
            questions.append(Question(number, qa["question"], qa["category"], evidence))
    return entries, questions


def ingest(store: LiteStore, entries: list[EntryWrite], batch: int = 256) -> float:
    began = time.perf_counter()
    for i in range(0, len(entries), batch):
        store.write_batch(entries[i : i + batch])
    return time.perf_counter() - began


def measure(
    store: LiteStore, questions: list[Question], label: str, recall: bool = True
) -> dict[str, Any]:
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # R@1, R@5, R@10, count
    latencies: list[float] = []
    cpu: list[float] = []
    for q in questions:
        began, began_cpu = time.perf_counter(), time.process_time()
        rows = store.similar(q.text, limit=10)
        latencies.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
        names = [r.key for r in rows]
        groups = (
            "all",
            CATEGORIES[q.category],
            "half A (0-4)" if q.conversation < HALF else "half B (5-9)",
        )
        for group in groups:
            counts = hits[group]
            for slot, k in enumerate((1, 5, 10)):
                counts[slot] += any(n in q.evidence for n in names[:k])
            counts[3] += 1
    p50, p95 = percentiles(latencies)
    cpu50, cpu95 = percentiles(cpu)
    print(f"\n{label}: {len(questions)} questions")
    if recall:
        print(f"  {'group':<16}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'n':>7}")
    order = ["all", *CATEGORIES.values(), "half A (0-4)", "half B (5-9)"]
    for group in order if recall else ():
        r1, r5, r10, n = hits[group]
        if not n:
            continue
        print(
            f"  {group:<16}{100 * r1 / n:>7.1f}%{100 * r5 / n:>7.1f}%{100 * r10 / n:>7.1f}%{n:>7}"
        )
    print(f"  similar latency: p50 {p50:.1f} ms, p95 {p95:.1f} ms (wall clock)")
    print(f"  similar CPU time: p50 {cpu50:.1f} ms, p95 {cpu95:.1f} ms (all threads)")
    print(
        f"  load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"
    )
    return {"hits": dict(hits), "p50": p50, "p95": p95}


def percentiles(values: list[float]) -> tuple[float, float]:
    """(p50, p95) of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return psutil.Process().memory_info().rss / 2**20, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.json")
    parser.add_argument("--scale", type=int, default=1, help="copies of the corpus (8: 51k)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"recall_bench: no such file: {args.data}", file=sys.stderr)
        return 2
    entries, questions = load(args.data)
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as home:
        shelves.connect(Path(home), Path(home) / "locomo", "locomo")
        store = LiteStore("locomo", home=Path(home))
        if store.embedder is None:
            print("recall_bench: no embedder configured", file=sys.stderr)
            return 2
        print(f"embedder: {store.embedder.identity}")
        seconds = ingest(store, entries)
        now, peak = rss_mb()
        print(f"ingest: {len(entries)} entries in {seconds:.1f} s; RSS {now:.0f} MB")
        measure(store, questions, f"{len(entries)} entries")
        now, peak = rss_mb()
        print(f"  RSS after the queries: {now:.0f} MB (peak {peak:.0f} MB)")
        if args.scale > 1:
            more = 0.0
            total = len(entries)
            for copy in range(1, args.scale):
                extra, _ = load(args.data, copy)
                more += ingest(store, extra)
                total += len(extra)
            print(f"\ningest: {total - len(entries)} more entries in {more:.1f} s")
            measure(store, questions, f"{total} entries", recall=False)
            now, peak = rss_mb()
            print(f"  RSS after the queries: {now:.0f} MB (peak {peak:.0f} MB)")
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
