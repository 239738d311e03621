"""``sourceEventSeqs`` storage encoding (format doc §1.3): runs of three or more consecutive seqs
in a strictly increasing list are stored as ``[first, last]`` pairs."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence


class RangeError(ValueError):
    """A ``sourceEventSeqs`` value that is not a valid (range-encoded) seq list."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_seq_ranges(value: object, below: int | None = None) -> tuple[int, ...]:
    """Expand a stored ``sourceEventSeqs`` value (plain or range form) into seqs.

    ``[[5, 8], 12]`` → ``(5, 6, 7, 8, 12)``; a plain list passes through unchanged. Raises
    :class:`RangeError` for anything malformed: a non-list, a negative or non-integer element, a
    pair with ``first > last``, or a range-form list that does not expand strictly increasing.

    ``below`` is the seq of the row that carries the list: every cited seq is ``< seq`` (the
    format, §1.3), so the log holds nothing the row could cite at or after it. A citation
    reaching there is checked *before* anything is expanded — a ~70-byte ``[[0, 10^12]]`` never
    becomes a list — and raises :class:`CitesPastRow` carrying the citation cut to the seqs
    below the row (a marker still withdraws what it cites of the log; the rest is damage).
    """
    if not isinstance(value, list):
        raise RangeError(f"sourceEventSeqs must be a list, got {type(value).__name__}")
    past = False
    pieces: list[tuple[int, int]] = []
    ranged = False
    for item in value:
        if _is_int(item):
            first = last = item
        elif isinstance(item, list) and len(item) == 2 and _is_int(item[0]) and _is_int(item[1]):
            first, last = item[0], item[1]
            if first < 0 or first > last:
                raise RangeError(f"bad range [{first}, {last}] in sourceEventSeqs")
            ranged = True
        else:
            raise RangeError(f"bad element {item!r} in sourceEventSeqs")
        if first < 0:
            raise RangeError(f"negative seq {first} in sourceEventSeqs")
        if below is not None and last >= below:
            past = True
            last = below - 1
            if first > last:
                continue
        pieces.append((first, last))
    out: list[int] = []
    for first, last in pieces:
        out.extend(range(first, last + 1))
    if ranged and any(b <= a for a, b in itertools.pairwise(out)):
        raise RangeError("range-encoded sourceEventSeqs do not expand strictly increasing")
    if past:
        raise CitesPastRow(tuple(out))
    return tuple(out)


class CitesPastRow(RangeError):
    """A ``sourceEventSeqs`` list citing a seq at or after its own row; ``kept`` is the citation
    cut to the seqs before the row."""

    def __init__(self, kept: tuple[int, ...]) -> None:
        super().__init__("sourceEventSeqs cite seqs at or after the row itself (not in the log)")
        self.kept = kept


def encode_seq_ranges(seqs: Iterable[int]) -> list[int | list[int]]:
    """Store a seq list the way DSH writers do: compress runs of ≥ 3 only when the whole list is
    strictly increasing; otherwise return it verbatim."""
    values: Sequence[int] = list(seqs)
    if any(b <= a for a, b in itertools.pairwise(values)):
        return list(values)
    out: list[int | list[int]] = []
    i = 0
    n = len(values)
    while i < n:
        j = i
        while j + 1 < n and values[j + 1] == values[j] + 1:
            j += 1
        if j - i + 1 >= 3:
            out.append([values[i], values[j]])
        else:
            out.extend(values[i : j + 1])
        i = j + 1
    return out
