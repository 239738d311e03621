"""The order the suite's modules start in: the longest first, so that the last module a pytest-xdist
process picks up is a short one and both processes finish together (``--dist loadfile`` hands
out whole modules in collection order; xdist's own reordering, by test count, would put the
one-test modules that run for tens of seconds — a two-host cluster, a wheel install — last).

``tests/longest_first.txt`` lists the slowest modules, longest first; the others keep pytest's
order after them. The list only orders the run: a stale one costs minutes, never a result.
Write it again from a run's JUnit report when the slow modules change::

    .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --junitxml=/tmp/run.xml
    .venv/bin/python tests/support/longest_first.py /tmp/run.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

LIST = Path(__file__).resolve().parents[1] / "longest_first.txt"
#: Modules under this many seconds are left in pytest's order.
THRESHOLD_S = 3.0
_HEADER = "# the suite's slowest modules, longest first (tests/support/longest_first.py)\n"


def ranks() -> dict[str, int]:
    """Module path (``tests/…/test_x.py``) → its place in the list (0 runs first)."""
    try:
        lines = LIST.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    paths = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return {path: place for place, path in enumerate(paths)}


def module_seconds(junit: Path) -> Counter[str]:
    """Seconds per module path in a JUnit report written by pytest."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(junit).iter("testcase"):
        dotted = case.get("classname", "")
        parts = dotted.split(".")
        if parts and parts[-1][:1].isupper():  # a test class: the module is its parent
            parts = parts[:-1]
        seconds["/".join(parts) + ".py"] += float(case.get("time", 0))
    return seconds


def main() -> None:
    seconds = module_seconds(Path(sys.argv[1]))
    slow = [path for path, s in seconds.most_common() if s >= THRESHOLD_S]
    LIST.write_text(_HEADER + "".join(f"{path}\n" for path in slow), encoding="utf-8")
    print(f"wrote {len(slow)} modules to {LIST}", file=sys.stderr)


if __name__ == "__main__":
    main()
